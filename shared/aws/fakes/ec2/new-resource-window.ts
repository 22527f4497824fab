/**
 * Resources a fake account has just created and the rest of its API does not know yet. EC2 (and ELBv2) are
 * eventually consistent: a command naming a resource created a moment ago may answer that it does not exist.
 * https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html
 * A resource is hidden until `ms` of the fake's clock have passed since its creation, or until `calls` lookups
 * have missed it, whichever comes first; a window of 0 is no limit, and both 0 never hides it.
 */
export class NewResourceWindow {
  private readonly hidden = new Map<string, { until: number; lookupsLeft: number }>();

  constructor(private readonly now: () => number) {}

  start(id: string, ms: number, calls: number): void {
    if (ms <= 0 && calls <= 0) return;
    this.hidden.set(id, {
      until: ms > 0 ? this.now() + ms : Number.POSITIVE_INFINITY,
      lookupsLeft: calls > 0 ? calls : Number.POSITIVE_INFINITY,
    });
  }

  /** Whether a lookup of `id` misses it now; a miss uses up one of its `calls`. */
  hides(id: string): boolean {
    const entry = this.hidden.get(id);
    if (!entry) return false;
    if (this.now() >= entry.until || entry.lookupsLeft <= 0) {
      this.hidden.delete(id);
      return false;
    }
    entry.lookupsLeft--;
    return true;
  }

  forget(id: string): void {
    this.hidden.delete(id);
  }

  clear(): void {
    this.hidden.clear();
  }
}
