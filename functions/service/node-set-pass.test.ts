import { beforeEach, describe, expect, it } from 'vitest';
import { elbv2Failure } from '../../shared/aws/fakes/elbv2/wire.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import {
  type KeyHint,
  NODE_JOIN_HINT_SOURCE,
  NODE_JOIN_LEAVE_HINT_SOURCE,
  NODE_LEAVE_HINT_SOURCE,
  NODE_SET_HINT_SOURCE,
} from '../../shared/queue/message.ts';
import { createServiceWorld, type ServiceWorld, VPC, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { nodeSetPassAllowed, shortPassFor } from './resync-check.ts';
import {
  type ClassicWorld,
  classicAccount,
  createClassicWorld,
  REFERENCE_NAME,
  referenceClassic,
} from './testing/clb.ts';

/**
 * A Node joining or leaving sends every LoadBalancer Service's key, hinted as a Node-set change (the relay's
 * node-set debounce). Its pass looks quickly, then sees only to the targets and the Node rules; it must leave AWS
 * exactly as the full pass would, and fall back to the full pass whenever the look finds anything else off.
 */

const NODE_SET: KeyHint = { eventType: 'MODIFIED', resourceVersion: '9001', source: NODE_SET_HINT_SOURCE };
const NEW_GROUP = 'sg-00000000000000new';

/** Two identical worlds: `fast` as deployed (quick looks on), `full` making every pass the full one. */
let fast: ServiceWorld;
let full: ServiceWorld;

/** A second node group's security group, cluster-tagged and open to nothing yet. */
function putSecondNodeGroup(w: ServiceWorld): void {
  w.ec2.putSecurityGroup({
    groupId: NEW_GROUP,
    groupName: 'nodes-b',
    vpcId: 'vpc-0a1b2c3d',
    description: 'second node group',
    tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' },
    ingress: [],
  });
}

async function world(): Promise<ServiceWorld> {
  const w = createServiceWorld();
  putSecondNodeGroup(w);
  w.addNode(1);
  w.addNode(2);
  w.putService('web', {
    ports: WEB_PORTS,
  });
  await w.converge([w.serviceKey('web')]);
  w.resetCounters();
  return w;
}

const nodeSetChange = (w: ServiceWorld, quick: boolean) =>
  w.converge(w.nodeSetKeys(['web']), { ...w.serviceDeps, resyncQuickCheck: quick });
const both = async (change: (w: ServiceWorld) => unknown) => {
  await change(fast);
  await change(full);
  await nodeSetChange(fast, true);
  await nodeSetChange(full, false);
};
const targetsOf = (w: ServiceWorld) => w.inventory().targetGroups.map((g) => g.targets);
const eventReasons = (w: ServiceWorld) => w.kube.events.map((e) => e.reason);
const calls = (w: ServiceWorld) =>
  Object.fromEntries([...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(([, n]) => n > 0));

beforeEach(async () => {
  fast = await world();
  full = await world();
});

describe("a Node-set change's pass", () => {
  it('registers a joining Node as the full pass does, reading neither attributes nor listeners', async () => {
    await both((w) => w.addNode(3));

    expect(fast.inventory()).toEqual(full.inventory());
    const instances = [1, 2, 3].map((i) => fast.ec2.instances.get([...fast.ec2.instances.keys()][i - 1]!)!.instanceId);
    for (const targets of targetsOf(fast)) expect(targets.map((t) => t.split(':')[0]).sort()).toEqual(instances.sort());
    expect(eventReasons(fast)).toEqual(['UpdatedLoadBalancer']);
    expect(eventReasons(fast)).toEqual(eventReasons(full));
    const made = calls(fast);
    expect(made).toMatchObject({ DescribeTargetHealth: 2, RegisterTargets: 2 });
    for (const read of [
      'DescribeListeners',
      'DescribeListenerAttributes',
      'DescribeLoadBalancerAttributes',
      'DescribeTargetGroupAttributes',
    ]) {
      expect(made[read], read).toBeUndefined();
    }
    expect(made.DeregisterTargets).toBeUndefined();
    // The full pass reads what the Node set cannot change.
    expect(calls(full)).toMatchObject({ DescribeListeners: 1, DescribeLoadBalancerAttributes: 1 });
  });

  it('reads the security groups and target groups of a batch of ten Services once each, as the full pass would leave them', async () => {
    const more = Array.from({ length: 9 }, (_, i) => `web-${i}`);
    for (const w of [fast, full]) {
      for (const name of more) w.putService(name, { ports: WEB_PORTS });
      await w.converge(more.map((name) => w.serviceKey(name)));
      w.resetCounters();
      w.addNode(3, { group: NEW_GROUP });
    }
    const keys = (w: ServiceWorld) => w.nodeSetKeys(['web', ...more]);
    await fast.converge(keys(fast), { ...fast.serviceDeps, resyncQuickCheck: true });
    await full.converge(keys(full), { ...full.serviceDeps, resyncQuickCheck: false });

    expect(fast.inventory()).toEqual(full.inventory());
    // One read of the ten load balancers' groups and the backend group, one of the Nodes' groups; one listing.
    expect(calls(fast)).toMatchObject({ DescribeSecurityGroups: 2, DescribeTargetGroups: 1, RegisterTargets: 20 });
    expect(calls(full).DescribeSecurityGroups).toBeGreaterThanOrEqual(10);
  });

  it('deregisters a Node that left, as the full pass does', async () => {
    await both((w) => w.kube.deleteNode('node-2', {}));

    expect(fast.inventory()).toEqual(full.inventory());
    for (const targets of targetsOf(fast)) expect(targets).toHaveLength(1);
    expect(eventReasons(fast)).toEqual(eventReasons(full));
  });

  it("opens a new node group's security group to the load balancer, as the full pass does", async () => {
    const before = fast.inventory().securityGroups.find((g) => g.name === 'nodes-b')!.ingress;
    expect(before).toEqual([]);

    await both((w) => w.addNode(3, { group: NEW_GROUP }));

    expect(fast.inventory()).toEqual(full.inventory());
    expect(fast.inventory().securityGroups.find((g) => g.name === 'nodes-b')!.ingress.length).toBeGreaterThan(0);
    expect(eventReasons(fast)).toEqual(eventReasons(full));
  });

  it('makes the full pass when the quick look finds anything off: a listener deleted out of band comes back', async () => {
    const lb = [...fast.elbv2.loadBalancers.values()][0]!.lb;
    const http = fast.elbv2.listenersOf(lb.arn).find((l) => l.port === 80)!;
    await fast.elbv2Port.deleteListener(http.arn);
    fast.addNode(3);

    await nodeSetChange(fast, true);

    expect(
      fast.elbv2
        .listenersOf(lb.arn)
        .map((l) => l.port)
        .sort(),
    ).toEqual([443, 80]);
    for (const targets of targetsOf(fast)) expect(targets).toHaveLength(3);
  });

  it("makes the full pass when the load balancer's security groups are not the ones it should have", async () => {
    await both(async (w) => {
      const lb = [...w.elbv2.loadBalancers.values()][0]!.lb;
      await w.elbv2Port.setSecurityGroups(lb.arn, lb.securityGroups.slice(0, 1));
      w.addNode(3);
    });

    expect(fast.inventory()).toEqual(full.inventory());
    expect(fast.inventory().loadBalancers[0]!.securityGroups).toHaveLength(2);
    // The change's own call, then the full pass's.
    expect(calls(fast).SetSecurityGroups).toBe(2);
  });

  it('writes nothing when the Node set change leaves the targets as they are', async () => {
    await nodeSetChange(fast, true);

    expect(fast.elbv2.writeCallCount() + fast.ec2.writeCallCount()).toBe(0);
    expect(fast.kube.events).toEqual([]);
  });
});

describe("a round of joins only (the relay's NODE_JOIN_HINT_SOURCE)", () => {
  const joinChange = (w: ServiceWorld) =>
    w.converge(w.nodeSetKeys(['web'], '9002', NODE_JOIN_HINT_SOURCE), { ...w.serviceDeps, resyncQuickCheck: true });

  it('registers the joining Node as the full pass does, without reading the registered targets', async () => {
    for (const w of [fast, full]) w.addNode(3, { group: NEW_GROUP });
    await joinChange(fast);
    await nodeSetChange(full, false);

    expect(fast.inventory()).toEqual(full.inventory());
    for (const targets of targetsOf(fast)) expect(targets).toHaveLength(3);
    expect(eventReasons(fast)).toEqual(eventReasons(full));
    const made = calls(fast);
    expect(made).toMatchObject({ RegisterTargets: 2 });
    expect(made.DescribeTargetHealth).toBeUndefined();
    expect(made.DeregisterTargets).toBeUndefined();
  });

  it.each([
    ['joining', NODE_JOIN_HINT_SOURCE, (w: ServiceWorld) => w.addNode(3)],
    ['leaving', NODE_LEAVE_HINT_SOURCE, (w: ServiceWorld) => exclude(w, 'node-2')],
  ])('IP targets are not touched: a Node %s cannot change which Pods serve', async (_, source, change) => {
    for (const w of [fast, full]) {
      w.putService('pods', {
        ports: WEB_PORTS,
        annotations: { 'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip' },
      });
      await w.converge([w.serviceKey('pods')]);
      w.resetCounters();
      change(w);
    }
    await fast.converge(fast.nodeSetKeys(['pods'], '9002', source), {
      ...fast.serviceDeps,
      resyncQuickCheck: true,
    });
    await full.converge(full.nodeSetKeys(['pods']), { ...full.serviceDeps, resyncQuickCheck: false });

    expect(fast.inventory()).toEqual(full.inventory());
    const made = calls(fast);
    for (const op of ['DescribeTargetHealth', 'RegisterTargets', 'DeregisterTargets'])
      expect(made[op], op).toBeUndefined();
  });
});

/** The Node stays, excluded from the load balancers (as a cordoned-for-removal or control-plane Node is). */
function exclude(w: ServiceWorld, name: string): void {
  const node = w.kube.nodes.get(name)!;
  w.kube.putNode({
    ...node,
    metadata: {
      ...node.metadata,
      labels: { ...node.metadata.labels, [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' },
    },
  });
}

describe("a round of leaves only (the relay's NODE_LEAVE_HINT_SOURCE)", () => {
  const leaveChange = (w: ServiceWorld, names = ['web']) =>
    w.converge(w.nodeSetKeys(names, '9002', NODE_LEAVE_HINT_SOURCE), { ...w.serviceDeps, resyncQuickCheck: true });

  it('deregisters the Node that left as the full pass does, without reading the registered targets', async () => {
    for (const w of [fast, full]) {
      // A Node excluded all along (a control-plane Node): named too, and not registered, which is no error.
      w.addNode(3, { labels: { [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' } });
      exclude(w, 'node-2');
    }
    await leaveChange(fast);
    await nodeSetChange(full, false);

    expect(fast.inventory()).toEqual(full.inventory());
    const kept = fast.kube.nodes.get('node-1')!.spec!.providerID!.split('/').at(-1);
    for (const targets of targetsOf(fast)) expect(targets.map((t) => t.split(':')[0])).toEqual([kept]);
    expect(eventReasons(fast)).toEqual(eventReasons(full));
    const made = calls(fast);
    expect(made).toMatchObject({ DeregisterTargets: 2 });
    for (const op of ['DescribeTargetHealth', 'RegisterTargets']) expect(made[op], op).toBeUndefined();
  });

  it('reads the registered targets when ELB refuses one named (InvalidTarget, as moto does for one not registered)', async () => {
    for (const w of [fast, full]) {
      w.addNode(3, { labels: { [LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS]: '' } });
      exclude(w, 'node-2');
    }
    fast.elbv2.queueError(
      'DeregisterTargets',
      elbv2Failure('InvalidTarget', 'The following targets are not registered'),
    );
    await leaveChange(fast);
    await nodeSetChange(full, false);

    expect(fast.inventory()).toEqual(full.inventory());
    for (const targets of targetsOf(fast)) expect(targets).toHaveLength(1);
    // The refused call, then that group read and its one registered leaver deregistered; the other group unread.
    expect(calls(fast)).toMatchObject({ DeregisterTargets: 3, DescribeTargetHealth: 1 });
    // Put right within the pass: no failure, no retry.
    expect(eventReasons(fast)).toEqual(eventReasons(full));
  });

  it('a round of both registers the newcomer and deregisters the Node that left, still without the read', async () => {
    for (const w of [fast, full]) {
      w.addNode(3);
      exclude(w, 'node-2');
    }
    await fast.converge(fast.nodeSetKeys(['web'], '9002', NODE_JOIN_LEAVE_HINT_SOURCE), {
      ...fast.serviceDeps,
      resyncQuickCheck: true,
    });
    await nodeSetChange(full, false);

    expect(fast.inventory()).toEqual(full.inventory());
    for (const targets of targetsOf(fast)) expect(targets).toHaveLength(2);
    expect(eventReasons(fast)).toEqual(eventReasons(full));
    const made = calls(fast);
    expect(made).toMatchObject({ DeregisterTargets: 2, RegisterTargets: 2 });
    expect(made.DescribeTargetHealth).toBeUndefined();
  });

  it('deregisters a Node that left and was then marked for deletion before the pass', async () => {
    for (const w of [fast, full]) {
      exclude(w, 'node-2');
      const node = w.kube.nodes.get('node-2')!;
      w.kube.putNode({
        ...node,
        metadata: { ...node.metadata, finalizers: ['example.com/drain'], deletionTimestamp: '2026-12-02T07:00:00Z' },
      });
    }
    await leaveChange(fast);
    await nodeSetChange(full, false);
    expect(fast.inventory()).toEqual(full.inventory());
    for (const targets of targetsOf(fast)) expect(targets).toHaveLength(1);
    expect(calls(fast).DescribeTargetHealth).toBeUndefined();
  });

  it('a Node that came back before the pass is kept', async () => {
    for (const w of [fast, full]) {
      const before = structuredClone(w.kube.nodes.get('node-2')!);
      exclude(w, 'node-2');
      w.kube.putNode(before);
    }
    await leaveChange(fast);
    await nodeSetChange(full, false);
    expect(fast.inventory()).toEqual(full.inventory());
    for (const targets of targetsOf(fast)) expect(targets).toHaveLength(2);
  });
});

describe('nodeSetPassAllowed', () => {
  it('only for a first delivery that Node-set changes alone sent', () => {
    expect(nodeSetPassAllowed([NODE_SET], 1)).toBe(true);
    expect(nodeSetPassAllowed([NODE_SET, { ...NODE_SET, resourceVersion: '9002' }], 1)).toBe(true);
    // A retry or a requeue: work left by an earlier attempt.
    expect(nodeSetPassAllowed([NODE_SET], 2)).toBe(false);
    // Coalesced with a change of the Service itself, or a resync: the full pass (or the resync's own rules).
    expect(nodeSetPassAllowed([NODE_SET, { eventType: 'MODIFIED', resourceVersion: '5', source: 'relay' }], 1)).toBe(
      false,
    );
    expect(nodeSetPassAllowed([NODE_SET, { eventType: 'RESYNC', eventId: 'r1' }], 1)).toBe(false);
    expect(nodeSetPassAllowed([], 1)).toBe(false);
  });

  it('a round of joins only is a node-join pass while every hint coalesced with it is one too', () => {
    const JOIN: KeyHint = { ...NODE_SET, source: NODE_JOIN_HINT_SOURCE };
    const now = Date.UTC(2026, 11, 2);
    expect(shortPassFor([JOIN], 1, 'default/web', now)).toBe('node-join');
    expect(shortPassFor([JOIN, { ...JOIN, resourceVersion: '9002' }], 1, 'default/web', now)).toBe('node-join');
    // A Node left in another round coalesced with it: the registered targets must be read.
    expect(shortPassFor([JOIN, NODE_SET], 1, 'default/web', now)).toBe('node-set');
    expect(shortPassFor([JOIN], 2, 'default/web', now)).toBeUndefined();
    expect(
      shortPassFor([JOIN, { eventType: 'MODIFIED', resourceVersion: '5', source: 'relay' }], 1, 'default/web', now),
    ).toBeUndefined();
  });

  it('a round of leaves only is a node-leave pass while every hint coalesced with it is one too', () => {
    const LEAVE: KeyHint = { ...NODE_SET, source: NODE_LEAVE_HINT_SOURCE };
    const JOIN: KeyHint = { ...NODE_SET, source: NODE_JOIN_HINT_SOURCE };
    const JOIN_LEAVE: KeyHint = { ...NODE_SET, source: NODE_JOIN_LEAVE_HINT_SOURCE };
    const now = Date.UTC(2026, 11, 2);
    expect(nodeSetPassAllowed([LEAVE], 1)).toBe(true);
    expect(nodeSetPassAllowed([JOIN_LEAVE], 1)).toBe(true);
    expect(shortPassFor([LEAVE, { ...LEAVE, resourceVersion: '9002' }], 1, 'default/web', now)).toBe('node-leave');
    // Rounds of joins and of leaves coalesced, or a round of both: both, still without the read.
    expect(shortPassFor([LEAVE, JOIN], 1, 'default/web', now)).toBe('node-join-leave');
    expect(shortPassFor([JOIN_LEAVE], 1, 'default/web', now)).toBe('node-join-leave');
    expect(shortPassFor([JOIN_LEAVE, JOIN], 1, 'default/web', now)).toBe('node-join-leave');
    // An ordinary round coalesced with them: the registered targets must be read.
    expect(shortPassFor([LEAVE, NODE_SET], 1, 'default/web', now)).toBe('node-set');
    expect(shortPassFor([LEAVE], 2, 'default/web', now)).toBeUndefined();
  });
});

describe("a Node-set change's pass over a Classic ELB", () => {
  let quick: ClassicWorld;
  let slow: ClassicWorld;
  const classic = async (): Promise<ClassicWorld> => {
    const w = createClassicWorld();
    w.addNode(1);
    w.addNode(2);
    // Made by the reference controller and taken over (its rules on the Nodes' group), as migrated Services are.
    await referenceClassic(w);
    await w.converge([w.serviceKey('web')]);
    w.resetCounters();
    return w;
  };
  // Each change its own Node-set revision: SQS drops a message whose deduplication ID it has seen.
  const change = (w: ClassicWorld, quickLooks: boolean, resourceVersion = '9001') =>
    w.converge(w.nodeSetKeys(['web'], resourceVersion), { ...w.serviceDeps, resyncQuickCheck: quickLooks });
  const classicCalls = (w: ClassicWorld) =>
    Object.fromEntries(
      [...w.elbFake.calls.entries(), ...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(([, n]) => n > 0),
    );
  beforeEach(async () => {
    quick = await classic();
    slow = await classic();
  });

  it('registers a joining Node and deregisters one that left, as the full pass does, without its settings reads', async () => {
    for (const w of [quick, slow]) w.addNode(3);
    await change(quick, true);
    await change(slow, false);
    // Read before the accounts below, which read attributes themselves.
    expect(classicCalls(quick).DescribeLoadBalancerAttributes).toBeUndefined();
    expect(classicCalls(slow).DescribeLoadBalancerAttributes).toBeGreaterThan(0);
    expect(await classicAccount(quick)).toEqual(await classicAccount(slow));
    expect((await classicAccount(quick)).loadBalancers[0]!.instanceIds).toHaveLength(3);
    expect(quick.kube.events.map((e) => e.reason)).toEqual(slow.kube.events.map((e) => e.reason));
    expect(quick.kube.events.map((e) => e.reason)).toContain('UpdatedLoadBalancer');

    for (const w of [quick, slow]) {
      w.resetCounters();
      await w.kube.deleteNode('node-1', {});
    }
    await change(quick, true, '9002');
    await change(slow, false, '9002');
    expect(await classicAccount(quick)).toEqual(await classicAccount(slow));
    expect((await classicAccount(quick)).loadBalancers[0]!.instanceIds).toHaveLength(2);
  });

  it("reads the tags and groups of ten migrated Classic ELBs once, named after the uids the keys' hints give", async () => {
    const more = Array.from({ length: 9 }, (_, i) => ({
      name: `web-${i}`,
      uid: `0000000${i}-9c4d-4e6f-8a7b-0c1d2e3f4a5b`,
    }));
    for (const w of [quick, slow]) {
      for (const service of more) await referenceClassic(w, { service });
      await w.converge(more.map((s) => w.serviceKey(s.name)));
      w.addNode(3);
      w.resetCounters();
    }
    const names = ['web', ...more.map((s) => s.name)];
    await quick.converge(quick.nodeSetKeys(names), { ...quick.serviceDeps, resyncQuickCheck: true });
    await slow.converge(slow.nodeSetKeys(names), { ...slow.serviceDeps, resyncQuickCheck: false });

    expect(classicCalls(quick)).toMatchObject({
      DescribeTags: 1,
      DescribeSecurityGroups: 2, // the ten load balancers' groups and the backend group; the Nodes' groups
      RegisterInstancesWithLoadBalancer: 10,
    });
    const account = await classicAccount(quick);
    expect(account).toEqual(await classicAccount(slow));
    expect(account.loadBalancers.map((lb) => lb.instanceIds.length)).toEqual(Array(10).fill(3));

    // Without the uids (a relay before it named them) the same is done, each load balancer's tags read alone.
    for (const w of [quick, slow]) {
      w.addNode(4);
      w.resetCounters();
    }
    await quick.converge(quick.nodeSetKeys(names, '9002', NODE_SET_HINT_SOURCE, false), {
      ...quick.serviceDeps,
      resyncQuickCheck: true,
    });
    await slow.converge(slow.nodeSetKeys(names, '9002'), { ...slow.serviceDeps, resyncQuickCheck: false });
    expect(classicCalls(quick)).toMatchObject({ DescribeTags: 10, RegisterInstancesWithLoadBalancer: 10 });
    expect(await classicAccount(quick)).toEqual(await classicAccount(slow));
  });

  it("makes the full pass when the Classic ELB's security groups are not the ones it should have", async () => {
    // The Service named its own group, then stopped: only a Node-set round arrives before the Service's own key.
    const own = 'sg-00000000000000abc';
    for (const w of [quick, slow]) {
      w.ec2.putSecurityGroup({
        groupId: own,
        groupName: 'web-own',
        vpcId: VPC,
        description: 'its own',
        tags: {},
        ingress: [],
      });
      const service = w.kube.services.get('default/web')!;
      w.kube.putService({
        ...service,
        metadata: { ...service.metadata, annotations: { [ANNOTATION.securityGroups]: own } },
      });
      await w.converge([w.serviceKey('web')]);
      expect((await w.elb.findLoadBalancer(REFERENCE_NAME))!.securityGroups).toEqual([own]);
      w.kube.putService({ ...service, metadata: { ...service.metadata, annotations: {} } });
      w.addNode(3);
      w.resetCounters();
    }
    await change(quick, true);
    await change(slow, false);
    const account = await classicAccount(quick);
    expect(account).toEqual(await classicAccount(slow));
    const managed = [...quick.ec2.securityGroups.values()].find((g) => g.groupName === `k8s-elb-${REFERENCE_NAME}`)!;
    expect(account.loadBalancers[0]!.securityGroups).toEqual([managed.groupId]);
    expect(account.loadBalancers[0]!.instanceIds).toHaveLength(3);
    expect(classicCalls(quick).DescribeLoadBalancerAttributes).toBeGreaterThan(0);
  });

  it("opens a new node group's security group as the full pass does", async () => {
    for (const w of [quick, slow]) {
      putSecondNodeGroup(w);
      w.addNode(3, { group: NEW_GROUP });
    }
    await change(quick, true);
    await change(slow, false);
    expect(await classicAccount(quick)).toEqual(await classicAccount(slow));
    const opened = (await classicAccount(quick)).securityGroups.find((g) => g.name === 'nodes-b')!;
    expect(opened.ingress.length).toBeGreaterThan(0);
  });
});
