import { describe, expect, it } from 'vitest';
import type { Instance, Route, RouteTable, RouteTarget } from '../../shared/aws/ec2-port.ts';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import type { NodeCondition } from '../../shared/k8s/types.ts';
import { cidrs } from '../../test/helpers/world.ts';
import {
  chooseRouteTable,
  type NodeView,
  planRoutes,
  podCidrsOf,
  pointsAt,
  routeTargetFor,
  sourceDestCheckOf,
  warningLevel,
  withNetworkCondition,
} from './plan.ts';

const CLUSTER_CIDRS = cidrs(['10.244.0.0/16', 'fd00:10:244::/56']);
const A = makeInstance({ index: 1 });
const B = makeInstance({ index: 2 });

function route(destination: string, target: RouteTarget, extra: Partial<Route> = {}): Route {
  return {
    destination,
    destinationType: destination.startsWith('pl-') ? 'prefix-list' : destination.includes(':') ? 'ipv6' : 'ipv4',
    target,
    state: 'active',
    origin: 'CreateRoute',
    ...extra,
  };
}

const LOCAL = route('10.0.0.0/16', { gatewayId: 'local' }, { origin: 'CreateRouteTable' });
const DEFAULT = route('0.0.0.0/0', { gatewayId: 'igw-1' });

function table(...routes: Route[]): RouteTable {
  return { routeTableId: 'rtb-1', vpcId: 'vpc-0a1b2c3d', tags: {}, routes: [LOCAL, DEFAULT, ...routes] };
}

function node(
  name: string,
  podCidrs: string[],
  instance: Instance | undefined,
  extra: Partial<NodeView> = {},
): NodeView {
  return {
    name,
    podCidrs,
    instanceId: instance?.instanceId ?? 'i-0000000000000dead',
    instance,
    terminating: false,
    instanceMayAppear: false,
    networkUnavailable: undefined,
    ...extra,
  };
}

const routed: NodeCondition = { type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' };
const off = (i: Instance): Instance => ({ ...i, sourceDestCheck: false });

/** The plan in a form a table row can state: actions per Node, deletions, problem reasons. */
function summary(input: { routes?: Route[]; nodes: NodeView[]; limit?: number }) {
  const plan = planRoutes({
    table: table(...(input.routes ?? [])),
    clusterCidrs: CLUSTER_CIDRS,
    nodes: input.nodes,
    routeLimit: input.limit ?? 50,
  });
  return {
    steps: plan.nodes.flatMap((p) =>
      p.routes.filter((r) => r.action !== 'none').map((r) => `${r.action} ${r.destination}`),
    ),
    sourceDestCheck: plan.nodes.filter((p) => p.disableSourceDestCheck).map((p) => p.node),
    mark: plan.nodes.filter((p) => p.markRouteCreated).map((p) => p.node),
    deletions: plan.deletions.map((d) => `${d.reason} ${d.destination}`),
    problems: [...plan.problems].flatMap(([name, list]) =>
      list.map((p) => `${name}: ${p.reason}${p.retry ? ' (retry)' : ''}`),
    ),
    routes: plan.usage.routes,
  };
}

describe('planRoutes', () => {
  it.each([
    {
      name: 'creates a missing route, turns the check off, marks the Node',
      routes: [],
      nodes: [node('a', ['10.244.1.0/24'], A)],
      expected: { steps: ['create 10.244.1.0/24'], sourceDestCheck: ['a'], mark: ['a'], deletions: [], problems: [] },
    },
    {
      name: 'leaves a route in place and writes nothing when all is done',
      routes: [route('10.244.1.0/24', { instanceId: A.instanceId })],
      nodes: [node('a', ['10.244.1.0/24'], off(A), { networkUnavailable: routed })],
      expected: { steps: [], sourceDestCheck: [], mark: [], deletions: [], problems: [] },
    },
    {
      name: 'a route to the instance via its only interface is in place too',
      routes: [route('10.244.1.0/24', { networkInterfaceId: A.networkInterfaces[0]!.networkInterfaceId })],
      nodes: [node('a', ['10.244.1.0/24'], off(A), { networkUnavailable: routed })],
      expected: { steps: [], sourceDestCheck: [], mark: [], deletions: [], problems: [] },
    },
    {
      name: 'replaces a route that points at another instance',
      routes: [route('10.244.1.0/24', { instanceId: B.instanceId })],
      nodes: [node('a', ['10.244.1.0/24'], off(A), { networkUnavailable: routed })],
      expected: { steps: ['replace 10.244.1.0/24'], sourceDestCheck: [], mark: [], deletions: [], problems: [] },
    },
    {
      name: 'replaces (not deletes) a blackhole route a live Node claims',
      routes: [route('10.244.1.0/24', { networkInterfaceId: 'eni-gone' }, { state: 'blackhole' })],
      nodes: [node('a', ['10.244.1.0/24'], off(A))],
      expected: { steps: ['replace 10.244.1.0/24'], sourceDestCheck: [], mark: ['a'], deletions: [], problems: [] },
    },
    {
      name: 'deletes blackholes and orphans inside the cluster CIDR',
      routes: [
        route('10.244.7.0/24', { networkInterfaceId: 'eni-gone' }, { state: 'blackhole' }),
        route('10.244.8.0/24', { instanceId: B.instanceId }),
        route('fd00:10:244:8::/64', { instanceId: B.instanceId }),
      ],
      nodes: [],
      expected: {
        steps: [],
        sourceDestCheck: [],
        mark: [],
        deletions: ['blackhole 10.244.7.0/24', 'orphan 10.244.8.0/24', 'orphan fd00:10:244:8::/64'],
        problems: [],
      },
    },
    {
      name: 'never touches routes outside the cluster CIDR, to gateways, or not created by CreateRoute',
      routes: [
        route('192.168.0.0/24', { instanceId: B.instanceId }),
        route('172.16.0.0/16', { natGatewayId: 'nat-1' }, { state: 'blackhole' }),
        route('10.244.9.0/24', { transitGatewayId: 'tgw-1' }),
        route('10.244.10.0/24', { gatewayId: 'vgw-1' }, { origin: 'EnableVgwRoutePropagation' }),
        route('pl-0123', { gatewayId: 'vpce-1' }),
        route('10.0.0.0/8', { instanceId: B.instanceId }),
      ],
      nodes: [],
      expected: { steps: [], sourceDestCheck: [], mark: [], deletions: [], problems: [] },
    },
    {
      name: 'keeps the route of a terminating Node and of a Node not initialized yet',
      routes: [
        route('10.244.1.0/24', { instanceId: A.instanceId }),
        route('10.244.2.0/24', { instanceId: B.instanceId }),
      ],
      nodes: [
        node('a', ['10.244.1.0/24'], A, { terminating: true }),
        node('b', ['10.244.2.0/24'], undefined, { instanceId: undefined }),
      ],
      expected: { steps: [], sourceDestCheck: [], mark: [], deletions: [], problems: [] },
    },
    {
      name: 'deletes the blackhole of a Node whose instance is gone, without recreating it',
      routes: [route('10.244.1.0/24', { networkInterfaceId: 'eni-gone' }, { state: 'blackhole' })],
      nodes: [node('a', ['10.244.1.0/24'], { ...A, state: 'terminated' })],
      expected: {
        steps: [],
        sourceDestCheck: [],
        mark: [],
        deletions: ['blackhole 10.244.1.0/24'],
        problems: ['a: InstanceNotRunning'],
      },
    },
    {
      name: 'a missing instance is retried only while it may still appear',
      routes: [],
      nodes: [
        node('new', ['10.244.1.0/24'], undefined, { instanceMayAppear: true }),
        node('old', ['10.244.2.0/24'], undefined),
      ],
      expected: {
        steps: [],
        sourceDestCheck: [],
        mark: [],
        deletions: [],
        problems: ['new: InstanceNotFound (retry)', 'old: InstanceNotFound'],
      },
    },
    {
      name: 'refuses pod CIDRs outside the cluster CIDR, malformed or held twice',
      routes: [],
      nodes: [
        node('a', ['10.99.1.0/24', 'banana'], A),
        node('b', ['10.244.5.0/24'], off(B)),
        node('c', ['10.244.5.0/24'], off(makeInstance({ index: 3 }))),
      ],
      expected: {
        steps: ['create 10.244.5.0/24'],
        sourceDestCheck: [],
        mark: ['b'],
        deletions: [],
        problems: ['a: PodCIDROutsideClusterCIDR', 'a: InvalidPodCIDR', 'c: DuplicatePodCIDR'],
      },
    },
    {
      name: 'routes dual-stack Nodes, IPv6 included',
      routes: [route('10.244.1.0/24', { instanceId: A.instanceId })],
      nodes: [node('a', ['10.244.1.0/24', 'fd00:10:244:1::/64'], off(A))],
      expected: { steps: ['create fd00:10:244:1::/64'], sourceDestCheck: [], mark: ['a'], deletions: [], problems: [] },
    },
    {
      name: 'reports a pod CIDR that collides with the local route',
      routes: [route('10.244.1.0/24', { gatewayId: 'local' }, { origin: 'CreateRouteTable' })],
      nodes: [node('a', ['10.244.1.0/24'], off(A))],
      expected: { steps: [], sourceDestCheck: [], mark: [], deletions: [], problems: ['a: RouteConflict'] },
    },
    {
      name: 'refuses an instance in another VPC',
      routes: [],
      nodes: [node('a', ['10.244.1.0/24'], { ...A, vpcId: 'vpc-other' })],
      expected: { steps: [], sourceDestCheck: [], mark: [], deletions: [], problems: ['a: InstanceInOtherVpc'] },
    },
  ])('$name', ({ routes, nodes, expected }) => {
    expect(summary({ routes, nodes })).toMatchObject(expected);
  });

  it('refuses creates beyond the route limit in Node name order, counting deletions first', () => {
    // 2 routes (local, default) + 1 orphan; limit 4: the orphan's slot is freed, so two creates fit.
    const result = summary({
      routes: [route('10.244.9.0/24', { instanceId: B.instanceId })],
      nodes: [
        node('c', ['10.244.3.0/24'], off(makeInstance({ index: 3 }))),
        node('a', ['10.244.1.0/24'], off(A)),
        node('b', ['10.244.2.0/24'], off(B)),
      ],
      limit: 4,
    });
    expect(result.steps).toEqual(['create 10.244.1.0/24', 'create 10.244.2.0/24']);
    expect(result.deletions).toEqual(['orphan 10.244.9.0/24']);
    expect(result.problems).toEqual(['c: RouteTableFull']);
    expect(result.mark).toEqual(['a', 'b']);
    expect(result.routes).toBe(4);
  });

  it.each([
    [50, 45, 44, false],
    [50, 45, 45, true],
    [10, 9, 9, true],
    [5, 4, 3, false],
    [1000, 900, 901, true],
  ])('limit %i warns at %i routes (%i routes: %s)', (limit, warnAt, routes, near) => {
    expect(warningLevel(limit)).toBe(warnAt);
    const extra = Array.from({ length: routes - 2 }, (_, i) =>
      route(`192.168.${i % 250}.${Math.floor(i / 250)}/32`, { gatewayId: 'igw-1' }),
    );
    const plan = planRoutes({ table: table(...extra), clusterCidrs: CLUSTER_CIDRS, nodes: [], routeLimit: limit });
    expect(plan.usage).toEqual({ routes, limit, warnAt, nearLimit: near });
  });
});

describe('route targets and the source/destination check', () => {
  const multi: Instance = {
    ...A,
    sourceDestCheck: true,
    networkInterfaces: [
      { ...A.networkInterfaces[0]!, networkInterfaceId: 'eni-secondary', deviceIndex: 1, sourceDestCheck: true },
      { ...A.networkInterfaces[0]!, networkInterfaceId: 'eni-primary', deviceIndex: 0, sourceDestCheck: false },
    ],
  };

  it.each([
    ['one interface: the instance', A, { instanceId: A.instanceId }],
    ['several interfaces: the primary one', multi, { networkInterfaceId: 'eni-primary' }],
    ['no interface known: the instance', { ...A, networkInterfaces: [] }, { instanceId: A.instanceId }],
  ])('%s', (_, instance, target) => {
    expect(routeTargetFor(instance)).toEqual(target);
  });

  it('reads the primary interface check on a multi-interface instance', () => {
    expect(sourceDestCheckOf(multi)).toBe(false);
    expect(sourceDestCheckOf(A)).toBe(true);
  });

  it.each([
    [{ instanceId: A.instanceId }, A, true],
    [{ instanceId: B.instanceId }, A, false],
    [{ networkInterfaceId: A.networkInterfaces[0]!.networkInterfaceId }, A, true],
    [{ networkInterfaceId: 'eni-primary', instanceId: A.instanceId }, multi, true],
    [{ networkInterfaceId: 'eni-secondary', instanceId: A.instanceId }, multi, false],
    [{ gatewayId: 'igw-1' }, A, false],
  ])('route target %j points at the wanted target of %#: %s', (current, instance, expected) => {
    expect(pointsAt(current, instance, routeTargetFor(instance))).toBe(expected);
  });
});

describe('withNetworkCondition', () => {
  const now = '2026-11-02T08:00:00.000Z';
  const ready: NodeCondition = { type: 'Ready', status: 'True', reason: 'KubeletReady' };

  it.each([
    [
      'adds it, keeping the others',
      [ready],
      true,
      [ready, { type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }],
    ],
    [
      'flips True to False',
      [{ type: 'NetworkUnavailable', status: 'True', reason: 'NoRouteCreated' } as NodeCondition, ready],
      true,
      [{ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }, ready],
    ],
    [
      'reports a failure as True/NoRouteCreated',
      [],
      false,
      [{ type: 'NetworkUnavailable', status: 'True', reason: 'NoRouteCreated' }],
    ],
    ['writes nothing when already False (whoever wrote it)', [{ ...routed, reason: 'CalicoIsUp' }], true, undefined],
    [
      'writes nothing when already True',
      [{ type: 'NetworkUnavailable', status: 'True' } as NodeCondition],
      false,
      undefined,
    ],
  ])('%s', (_, conditions, created, expected) => {
    const result = withNetworkCondition(conditions, created, now);
    if (expected === undefined) expect(result).toBeUndefined();
    else expect(result).toMatchObject(expected);
    if (result) {
      const set = result.find((c) => c.type === 'NetworkUnavailable')!;
      expect(set).toMatchObject({ lastTransitionTime: now, lastHeartbeatTime: now });
      expect(set.message).toBe(
        created ? 'RouteController created a route' : 'RouteController failed to create a route',
      );
    }
  });
});

describe('chooseRouteTable', () => {
  const t = (id: string): RouteTable => ({ routeTableId: id, tags: {}, routes: [] });

  it.each([
    ['one tagged table', [t('rtb-1')], [], 'rtb-1'],
    ['the current tag wins over the legacy one', [t('rtb-1')], [t('rtb-2')], 'rtb-1'],
    ['the legacy tag when no table has the current one', [], [t('rtb-2')], 'rtb-2'],
  ])('%s', (_, byTag, legacy, id) => {
    const choice = chooseRouteTable(byTag, legacy, 'prod');
    expect(choice.ok && choice.table.routeTableId).toBe(id);
  });

  it.each([
    [
      'none',
      [],
      [],
      /no route table is tagged kubernetes\.io\/cluster\/prod \(or KubernetesCluster=prod\).*set ROUTE_TABLE_ID/,
    ],
    [
      'two',
      [t('rtb-b'), t('rtb-a')],
      [],
      /2 route tables are tagged .*\(rtb-a, rtb-b\).*exactly one: set ROUTE_TABLE_ID/,
    ],
  ])('refuses %s with a message saying what to do', (_, byTag, legacy, pattern) => {
    const choice = chooseRouteTable(byTag, legacy, 'prod');
    expect(choice.ok).toBe(false);
    if (!choice.ok) expect(choice.message).toMatch(pattern);
  });
});

describe('podCidrsOf', () => {
  it.each([
    [{ podCIDR: '10.244.1.0/24' }, ['10.244.1.0/24']],
    [{ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00::/64'] }, ['10.244.1.0/24', 'fd00::/64']],
    [{ podCIDRs: [] }, []],
    [undefined, []],
  ])('%j -> %j', (spec, expected) => {
    expect(podCidrsOf(spec)).toEqual(expected);
  });
});
