import { describe, expect, it } from 'vitest';
import type { Ingress } from '../../../shared/k8s/ingress-types.ts';
import { LB_ANNOTATION, parseMemberSettings } from './annotations.ts';
import { CertificateDiscovery, coversHost, discover, hostsOf } from './certificates.ts';

describe('coversHost', () => {
  it.each([
    ['shop.example.com', 'shop.example.com', true],
    ['Shop.Example.com', 'shop.example.COM', true],
    ['*.example.com', 'shop.example.com', true],
    ['*.example.com', 'example.com', false],
    ['*.example.com', 'a.shop.example.com', false],
    ['*.example.com', 'shopexample.com', false],
    ['*.shop.example.com', 'a.shop.example.com', true],
    ['example.com', 'shop.example.com', false],
    ['*.example.com', '*.example.com', true],
  ])('%s covers %s: %s', (name, host, covers) => {
    expect(coversHost(name, host)).toBe(covers);
  });
});

const CERTS = [
  { arn: 'arn:aws:acm:eu-west-1:1:certificate/wild', names: ['*.example.com', 'example.com'] },
  { arn: 'arn:aws:acm:eu-west-1:1:certificate/shop', names: ['shop.example.com'] },
  { arn: 'arn:aws:acm:eu-west-1:1:certificate/other', names: ['other.org'] },
];

describe('discover', () => {
  it('attaches every certificate that covers a host, sorted', () => {
    expect(discover(['shop.example.com', 'example.com'], CERTS)).toEqual({
      arns: ['arn:aws:acm:eu-west-1:1:certificate/shop', 'arn:aws:acm:eu-west-1:1:certificate/wild'],
      problems: [],
    });
  });

  it('a problem for each host none covers', () => {
    expect(discover(['a.b.example.com', 'other.org', 'nope.net'], CERTS)).toEqual({
      arns: ['arn:aws:acm:eu-west-1:1:certificate/other'],
      problems: [
        { at: LB_ANNOTATION.certificateArn, message: 'no certificate found for host: a.b.example.com' },
        { at: LB_ANNOTATION.certificateArn, message: 'no certificate found for host: nope.net' },
      ],
    });
  });
});

const ingress = (annotations: Record<string, string>, hosts: string[] = ['shop.example.com']): Ingress => ({
  metadata: { namespace: 'shop', name: 'web', annotations },
  spec: { rules: hosts.map((host) => ({ host })), tls: [{ hosts: ['tls.example.com'] }] },
});

describe('CertificateDiscovery', () => {
  const setup = () => {
    let reads = 0;
    const discovery = new CertificateDiscovery({
      certificates: async () => {
        reads++;
        return [...CERTS, { arn: 'arn:aws:acm:eu-west-1:1:certificate/tls', names: ['tls.example.com'] }];
      },
    });
    return { discovery, reads: () => reads };
  };
  const settingsOf = (ing: Ingress) => parseMemberSettings(ing, undefined, { externalManagedTags: [] }).settings;

  it('given certificates are used as they are, without reading ACM', async () => {
    const { discovery, reads } = setup();
    const ing = ingress({ [LB_ANNOTATION.certificateArn]: 'arn:a,arn:b,arn:a' });
    expect(await discovery.forMember(ing, settingsOf(ing))).toEqual({ arns: ['arn:a', 'arn:b'], problems: [] });
    expect(reads()).toBe(0);
  });

  it('no HTTPS port: nothing, without reading ACM', async () => {
    const { discovery, reads } = setup();
    const ing = ingress({});
    expect(await discovery.forMember(ing, settingsOf(ing))).toEqual({ arns: [], problems: [] });
    expect(reads()).toBe(0);
  });

  it('HTTPS: discovered from rule and TLS hosts, ACM read once for the whole group', async () => {
    const { discovery, reads } = setup();
    const ing = ingress({ [LB_ANNOTATION.listenPorts]: '[{"HTTPS": 443}]' });
    const found = await discovery.forMember(ing, settingsOf(ing));
    expect(found.arns).toEqual([
      'arn:aws:acm:eu-west-1:1:certificate/shop',
      'arn:aws:acm:eu-west-1:1:certificate/tls',
      'arn:aws:acm:eu-west-1:1:certificate/wild',
    ]);
    await discovery.forMember(ing, settingsOf(ing));
    expect(reads()).toBe(1);
  });

  it('HTTPS: a host without a certificate is a problem', async () => {
    const { discovery } = setup();
    const ing = ingress({ [LB_ANNOTATION.listenPorts]: '[{"HTTPS": 443}]' }, ['shop.example.net']);
    expect((await discovery.forMember(ing, settingsOf(ing))).problems).toEqual([
      { at: LB_ANNOTATION.certificateArn, message: 'no certificate found for host: shop.example.net' },
    ]);
  });

  it('hostsOf: rules and TLS hosts, deduplicated and sorted', () => {
    expect(hostsOf(ingress({}, ['b.example.com', 'a.example.com', 'b.example.com']), ['c.example.com'])).toEqual([
      'a.example.com',
      'b.example.com',
      'c.example.com',
      'tls.example.com',
    ]);
  });
});
