import * as z from '../zod.ts';

/**
 * A comma-separated setting (`a, b,c`) as a list of `item`s: blanks around entries and empty entries ignored; with
 * `atLeastOne`, an empty list is refused with that message.
 */
export function csv<T extends z.core.$ZodType<unknown, string>>(item: T, atLeastOne?: string) {
  const list = z.array(item);
  return z.pipe(
    z.pipe(
      z.string(),
      z.transform((s: string) =>
        s
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean),
      ),
    ),
    atLeastOne ? list.check(z.minLength(1, atLeastOne)) : list,
  );
}
