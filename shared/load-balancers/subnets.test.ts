import { describe, expect, it } from 'vitest';
import type { RouteTable, Subnet } from '../aws/ec2-port.ts';
import { makeRouteTable, makeSubnet } from '../aws/fakes/ec2/fake-ec2.ts';
import { chooseSubnets, isPublicSubnet, planSubnets, subnetMappings } from './subnets.ts';

describe('subnets', () => {
  const subnet = (index: number, zone: string, tags: Record<string, string> = {}): Subnet =>
    makeSubnet({ index, zone, tags });
  const publicTable: RouteTable = {
    routeTableId: 'rtb-pub',
    tags: {},
    routes: [
      {
        destination: '0.0.0.0/0',
        destinationType: 'ipv4',
        target: { gatewayId: 'igw-1' },
        state: 'active',
        origin: 'CreateRoute',
      },
    ],
    associations: [1, 2, 3, 4, 5, 7, 8].map((i) => ({ subnetId: subnet(i, 'x').subnetId, main: false })),
  };
  const mainTable: RouteTable = {
    routeTableId: 'rtb-main',
    tags: {},
    routes: [
      {
        destination: '0.0.0.0/0',
        destinationType: 'ipv4',
        target: { natGatewayId: 'nat-1' },
        state: 'active',
        origin: 'CreateRoute',
      },
    ],
    associations: [{ main: true }],
  };
  const zones = [
    { zoneName: 'eu-west-1a', zoneId: 'a' },
    { zoneName: 'eu-west-1b', zoneId: 'b' },
    { zoneName: 'eu-west-1-lax-1a', zoneId: 'l', zoneType: 'local-zone' },
  ];
  const subnets = [
    subnet(1, 'eu-west-1a'),
    subnet(2, 'eu-west-1a', { 'kubernetes.io/role/elb': '1' }),
    subnet(3, 'eu-west-1b', { 'kubernetes.io/cluster/prod': 'shared' }),
    subnet(4, 'eu-west-1b'),
    subnet(5, 'eu-west-1b', { 'kubernetes.io/cluster/other': 'owned', 'kubernetes.io/role/elb': '1' }),
    subnet(6, 'eu-west-1a', { 'kubernetes.io/role/internal-elb': '1' }),
    subnet(7, 'eu-west-1-lax-1a', { 'kubernetes.io/role/elb': '1' }),
    subnet(8, 'eu-west-1c'),
  ];

  it('tells public from private subnets by their route table (explicit, else main)', () => {
    expect(isPublicSubnet(subnet(1, 'x').subnetId, [publicTable, mainTable])).toBe(true);
    expect(isPublicSubnet(subnet(6, 'x').subnetId, [publicTable, mainTable])).toBe(false);
    expect(isPublicSubnet('subnet-unknown', [makeRouteTable() as unknown as RouteTable])).toBe(false);
  });

  it('internet-facing: public subnets, one per zone: role tag, then cluster tag, then lowest ID; no local zones, no other cluster', () => {
    const choice = chooseSubnets({
      scheme: 'internet-facing',
      clusterName: 'prod',
      subnets,
      routeTables: [publicTable, mainTable],
      zones,
    });
    expect(choice.ok && choice.subnets.map((s) => s.subnetId)).toEqual([
      subnet(2, 'x').subnetId,
      subnet(3, 'x').subnetId,
      subnet(8, 'x').subnetId,
    ]);
  });

  it('internal: any subnet, the internal-elb role tag first', () => {
    const choice = chooseSubnets({ scheme: 'internal', clusterName: 'prod', subnets, routeTables: [], zones });
    expect(choice.ok && choice.subnets.map((s) => s.subnetId)).toEqual([
      subnet(6, 'x').subnetId,
      subnet(3, 'x').subnetId,
      subnet(8, 'x').subnetId,
    ]);
  });

  it('the annotation names subnets by ID or Name tag', () => {
    const named = [...subnets, subnet(9, 'eu-west-1c', { Name: 'edge-c' })];
    const choice = chooseSubnets({
      scheme: 'internet-facing',
      clusterName: 'prod',
      subnets: named,
      routeTables: [],
      zones,
      requested: ['edge-c', subnet(1, 'x').subnetId],
    });
    expect(choice.ok && choice.subnets.map((s) => s.subnetId)).toEqual([
      subnet(9, 'x').subnetId,
      subnet(1, 'x').subnetId,
    ]);
  });

  it.each([
    [['nope'], /no subnet "nope" in the VPC/],
    [[subnet(1, 'x').subnetId, subnet(2, 'x').subnetId], /two subnets in one availability zone/],
  ])('refuses the annotation %j', (requested, pattern) => {
    const choice = chooseSubnets({
      scheme: 'internal',
      clusterName: 'prod',
      subnets,
      routeTables: [],
      zones,
      requested,
    });
    expect(choice.ok).toBe(false);
    if (!choice.ok) expect(`${choice.problem.annotation}: ${choice.problem.message}`).toMatch(pattern);
  });

  it('no public subnet: says what to tag', () => {
    const choice = chooseSubnets({
      scheme: 'internet-facing',
      clusterName: 'prod',
      subnets,
      routeTables: [mainTable],
      zones,
    });
    expect(!choice.ok && choice.problem.message).toMatch(
      /tag subnets kubernetes.io\/role\/elb=1 and kubernetes.io\/cluster\/prod=shared/,
    );
  });

  it('maps Elastic IPs in order and private addresses to the subnet that contains them', () => {
    const chosen = [subnet(1, 'a'), subnet(2, 'b')];
    expect(subnetMappings(chosen, { eipAllocations: ['eipalloc-1', 'eipalloc-2'] })).toEqual({
      ok: true,
      mappings: [
        { subnetId: chosen[0]!.subnetId, allocationId: 'eipalloc-1' },
        { subnetId: chosen[1]!.subnetId, allocationId: 'eipalloc-2' },
      ],
    });
    expect(subnetMappings(chosen, { privateIpv4Addresses: ['10.0.2.10', '10.0.1.10'] })).toEqual({
      ok: true,
      mappings: [
        { subnetId: chosen[0]!.subnetId, privateIPv4Address: '10.0.1.10' },
        { subnetId: chosen[1]!.subnetId, privateIPv4Address: '10.0.2.10' },
      ],
    });
    expect(subnetMappings(chosen, { eipAllocations: ['eipalloc-1'] })).toMatchObject({
      ok: false,
      problem: { message: /1 allocations for 2 subnets/ },
    });
    expect(subnetMappings(chosen, { privateIpv4Addresses: ['10.0.1.10', '10.0.9.10'] })).toMatchObject({
      ok: false,
      problem: { message: /exactly one address inside subnet/ },
    });
  });
});

describe('planSubnets', () => {
  const zones: Record<string, string> = {
    'subnet-a1': 'eu-west-1a',
    'subnet-a2': 'eu-west-1a',
    'subnet-b1': 'eu-west-1b',
    'subnet-c1': 'eu-west-1c',
  };
  const zoneOf = (id: string) => zones[id];
  const at = (subnetId: string, extra: { allocationId?: string; privateIPv4Address?: string } = {}) => ({
    subnetId,
    zoneName: zones[subnetId],
    ...extra,
  });

  it('nothing to do when every zone has its subnet and named addresses; AWS-assigned addresses are kept', () => {
    const current = [at('subnet-a1', { privateIPv4Address: '10.0.1.9' }), at('subnet-b1')];
    expect(planSubnets(current, [{ subnetId: 'subnet-a1' }, { subnetId: 'subnet-b1' }], zoneOf)).toEqual({
      action: 'none',
    });
  });

  it('zones added or removed: one SetSubnets with the staying zones exactly as they are', () => {
    const current = [at('subnet-a1', { allocationId: 'eipalloc-1' }), at('subnet-b1')];
    expect(planSubnets(current, [{ subnetId: 'subnet-a1' }, { subnetId: 'subnet-c1' }], zoneOf)).toEqual({
      action: 'set',
      mappings: [{ subnetId: 'subnet-a1', allocationId: 'eipalloc-1' }, { subnetId: 'subnet-c1' }],
    });
  });

  it('a zone changing subnet or address is removed first, the others stay', () => {
    const current = [at('subnet-a1'), at('subnet-b1', { allocationId: 'eipalloc-1' })];
    const wanted = [{ subnetId: 'subnet-a2' }, { subnetId: 'subnet-b1', allocationId: 'eipalloc-1' }];
    expect(planSubnets(current, wanted, zoneOf)).toEqual({
      action: 'remove-first',
      mappings: [{ subnetId: 'subnet-b1', allocationId: 'eipalloc-1' }],
      zones: ['eu-west-1a'],
    });
    const newEip = [{ subnetId: 'subnet-a1' }, { subnetId: 'subnet-b1', allocationId: 'eipalloc-2' }];
    expect(planSubnets(current, newEip, zoneOf)).toMatchObject({ action: 'remove-first', zones: ['eu-west-1b'] });
  });

  it('every zone changing means a new load balancer', () => {
    const current = [at('subnet-a1', { allocationId: 'eipalloc-1' })];
    expect(planSubnets(current, [{ subnetId: 'subnet-a1', allocationId: 'eipalloc-9' }], zoneOf)).toEqual({
      action: 'replace',
      zones: ['eu-west-1a'],
    });
  });
});
