import { beforeEach, describe, expect, it } from 'vitest';
import type { LoadBalancer } from '../../shared/aws/elbv2-port.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { createServiceWorld, type ServiceWorld, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { DEFAULT_REPLACEMENT_GRACE_SECONDS, type ServiceDeps } from './deps.ts';
import { garbageCollectionMessage } from './gc.ts';
import { LBC_SERVICE_FINALIZER, lbcLoadBalancerName } from './lbc/names.ts';
import { lbcWorld } from './testing/lbc.ts';
import { type MoveRecord, moveWatcher } from './testing/moves.ts';
import { serviceTesting } from './testing/service.ts';

/**
 * A Service moving between the in-tree way and the AWS Load Balancer Controller's (its type annotation changed), and a
 * resync's quick look at one served the reference's way. A move replaces the load balancer without an outage: after
 * every AWS call and every Kubernetes call of the whole move, the load balancer the Service's status names exists, is
 * active and forwards every port to a target group with a healthy target.
 */

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
beforeEach(() => {
  w = createServiceWorld();
  lbc = lbcWorld(w);
  // New targets stay `initial` for a few looks: a status moved before health checks pass would show.
  w.elbv2.initialDescribes = 4;
  w.addNode(1);
  w.addNode(2);
});
const { service, hostname, onlyLb, groupsOf, targetsOf } = serviceTesting(() => w);
const uid = () => service().metadata.uid!;
const lbs = () => [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
/** A security group made for the Service alone (its ownership tag names it). */
const ownGroup = (id: string) => w.ec2.securityGroups.get(id)?.tags['kubernetes.io/service-name'] === 'default/web';
const listenerGroups = (lb: LoadBalancer) => w.elbv2.listenersOf(lb.arn).map((l) => l.targetGroupArn!);
const outage = () => moveWatcher(w).outage();
const watched = (deps: ServiceDeps) => moveWatcher(w).watched(deps);

/** The Service built the way its annotations ask, with every target healthy (as health checks would make it). */
async function serving(annotations: Record<string, string>) {
  w.putService('web', { ports: WEB_PORTS, annotations });
  await lbc.converge();
  const lb = onlyLb();
  for (const group of listenerGroups(lb)) {
    for (const t of w.elbv2.targetsOf(group)) w.elbv2.setTargetHealth(group, t.target.id, 'healthy');
  }
  expect(outage()).toBeUndefined();
  return { lb, groups: listenerGroups(lb), securityGroups: lb.securityGroups.filter(ownGroup) };
}

async function move(annotations: Record<string, string>, collect = true) {
  const { seen, deps } = watched(lbc.deps);
  w.kube.mutateService('default', 'web', (s) => {
    s.metadata.annotations = annotations;
  });
  await lbc.converge('web', { deps });
  if (!collect) return seen;
  // A deleted load balancer's network interfaces hold its security group for a while: the garbage collector's then.
  w.clock.advance(w.elbv2.eniDrainMs);
  await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: `gc-${++collections}` })], deps);
  return seen;
}
let collections = 0;

function expectWithoutOutage(seen: MoveRecord, old: LoadBalancer, now: LoadBalancer) {
  expect(seen.outages).toEqual([]);
  // Not a vacuous look: the two served side by side, and the old one went only after the grace.
  expect(seen.both).toBeGreaterThan(0);
  const movedAt = seen.namedAt.get(now.name);
  const goneAt = seen.goneAt.get(old.name);
  expect(movedAt).toBeDefined();
  expect(goneAt).toBeDefined();
  expect(goneAt! - movedAt!).toBeGreaterThanOrEqual(DEFAULT_REPLACEMENT_GRACE_SECONDS * 1000);
  // Both finalizers were held while both load balancers could exist.
  expect(seen.finalizers).toContain([FINALIZER_LOAD_BALANCER_CLEANUP, LBC_SERVICE_FINALIZER].sort().join(','));
}

function expectOnlyOf(now: LoadBalancer, old: { lb: LoadBalancer; groups: string[]; securityGroups: string[] }) {
  expect(lbs().map((lb) => lb.name)).toEqual([now.name]);
  for (const group of old.groups) expect(w.elbv2.targetGroups.has(group)).toBe(false);
  // The old one's own security group went with it (a group the new one uses, or the shared backend group, stays).
  const ownGroups = old.securityGroups.filter((id) => !now.securityGroups.includes(id));
  expect(ownGroups).toHaveLength(1);
  for (const id of ownGroups) expect(w.ec2.securityGroups.has(id)).toBe(false);
  expect(hostname()).toBe(now.dnsName);
  expect(outage()).toBeUndefined();
}

describe('moving', () => {
  it('in-tree to the reference way: the in-tree load balancer serves until the reference-named one does, then goes after the grace', async () => {
    const old = await serving({});
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);

    const seen = await move({ [ANNOTATION.type]: 'external' });

    const now = onlyLb();
    expect(now.name).toBe(
      lbcLoadBalancerName({ clusterName: CLUSTER, namespace: 'default', name: 'web', uid: uid() }, 'internal'),
    );
    expectWithoutOutage(seen, old.lb, now);
    expectOnlyOf(now, old);
    expect(service().metadata.finalizers).toEqual([LBC_SERVICE_FINALIZER]);
  });

  it('the reference way back to in-tree: its load balancer serves until an in-tree one does, then goes after the grace', async () => {
    const old = await serving({ [ANNOTATION.type]: 'external' });
    expect(service().metadata.finalizers).toEqual([LBC_SERVICE_FINALIZER]);

    const seen = await move({});

    const now = onlyLb();
    expect(now.name).toMatch(/^test-clus[a-z]*-default-web-/);
    expectWithoutOutage(seen, old.lb, now);
    expectOnlyOf(now, old);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
  });

  it.each([
    ['in-tree to the reference way', {}, { [ANNOTATION.type]: 'external' }],
    ['the reference way back to in-tree', { [ANNOTATION.type]: 'external' }, {}],
  ])("%s: the old one's own security group goes with it where AWS frees it at once", async (_, from, to) => {
    w.elbv2.eniDrainMs = 0;
    const old = await serving(from);
    await move(to, false);
    expectOnlyOf(onlyLb(), old);
  });

  it.each([
    ['in-tree to the reference way', {}, { [ANNOTATION.type]: 'external' }, FINALIZER_LOAD_BALANCER_CLEANUP],
    ['the reference way back to in-tree', { [ANNOTATION.type]: 'external' }, {}, LBC_SERVICE_FINALIZER],
  ])(
    '%s, driven by resyncs with the quick look on: the old finalizer stays while the old load balancer does',
    async (_, from, to, oldFinalizer) => {
      lbc.deps.resyncQuickCheck = true;
      const old = await serving(from);
      const { seen, deps } = watched(lbc.deps);
      w.kube.mutateService('default', 'web', (s) => {
        s.metadata.annotations = to;
      });
      // Each pass a resync's first delivery (the quick look is allowed), a minute apart, each followed by a garbage
      // collection, until the move is done.
      let early = 0;
      const done = () =>
        !w.elbv2.loadBalancers.has(old.lb.arn) && !service().metadata.finalizers?.includes(oldFinalizer);
      for (let round = 0; round < 60 && !done(); round++) {
        await lbc.pass('web', { deps });
        await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: `gc-${++collections}` })], deps);
        if (w.elbv2.loadBalancers.has(old.lb.arn) && !service().metadata.finalizers?.includes(oldFinalizer)) early += 1;
        w.clock.advance(60_000);
      }
      expect(early).toBe(0);
      const now = onlyLb();
      expectWithoutOutage(seen, old.lb, now);
      expect(service().metadata.finalizers).toHaveLength(1);
      expect(service().metadata.finalizers).not.toContain(oldFinalizer);
    },
  );

  it('there and back again: each move keeps the Service served, and the account ends with one load balancer', async () => {
    const first = await serving({});
    const there = await move({ [ANNOTATION.type]: 'external' });
    const middle = onlyLb();
    expectWithoutOutage(there, first.lb, middle);
    const back = await move({});
    const last = onlyLb();
    expectWithoutOutage(back, middle, last);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    expect(hostname()).toBe(last.dnsName);
  });

  it('deleted in the middle of a move: both load balancers and both finalizers go', async () => {
    await serving({});
    w.elbv2.provisioningDescribes = 1_000;
    const { deps } = watched(lbc.deps);
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = { [ANNOTATION.type]: 'external' };
    });
    await lbc.pass('web', { deps });
    expect(lbs()).toHaveLength(2);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP, LBC_SERVICE_FINALIZER]);

    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.deletionTimestamp = new Date(w.clock.now()).toISOString();
    });
    await lbc.converge();
    expect(lbs()).toEqual([]);
    expect([...w.elbv2.targetGroups.values()]).toEqual([]);
    expect(w.kube.services.get('default/web')).toBeUndefined();
  });
});

describe('a resync', () => {
  it('with the quick look on, finds the reference-named load balancer in line and writes nothing', async () => {
    const deps = { ...lbc.deps, resyncQuickCheck: true };
    w.putService('web', { annotations: { [ANNOTATION.type]: 'external' } });
    await lbc.converge('web', { deps });
    w.resetCounters();
    await lbc.pass('web', { deps });
    expect(w.awsWrites()).toBe(0);
    expect(w.kube.writeCount()).toBe(0);
    // A quick look: the load balancer, its tags and its target groups, not the full pass's reads.
    expect(w.awsCalls()).toBeLessThanOrEqual(4);
  });
});

describe('a Node-set change', () => {
  it('registers a new Node as an instance target of the reference-named load balancer', async () => {
    const deps = { ...lbc.deps, resyncQuickCheck: true };
    w.putService('web', { annotations: { [ANNOTATION.type]: 'external' } });
    await lbc.converge('web', { deps });
    const added = w.addNode(3);
    await w.converge(w.nodeSetKeys(['web']), deps);
    const [group] = groupsOf(onlyLb().arn);
    expect(targetsOf(group!.arn)).toContain(`${added.instance.instanceId}:30080`);
  });
});
