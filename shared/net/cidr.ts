import { isIPv4, isIPv6 } from 'node:net';

/**
 * IPv4 and IPv6 CIDR blocks as numbers, so that "is this route inside the cluster CIDR" and "is this the
 * same destination" never depend on how a string was written (EC2 and Kubernetes both print RFC 5952
 * compressed IPv6, but configuration written by hand need not).
 */
export type IpFamily = 'ipv4' | 'ipv6';

export interface Cidr {
  family: IpFamily;
  /** The network address, host bits zero. */
  network: bigint;
  prefix: number;
}

const WIDTH: Record<IpFamily, number> = { ipv4: 32, ipv6: 128 };

export type CidrParseResult = { ok: true; cidr: Cidr } | { ok: false; error: string };

/**
 * Parse `address/prefix`. Host bits must be zero: a block written `10.244.1.7/16` is almost certainly a
 * typo, and silently masking it would change which routes the controller believes are its own.
 */
export function parseCidr(text: string): CidrParseResult {
  const slash = text.indexOf('/');
  if (slash < 0) return { ok: false, error: `${JSON.stringify(text)} is not a CIDR block (address/prefix)` };
  const address = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  const family: IpFamily | undefined = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
  if (!family) return { ok: false, error: `${JSON.stringify(address)} is not an IPv4 or IPv6 address` };
  const width = WIDTH[family];
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > width) {
    return { ok: false, error: `prefix length ${JSON.stringify(prefixText)} must be 0-${width} for ${family}` };
  }
  const prefix = Number(prefixText);
  const value = family === 'ipv4' ? ipv4ToBigInt(address) : ipv6ToBigInt(address);
  const network = value & mask(width, prefix);
  if (network !== value) {
    const suggestion = formatCidr({ family, network, prefix });
    return { ok: false, error: `${text} has host bits set (did you mean ${suggestion}?)` };
  }
  return { ok: true, cidr: { family, network, prefix } };
}

/** Parse or return undefined: for values read from AWS or Kubernetes, where a bad one is skipped, not fatal. */
/** A CIDR from a setting the configuration already validated: one that does not parse is a bug, thrown naming the setting. */
export function validatedCidr(text: string, setting: string): Cidr {
  const result = parseCidr(text);
  if (!result.ok) throw new Error(`${setting}: ${result.error}`);
  return result.cidr;
}

export function tryParseCidr(text: string | undefined): Cidr | undefined {
  if (text === undefined) return undefined;
  const result = parseCidr(text);
  return result.ok ? result.cidr : undefined;
}

/** Canonical text: dotted quad for IPv4, RFC 5952 (lowercase, longest zero run compressed) for IPv6. */
export function formatCidr(cidr: Cidr): string {
  const address = cidr.family === 'ipv4' ? formatIpv4(cidr.network) : formatIpv6(cidr.network);
  return `${address}/${cidr.prefix}`;
}

/** Whether `inner` lies entirely inside `outer` (equal blocks included). Different families never nest. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefix < outer.prefix) return false;
  return (inner.network & mask(WIDTH[outer.family], outer.prefix)) === outer.network;
}

export function sameCidr(a: Cidr, b: Cidr): boolean {
  return a.family === b.family && a.prefix === b.prefix && a.network === b.network;
}

function mask(width: number, prefix: number): bigint {
  const all = (1n << BigInt(width)) - 1n;
  return prefix === 0 ? 0n : all ^ ((1n << BigInt(width - prefix)) - 1n);
}

function ipv4ToBigInt(address: string): bigint {
  return address.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
}

/** `isIPv6` has already accepted the text, so only the shapes it allows need handling (incl. `::ffff:1.2.3.4`). */
function ipv6ToBigInt(address: string): bigint {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = ipv4ToBigInt(tail);
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const groups =
    rest === undefined
      ? headGroups
      : [...headGroups, ...Array<string>(8 - headGroups.length - restGroups.length).fill('0'), ...restGroups];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function formatIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

function formatIpv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  // RFC 5952 4.2: compress the longest run of two or more zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
