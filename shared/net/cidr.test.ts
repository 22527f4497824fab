import { describe, expect, it } from 'vitest';
import { cidrContains, formatCidr, parseCidr, sameCidr, tryParseCidr } from './cidr.ts';

const cidr = (text: string) => {
  const result = parseCidr(text);
  if (!result.ok) throw new Error(result.error);
  return result.cidr;
};

describe('parseCidr / formatCidr', () => {
  it.each([
    ['10.244.0.0/16', '10.244.0.0/16'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['10.244.1.7/32', '10.244.1.7/32'],
    ['2001:db8::/32', '2001:db8::/32'],
    ['2001:0DB8:0000:0000:0000:0000:0000:0000/32', '2001:db8::/32'],
    ['fd00:10:244:1::/64', 'fd00:10:244:1::/64'],
    ['2001:db8:0:0:1:0:0:0/96', '2001:db8:0:0:1::/96'],
    ['2001:db8:0:0:1:0:0:1/128', '2001:db8::1:0:0:1/128'],
    ['::/0', '::/0'],
    ['::ffff:10.0.0.0/104', '::ffff:a00:0/104'],
    ['2001:db8:1:0:0:0:0:1/128', '2001:db8:1::1/128'],
  ])('%s reads back as %s', (text, canonical) => {
    expect(formatCidr(cidr(text))).toBe(canonical);
  });

  it.each([
    ['10.244.0.0', /not a CIDR block/],
    ['10.244.0/16', /not an IPv4 or IPv6 address/],
    ['10.244.0.0/33', /must be 0-32 for ipv4/],
    ['2001:db8::/129', /must be 0-128 for ipv6/],
    ['10.244.0.0/-1', /prefix length/],
    ['10.244.1.7/16', /host bits set \(did you mean 10\.244\.0\.0\/16\?\)/],
    ['2001:db8::1/64', /did you mean 2001:db8::\/64/],
    ['banana/8', /not an IPv4 or IPv6 address/],
  ])('refuses %s', (text, pattern) => {
    const result = parseCidr(text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(pattern);
    expect(tryParseCidr(text)).toBeUndefined();
  });
});

describe('cidrContains', () => {
  it.each([
    ['10.244.0.0/16', '10.244.3.0/24', true],
    ['10.244.0.0/16', '10.244.0.0/16', true],
    ['10.244.0.0/16', '10.245.0.0/24', false],
    ['10.244.0.0/16', '10.0.0.0/8', false],
    ['0.0.0.0/0', '192.168.1.0/24', true],
    ['fd00:10:244::/48', 'fd00:10:244:7::/64', true],
    ['fd00:10:244::/48', 'fd00:10:245::/64', false],
    ['10.244.0.0/16', 'fd00:10:244::/64', false],
  ])('%s contains %s: %s', (outer, inner, expected) => {
    expect(cidrContains(cidr(outer), cidr(inner))).toBe(expected);
  });

  it('compares blocks by value, not by spelling', () => {
    expect(sameCidr(cidr('2001:db8:0:0::/64'), cidr('2001:DB8::/64'))).toBe(true);
    expect(sameCidr(cidr('10.0.0.0/16'), cidr('10.0.0.0/17'))).toBe(false);
  });
});
