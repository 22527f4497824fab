import { errorMessage, RetryableError, TerminalError, ThrottledError } from '../../shared/errors.ts';

/** What a pass ran into, so that one failing Node neither stops the others nor goes unretried. */
export class PassOutcome {
  throttled: ThrottledError | undefined;
  readonly retryable: string[] = [];
  readonly terminal: string[] = [];

  record(err: unknown, what: string): void {
    if (err instanceof ThrottledError) this.throttled ??= err;
    else if (err instanceof TerminalError) this.terminal.push(`${what}: ${err.message}`);
    else this.retryable.push(`${what}: ${errorMessage(err)}`);
  }

  /** Throttling stops the pass (more calls would only be throttled too); everything else runs to the end. */
  get stopped(): boolean {
    return this.throttled !== undefined;
  }

  /** Throttled > retryable > terminal: the key comes back as soon as anything in it is worth retrying. */
  conclude(table: string): void {
    if (this.throttled) throw new ThrottledError(`reconciling routes in ${table}: ${this.throttled.message}`);
    const summary = (list: string[]) =>
      `${list.slice(0, 3).join('; ')}${list.length > 3 ? `; +${list.length - 3} more` : ''}`;
    if (this.retryable.length > 0) {
      throw new RetryableError(
        `reconciling routes in ${table}: ${this.retryable.length} failed: ${summary(this.retryable)}`,
      );
    }
    if (this.terminal.length > 0) {
      throw new TerminalError(
        `reconciling routes in ${table}: ${this.terminal.length} failed: ${summary(this.terminal)}`,
      );
    }
  }
}

/** Run `fn` over `items`, at most `limit` at once; once throttled, start no more (the key comes back later). */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  outcome: PassOutcome,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !outcome.stopped) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
