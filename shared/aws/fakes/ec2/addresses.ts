/**
 * IPv4 arithmetic of the fake's subnets: which addresses and /28 prefixes EC2 could hand out. Addresses are
 * numbers here (10.0.1.4 is 0x0a000104) so that ranges compare and count simply.
 */

export function ipv4ToNumber(ip: string): number {
  const octets = ip.split('.').map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) {
    throw new Error(`not an IPv4 address: ${ip}`);
  }
  return octets.reduce((n, o) => n * 256 + o, 0);
}

export function numberToIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

/** An IPv4 CIDR block as its first address and its number of addresses. */
export function parseCidr(cidr: string): { base: number; size: number } {
  const [ip, bits] = cidr.split('/');
  const length = Number(bits);
  if (!ip || !Number.isInteger(length) || length < 0 || length > 32) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const size = 2 ** (32 - length);
  return { base: ipv4ToNumber(ip) - (ipv4ToNumber(ip) % size), size };
}

/** The addresses of a CIDR block (a prefix `10.0.1.16/28` holds 16). */
export function addressesOf(cidr: string): number[] {
  const { base, size } = parseCidr(cidr);
  return Array.from({ length: size }, (_, i) => base + i);
}

/**
 * EC2 keeps five addresses of every subnet for itself: the first four (network, VPC router, DNS, future use) and
 * the last. https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
 */
export function reservedBySubnet(subnetCidr: string): Set<number> {
  const { base, size } = parseCidr(subnetCidr);
  return new Set([base, base + 1, base + 2, base + 3, base + size - 1]);
}

/** The `count` lowest addresses of the subnet that are neither reserved nor `used`; undefined when fewer are left. */
export function freeAddresses(subnetCidr: string, used: ReadonlySet<number>, count: number): string[] | undefined {
  const reserved = reservedBySubnet(subnetCidr);
  const found: string[] = [];
  for (const n of addressesOf(subnetCidr)) {
    if (found.length === count) break;
    if (!reserved.has(n) && !used.has(n)) found.push(numberToIpv4(n));
  }
  return found.length === count ? found : undefined;
}

/**
 * The `count` lowest /28 prefixes of the subnet (aligned on 16 addresses) of which no address is reserved or
 * `used`: EC2 delegates only whole free blocks.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-prefix-eni.html
 */
export function freePrefixes(subnetCidr: string, used: ReadonlySet<number>, count: number): string[] | undefined {
  const { base, size } = parseCidr(subnetCidr);
  const reserved = reservedBySubnet(subnetCidr);
  const found: string[] = [];
  for (let start = base; start + 16 <= base + size && found.length < count; start += 16) {
    const block = Array.from({ length: 16 }, (_, i) => start + i);
    if (block.every((n) => !reserved.has(n) && !used.has(n))) found.push(`${numberToIpv4(start)}/28`);
  }
  return found.length === count ? found : undefined;
}
