/**
 * AWS APIs state tags (and ELBv2 attributes) as lists of `{ Key, Value }`; the ports use maps. One conversion
 * each way for every adapter.
 */
export interface KeyValue {
  Key?: string | undefined;
  Value?: string | undefined;
}

/** A map as AWS's `[{ Key, Value }]`. */
export function toKeyValues(entries: Readonly<Record<string, string>>): { Key: string; Value: string }[] {
  return Object.entries(entries).map(([Key, Value]) => ({ Key, Value }));
}

/** AWS's `[{ Key, Value }]` as a map; entries without a key are dropped, a missing value is empty. */
export function fromKeyValues(list: readonly KeyValue[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of list ?? []) if (entry.Key !== undefined) out[entry.Key] = entry.Value ?? '';
  return out;
}
