import { describe, expect, it } from 'vitest';
import { makeNode } from '../../test/helpers/nodes.ts';
import type { Instance } from '../aws/ec2-port.ts';
import { makeInstance } from '../aws/fakes/ec2/fake-ec2.ts';
import type { NodeAddress } from '../k8s/types.ts';
import { addressesEqual, desiredAddresses, instanceAddresses } from './addresses.ts';

const twoEnis = (): Instance =>
  makeInstance({
    index: 10,
    publicIpAddress: '52.1.2.3',
    publicDnsName: 'ec2-52-1-2-3.eu-west-1.compute.amazonaws.com',
    networkInterfaces: [
      {
        networkInterfaceId: 'eni-b',
        deviceIndex: 1,
        status: 'in-use',
        privateIpAddresses: [{ address: '10.0.1.20', primary: true }],
        ipv6Addresses: ['2001:db8::b1', '2001:db8::b2'],
      },
      {
        networkInterfaceId: 'eni-detached',
        deviceIndex: 2,
        status: 'available',
        privateIpAddresses: [{ address: '10.0.9.9', primary: true }],
        ipv6Addresses: ['2001:db8::99'],
      },
      {
        networkInterfaceId: 'eni-a',
        deviceIndex: 0,
        status: 'in-use',
        privateIpAddresses: [
          { address: '10.0.0.14', primary: true },
          { address: '10.0.0.15', primary: false },
        ],
        ipv6Addresses: ['2001:db8::a1'],
      },
    ],
  });

const dns = 'ip-10-0-0-14.eu-west-1.compute.internal';

describe('instanceAddresses', () => {
  it.each([
    {
      families: ['ipv4'] as const,
      want: [
        ['InternalIP', '10.0.0.14'],
        ['InternalIP', '10.0.0.15'],
        ['InternalIP', '10.0.1.20'],
        ['ExternalIP', '52.1.2.3'],
        ['InternalDNS', dns],
        ['Hostname', dns],
        ['ExternalDNS', 'ec2-52-1-2-3.eu-west-1.compute.amazonaws.com'],
      ],
    },
    {
      families: ['ipv6'] as const,
      want: [
        ['InternalIP', '2001:db8::a1'],
        ['InternalIP', '2001:db8::b1'],
        ['InternalDNS', dns],
        ['Hostname', dns],
        ['ExternalDNS', 'ec2-52-1-2-3.eu-west-1.compute.amazonaws.com'],
      ],
    },
    {
      families: ['ipv6', 'ipv4'] as const,
      want: [
        ['InternalIP', '2001:db8::a1'],
        ['InternalIP', '2001:db8::b1'],
        ['InternalIP', '10.0.0.14'],
        ['InternalIP', '10.0.0.15'],
        ['InternalIP', '10.0.1.20'],
        ['ExternalIP', '52.1.2.3'],
        ['InternalDNS', dns],
        ['Hostname', dns],
        ['ExternalDNS', 'ec2-52-1-2-3.eu-west-1.compute.amazonaws.com'],
      ],
    },
  ])('$families: ENIs by device index, in-use only, exact order and types', ({ families, want }) => {
    const instance = { ...twoEnis(), privateDnsName: dns };
    expect(instanceAddresses(instance, families).map((a) => [a.type, a.address])).toEqual(want);
  });

  it('gives no DNS or external entries when the instance has none', () => {
    const instance = makeInstance({ index: 3, privateDnsName: undefined, publicIpAddress: undefined });
    expect(instanceAddresses(instance, ['ipv4'])).toEqual([{ type: 'InternalIP', address: '10.0.0.7' }]);
  });
});

describe('desiredAddresses', () => {
  const cloud: NodeAddress[] = [
    { type: 'InternalIP', address: '10.0.0.14' },
    { type: 'InternalIP', address: '10.0.0.15' },
    { type: 'ExternalIP', address: '52.1.2.3' },
    { type: 'InternalDNS', address: dns },
    { type: 'Hostname', address: dns },
  ];

  it.each([
    { name: 'no annotation: cloud addresses as they are', provided: undefined, want: cloud },
    {
      name: 'provided IP matches a secondary address: it comes first, other InternalIPs dropped',
      provided: '10.0.0.15',
      want: [cloud[1], cloud[2], cloud[3], cloud[4]],
    },
    {
      name: 'provided IP matches the public address',
      provided: '52.1.2.3',
      want: [cloud[2], cloud[0], cloud[1], cloud[3], cloud[4]],
    },
  ])('$name', ({ provided, want }) => {
    const node = makeNode('n', { annotations: provided ? { 'alpha.kubernetes.io/provided-node-ip': provided } : {} });
    expect(desiredAddresses(node, cloud)).toEqual({ ok: true, addresses: want });
  });

  it.each([
    { provided: '10.9.9.9', reason: 'ProvidedNodeIPNotFound' },
    { provided: 'not-an-ip', reason: 'InvalidProvidedNodeIP' },
  ])('refuses provided-node-ip $provided ($reason)', ({ provided, reason }) => {
    const node = makeNode('n', { annotations: { 'alpha.kubernetes.io/provided-node-ip': provided } });
    const result = desiredAddresses(node, cloud);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toBe(reason);
      expect(result.message).toContain(provided);
    }
  });

  it('matches IPv6 written differently', () => {
    const node = makeNode('n', { annotations: { 'alpha.kubernetes.io/provided-node-ip': '2001:0db8:0:0::a1' } });
    const v6: NodeAddress[] = [{ type: 'InternalIP', address: '2001:db8::a1' }];
    const result = desiredAddresses(node, v6);
    expect(result.ok && result.addresses[0]).toEqual({ type: 'InternalIP', address: '2001:db8::a1' });
  });

  it("keeps kubelet's Hostname when the cloud gives none", () => {
    const node = makeNode('custom-host', { addresses: [{ type: 'Hostname', address: 'custom-host' }] });
    const result = desiredAddresses(node, [{ type: 'InternalIP', address: '10.0.0.14' }]);
    expect(result).toEqual({
      ok: true,
      addresses: [
        { type: 'InternalIP', address: '10.0.0.14' },
        { type: 'Hostname', address: 'custom-host' },
      ],
    });
  });
});

describe('addressesEqual', () => {
  it.each([
    [[], [], true],
    [[{ type: 'InternalIP', address: '1.1.1.1' }], [{ type: 'InternalIP', address: '1.1.1.1' }], true],
    [[{ type: 'InternalIP', address: '1.1.1.1' }], [{ type: 'ExternalIP', address: '1.1.1.1' }], false],
    [
      [
        { type: 'InternalIP', address: '1.1.1.1' },
        { type: 'InternalIP', address: '2.2.2.2' },
      ],
      [
        { type: 'InternalIP', address: '2.2.2.2' },
        { type: 'InternalIP', address: '1.1.1.1' },
      ],
      false,
    ],
  ] as [NodeAddress[], NodeAddress[], boolean][])('%j vs %j -> %s', (a, b, want) => {
    expect(addressesEqual(a, b)).toBe(want);
  });
});
