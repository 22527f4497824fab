import * as z from 'zod';

/**
 * A comma-separated setting (`a, b,c`) as a list of `item`s: blanks around entries and empty entries ignored; with
 * `atLeastOne`, an empty list is refused with that message.
 */
export function csv<T extends z.ZodType<unknown, string>>(item: T, atLeastOne?: string) {
  const list = z.array(item);
  return z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    )
    .pipe(atLeastOne ? list.min(1, atLeastOne) : list);
}
