/**
 * A fingerprint is what the relay keeps per object and reconciler instead of the object: a 53-bit
 * number hashed from the fields that reconciler reads. Two fingerprints of one object are compared
 * to decide whether a change matters, so the hash only has to tell two revisions of the same object
 * apart; a collision (2^-53 per comparison) would hide one change until the next one or the resync.
 *
 * Not a cryptographic hash: it is computed for every watch event (tens of thousands a second at
 * scale), and nobody gains anything from forging one.
 */

/** `0` means "none of this reconciler's business"; real fingerprints are never 0. */
export const NOT_RELEVANT = 0;

const TWO_POW_21 = 2 ** 21;

/** Hash the JSON of `fields` (undefined: not relevant). Arrays keep their order; callers sort what has none. */
export function fingerprint(fields: unknown[] | undefined): number {
  if (fields === undefined) return NOT_RELEVANT;
  return hashString(JSON.stringify(fields));
}

/** Two independent 32-bit mixes of the UTF-16 code units (FNV-1a and a multiply-xorshift), joined into 53 bits. */
export function hashString(text: string): number {
  let fnv = 0x811c9dc5;
  let mix = 0x9e3779b9 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    fnv = Math.imul(fnv ^ unit, 0x01000193);
    mix = Math.imul(mix ^ unit, 0x5bd1e995);
    mix ^= mix >>> 15;
  }
  mix = Math.imul(mix ^ (mix >>> 13), 0xc2b2ae35);
  mix ^= mix >>> 16;
  const value = (fnv >>> 0) * TWO_POW_21 + ((mix >>> 0) >>> 11);
  return value === NOT_RELEVANT ? 1 : value;
}

/** Map entries in key order: label and annotation maps have no order of their own. */
export function sortedEntries(map: Record<string, string> | undefined, keep?: (key: string) => boolean): string[] {
  if (!map) return [];
  const out: string[] = [];
  for (const key of Object.keys(map).sort()) if (!keep || keep(key)) out.push(`${key}=${map[key]}`);
  return out;
}
