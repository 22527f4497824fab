import { beforeEach, describe, expect, it } from 'vitest';
import type { LoadBalancer } from '../../shared/aws/elbv2-port.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { countingCalls, crashAfter } from '../../test/helpers/crash.ts';
import { fifoRecord } from '../../test/helpers/records.ts';
import { createServiceWorld, type ServiceWorld, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { ANNOTATION } from './annotations.ts';
import { garbageCollectionMessage } from './gc.ts';
import { REPLACED_AT_TAG, REPLACES_TAG } from './names.ts';
import { serviceReconciler } from './reconciler.ts';

/**
 * A Network Load Balancer replaced by a successor (here: the scheme changes) without an outage. The status moves to
 * the successor only once it serves: a healthy target behind every listener (or no target wanted, or none healthy
 * behind the old one either). The old one then keeps serving for SERVICE_REPLACEMENT_GRACE_SECONDS, for clients
 * still resolving its name (DNS TTLs, external-dns) and connections in flight, before it is deleted. When the
 * status moved is recorded on the old one (a tag), so neither a crash nor a new Lambda shortens the grace.
 */

const GRACE = 360;
let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
  w.addNode(1);
  w.addNode(2);
  w.serviceDeps.replacementGraceSeconds = GRACE;
});

const service = (): Service => w.kube.services.get('default/web')!;
const hostname = () => service().status?.loadBalancer?.ingress?.[0]?.hostname;
const lbs = () => [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
const exists = (lb: LoadBalancer) => w.elbv2.loadBalancers.has(lb.arn);
const tagsOf = (lb: LoadBalancer) => w.elbv2.loadBalancers.get(lb.arn)?.tags ?? {};
const eventsOf = (reason: string) => w.kube.eventsFor('Service', 'web', reason).map((e) => e.message);
/** The target groups behind the listeners, by listener port. */
const groupsOf = (lb: LoadBalancer) =>
  w.elbv2
    .listenersOf(lb.arn)
    .sort((a, b) => a.port - b.port)
    .map((l) => l.targetGroupArn!);
const targetIds = (groupArn: string) => w.elbv2.targetsOf(groupArn).map((t) => t.target.id);
const setHealth = (groupArn: string, state: 'healthy' | 'unhealthy', ids = targetIds(groupArn)) => {
  for (const id of ids) w.elbv2.setTargetHealth(groupArn, id, state);
};
let sent = 0;
const pass = () => w.reconcile(w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `g${++sent}` }));
const seconds = (n: number) => w.clock.advance(n * 1000);

/**
 * A Service on an NLB whose targets are healthy, then asked to be internal: the successor is built and active,
 * its targets registered and still `initial` (they stay so until a test makes them healthy).
 */
async function replacing(annotations: Record<string, string> = {}) {
  w.putService('web', { ports: WEB_PORTS, annotations });
  await w.converge([w.serviceKey('web')]);
  const [old] = lbs();
  for (const group of groupsOf(old!)) setHealth(group, 'healthy');
  w.elbv2.initialDescribes = 1_000;
  w.kube.mutateService('default', 'web', (s) => {
    s.metadata.annotations = { ...annotations, [ANNOTATION.internal]: 'true' };
  });
  await pass();
  const successor = lbs().find((lb) => lb.name !== old!.name)!;
  w.elbv2.activate(successor.name);
  await pass();
  expect(w.elbv2.loadBalancerNamed(successor.name)!.state).toBe('active');
  return { old: old!, successor };
}

describe('a successor NLB takes the status once it serves', () => {
  it('active with targets still initial: the old one serves and stays in the status; then one healthy target per listener moves it', async () => {
    const { old, successor } = await replacing();
    expect(hostname()).toBe(old.dnsName);
    expect(w.elbv2.listenersOf(old.arn)).toHaveLength(2);

    // A healthy target behind port 80 only: port 443 would have nothing to send to.
    const [port80, port443] = groupsOf(successor);
    setHealth(port80!, 'healthy', targetIds(port80!).slice(0, 1));
    await pass();
    expect(hostname()).toBe(old.dnsName);

    setHealth(port443!, 'healthy', targetIds(port443!).slice(0, 1));
    await pass();
    expect(hostname()).toBe(successor.dnsName);
  });

  it('the old one has no healthy target behind the port either: nothing is lost by moving', async () => {
    const { old, successor } = await replacing();
    for (const group of groupsOf(old)) setHealth(group, 'unhealthy');
    await pass();
    expect(hostname()).toBe(successor.dnsName);
  });

  it('no target wanted (no Node matches target-node-labels): it serves once active', async () => {
    const { successor } = await replacing({ [ANNOTATION.targetNodeLabels]: 'role=none' });
    expect(hostname()).toBe(successor.dnsName);
  });
});

describe('the replaced NLB is kept for SERVICE_REPLACEMENT_GRACE_SECONDS after the status moved', () => {
  async function moved() {
    const { old, successor } = await replacing();
    for (const group of groupsOf(successor)) setHealth(group, 'healthy');
    await pass();
    expect(hostname()).toBe(successor.dnsName);
    return { old, successor, movedAt: w.clock.now() };
  }

  it('serving its listeners and targets meanwhile, marked with when the status moved; deleted once the grace is over', async () => {
    const { old, successor, movedAt } = await moved();
    expect(exists(old)).toBe(true);
    expect(w.elbv2.listenersOf(old.arn)).toHaveLength(2);
    for (const group of groupsOf(old)) expect(targetIds(group)).toHaveLength(2);
    expect(tagsOf(old)[REPLACED_AT_TAG]).toBe(new Date(movedAt).toISOString());
    expect(eventsOf('ReplacingLoadBalancer').at(-1)).toMatch(
      new RegExp(`${successor.name} serves the Service now; ${old.name} .* ${GRACE} s`),
    );

    // Neither the garbage collector nor a pass before the grace is over deletes it.
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-grace' })]);
    expect(exists(old)).toBe(true);
    w.clock.set(movedAt + (GRACE - 1) * 1000);
    await pass();
    expect(exists(old)).toBe(true);
    expect(hostname()).toBe(successor.dnsName);

    seconds(2);
    await pass();
    expect(exists(old)).toBe(false);
    expect(lbs().map((lb) => lb.name)).toEqual([successor.name]);
    expect(tagsOf(successor)[REPLACES_TAG]).toBeUndefined();
    expect(eventsOf('ReplacingLoadBalancer').some((m) => m.includes(`Deleting load balancer ${old.name}`))).toBe(true);
  });

  it('requeued, never slept: the key comes back by itself and the old one goes after the grace', async () => {
    const { old, movedAt } = await moved();
    await w.converge([w.serviceKey('web')]);
    expect(exists(old)).toBe(false);
    expect(w.clock.now()).toBeGreaterThanOrEqual(movedAt + GRACE * 1000);
  });

  it("the Service deleted during the grace: the old one goes too, though its name is no longer the Service's", async () => {
    w.putService('web', { ports: WEB_PORTS });
    await w.converge([w.serviceKey('web')]);
    const [old] = lbs();
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = { [ANNOTATION.name]: 'renamed-web' };
    });
    for (let i = 0; i < 10 && !hostname()?.startsWith('renamed-web-'); i++) {
      await pass();
      seconds(30);
    }
    const renamed = w.elbv2.loadBalancerNamed('renamed-web')!;
    expect(hostname()).toBe(renamed.dnsName);
    expect(exists(old!)).toBe(true);

    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web')]);
    expect(w.kube.services.has('default/web')).toBe(false);
    expect(w.inventory()).toMatchObject({ loadBalancers: [], targetGroups: [] });
  });

  it('SERVICE_REPLACEMENT_GRACE_SECONDS=0: the old one goes in the pass that moves the status', async () => {
    w.serviceDeps.replacementGraceSeconds = 0;
    const { old } = await moved();
    expect(exists(old)).toBe(false);
  });
});

/**
 * Crash injection on both steps: a crash right after any AWS call of the pass that moves the status, and of the pass
 * that deletes the old NLB once the grace is over. Whatever the crash point, the status never names a deleted load
 * balancer, the old one is never deleted before the grace has passed since the status moved, and the account ends
 * as an undisturbed run leaves it.
 */
describe('crash after every AWS call of a replacement', () => {
  type Step = 'move' | 'retire';

  async function upTo(step: Step) {
    w = createServiceWorld();
    w.addNode(1);
    w.addNode(2);
    w.serviceDeps.replacementGraceSeconds = GRACE;
    const { old, successor } = await replacing();
    for (const group of groupsOf(successor)) setHealth(group, 'healthy');
    if (step === 'retire') {
      await pass();
      expect(hostname()).toBe(successor.dnsName);
      seconds(GRACE + 1);
    }
    return { old, successor };
  }

  async function invokeCrashing(n: number | undefined) {
    const deps = w.serviceDeps;
    const wrapped = n === undefined ? countingCalls(deps.elbv2, deps.ec2) : crashAfter(n, deps.elbv2, deps.ec2);
    const [elbv2, ec2] = wrapped.ports;
    const response = await w.invoke(serviceReconciler, { ...deps, elbv2, ec2 }, [
      fifoRecord(w.serviceKey('web', 'default', { eventType: 'MODIFIED', resourceVersion: `crash-${n}` })),
    ]);
    return { response, calls: wrapped.calls() };
  }

  const statusNamesAnNlb = () => lbs().some((lb) => lb.dnsName === hostname());

  it.each<Step>(['move', 'retire'])('of the %s pass: then passes until done', async (step) => {
    await upTo(step);
    await w.converge([w.serviceKey('web')]);
    const expected = w.inventory();
    expect(expected.loadBalancers).toHaveLength(1);

    await upTo(step);
    const { calls: points } = await invokeCrashing(undefined);
    expect(points).toBeGreaterThan(step === 'move' ? 15 : 10);
    for (let n = 1; n <= points; n++) {
      const { old, successor } = await upTo(step);
      const start = w.clock.now();
      const { response } = await invokeCrashing(n);
      expect(response.batchItemFailures).toHaveLength(1);
      expect({ n, status: statusNamesAnNlb() }).toEqual({ n, status: true });
      if (step === 'move') {
        // The status moved in the crashed pass or moves now; either way the old one serves out the grace.
        await pass();
        expect(hostname()).toBe(successor.dnsName);
        w.clock.set(start + (GRACE - 1) * 1000);
        await pass();
        expect({ n, oldKept: exists(old) }).toEqual({ n, oldKept: true });
      }
      await w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `after-${n}` })]);
      expect({ n, ...w.inventory() }).toEqual({ n, ...expected });
      expect(hostname()).toBe(successor.dnsName);
    }
  });
});
