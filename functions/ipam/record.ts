import * as z from '../../shared/zod.ts';

/**
 * The pool's journal, an annotation on the Node (`POOL_ANNOTATION`), written with a guard on the Node's
 * resourceVersion by the one pass its queue key allows at a time. EC2 knows which addresses the Node's interface
 * has and the Pods' annotations say which one each Pod holds; the journal keeps what neither can say, and a copy
 * of the interface's addresses so that a Pod served from the warm pool costs no EC2 call:
 * - `addresses`, `prefixes`: the interface's secondary addresses and /28 prefixes as last seen in EC2 (`verifiedAt`)
 *   plus what this controller assigned or released since; `eni`, `slots` and `prefixLength` are the interface, how
 *   many addresses or prefixes it may hold, and its subnet's prefix length (for the Pod annotation); `nitro`: the
 *   instance type takes prefixes (DescribeInstanceTypes: Nitro hypervisor, or bare metal); `primary`: the
 *   interface's primary address, which is the Node's and never a Pod's;
 * - `assigned`: address -> Pod uid, written BEFORE the Pod is annotated, so a pass that dies in between hands the
 *   same address to the same Pod next time, and an address whose Pod is gone is seen as released;
 * - `cooling`: address -> when it was released (epoch seconds): not handed out before the cooldown ends;
 * - `fresh`: address or prefix -> when EC2 gave it, until DescribeNetworkInterfaces shows it (EC2 is eventually
 *   consistent: a read right after the assign may not);
 * - `releasing`: address or prefix -> when it was given back, until DescribeNetworkInterfaces stops showing it
 *   (never handed out meanwhile; released again if it is still there after a while).
 * A missing or unreadable journal is rebuilt from EC2 and the Pods, conservatively: every address no Pod holds
 * starts cooling.
 */
export const POOL_ANNOTATION = 'serverless-ccm/ipam-pool';

const count = () => z.int().check(z.nonnegative());
const Times = z.record(z.string(), count());
const PoolRecordSchema = z.object({
  eni: z.optional(z.string()),
  slots: z.optional(count()),
  nitro: z.optional(z.boolean()),
  primary: z.optional(z.string()),
  prefixLength: z.optional(z.int().check(z.minimum(0), z.maximum(32))),
  verifiedAt: z.optional(count()),
  addresses: z._default(z.array(z.string()), []),
  prefixes: z._default(z.array(z.string()), []),
  assigned: z._default(z.record(z.string(), z.string()), {}),
  cooling: z._default(Times, {}),
  fresh: z._default(Times, {}),
  releasing: z._default(Times, {}),
});
export type PoolRecord = z.output<typeof PoolRecordSchema>;

export function emptyRecord(): PoolRecord {
  return { addresses: [], prefixes: [], assigned: {}, cooling: {}, fresh: {}, releasing: {} };
}

/** undefined when the annotation is absent or not a journal (the caller rebuilds). */
export function readRecord(annotations: Readonly<Record<string, string>> | undefined): PoolRecord | undefined {
  const text = annotations?.[POOL_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    const parsed = PoolRecordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Lists and keys sorted, so an unchanged journal serializes to the same text and costs no write. */
export function writeRecord(record: PoolRecord): string {
  const sorted = <T>(m: Record<string, T>) =>
    Object.fromEntries(Object.entries(m).sort(([a], [b]) => compareAddresses(a, b)));
  return JSON.stringify({
    eni: record.eni,
    slots: record.slots,
    nitro: record.nitro,
    primary: record.primary,
    prefixLength: record.prefixLength,
    verifiedAt: record.verifiedAt,
    addresses: [...record.addresses].sort(compareAddresses),
    prefixes: [...record.prefixes].sort(compareAddresses),
    assigned: sorted(record.assigned),
    cooling: sorted(record.cooling),
    fresh: sorted(record.fresh),
    releasing: sorted(record.releasing),
  });
}

/** Numeric order of dotted IPv4 addresses (a `/len` suffix sorts after the address). */
export function compareAddresses(a: string, b: string): number {
  const key = (s: string) => {
    const [ip = '', len = '32'] = s.split('/');
    return [...ip.split('.').map(Number), Number(len)];
  };
  const ka = key(a);
  const kb = key(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return (ka[i] ?? 0) - (kb[i] ?? 0);
  return 0;
}

/** The 16 addresses of a /28 prefix (`10.0.1.16/28`). */
export function prefixAddresses(prefix: string): string[] {
  const [ip = '', len = '28'] = prefix.split('/');
  const octets = ip.split('.').map(Number);
  const base = ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
  const size = 2 ** (32 - Number(len));
  return Array.from({ length: size }, (_, i) => {
    const n = base + i;
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  });
}
