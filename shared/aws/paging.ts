/**
 * Every page of a token-paged AWS call (EC2's NextToken, ELBv2's NextMarker, ...). Written out rather
 * than using the SDK's paginators: those reuse and mutate one input object for every page, so each
 * request as recorded is no longer what was sent. A repeated token ends the loop: AWS never sends
 * one, but a compatible endpoint might, and it must not spin forever.
 */
export async function allPages<T>(
  fetchPage: (token: string | undefined) => Promise<T>,
  nextToken: (page: T) => string | undefined,
): Promise<T[]> {
  const pages: T[] = [];
  let token: string | undefined;
  for (;;) {
    const page = await fetchPage(token);
    pages.push(page);
    const next = nextToken(page);
    if (!next || next === token) return pages;
    token = next;
  }
}

/** `values` in slices of at most `size`: AWS calls that take a bounded list (IDs, names, ARNs). */
export function chunks<T>(values: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

/** Each value once, first occurrence first: AWS refuses repeated IDs in some lists and charges for them in all. */
export function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
