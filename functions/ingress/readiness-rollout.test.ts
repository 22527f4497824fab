import { beforeEach, describe, expect, it } from 'vitest';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { createIngressWorld, type IngressWorld } from '../../test/helpers/ingress-world.ts';
import { gatedBindings } from '../relay/webhook/mutate-pod-readiness.ts';
import { FULL_PASS_INTERVAL_MS } from './apply/quick.ts';
import { backend, makeIngress, makeService, path, rule } from './model/testing/builders.ts';

/**
 * Pods behind an ip target group of an Ingress, with the readiness gate of its stack binding: the Ingress pass
 * registers a Pod held back only by that gate (else it is never Ready), keeps it registered, and a rolling update
 * waits for the load balancer. The test plays the Deployment controller, the EndpointSlice controller, the kubelet,
 * the relay's Pod webhook and ELB's health checks; the Ingress and binding controllers are the real ones, on the
 * same fakes.
 */

const NAMESPACE = 'shop';
const GROUP: GroupId = { explicit: false, namespace: NAMESPACE, name: 'web' };
const INJECT_LABEL = 'elbv2.k8s.aws/pod-readiness-gate-inject';

let w: IngressWorld;

beforeEach(() => {
  w = createIngressWorld();
  w.addNode(1);
  w.kube.workloads.putNamespace({ metadata: { name: NAMESPACE, labels: { [INJECT_LABEL]: 'enabled' } } });
  const service = makeService({ name: 'web', namespace: NAMESPACE });
  w.kube.putService({ ...service, spec: { ...service.spec, selector: { app: 'web' } } });
  w.ingresses.putIngress(
    makeIngress({
      name: 'web',
      namespace: NAMESPACE,
      annotations: { 'target-type': 'ip' },
      rules: [rule(undefined, path('/', 'Prefix', backend('web', 80)))],
    }),
  );
});

interface Replica {
  name: string;
  ip: string;
}

/** The relay's Pod webhook: the gates of the namespace's ip bindings whose Service selects the Pod. */
async function admittedGates(labels: Record<string, string>): Promise<string[]> {
  const namespace = w.kube.workloads.namespaces.get(NAMESPACE);
  if (namespace?.metadata.labels?.[INJECT_LABEL] !== 'enabled') return [];
  const service = await w.kube.getService(NAMESPACE, 'web');
  const bindings = await w.bindings.listTargetGroupBindings(NAMESPACE);
  return gatedBindings(labels, service ? [service] : [], bindings).map((b) => READINESS_GATE_PREFIX + b);
}

/** The Deployment controller creates a Pod (through the webhook); it runs on node-1, its containers ready. */
async function createPod(r: Replica): Promise<void> {
  const labels = { app: 'web' };
  const gates = await admittedGates(labels);
  w.kube.putPod({
    metadata: { name: r.name, namespace: NAMESPACE, labels },
    spec: { nodeName: 'node-1', readinessGates: gates.map((conditionType) => ({ conditionType })) },
    status: {
      phase: 'Running',
      podIP: r.ip,
      podIPs: [{ ip: r.ip }],
      conditions: [
        { type: 'ContainersReady', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
    },
  });
  kubelet(r.name, true);
}

const pod = (name: string): Pod | undefined => w.kube.workloads.get(NAMESPACE, name);

/** The kubelet: Ready when the containers are and (when honoured) every readiness gate's condition is True. */
function kubelet(name: string, honourGates: boolean): boolean {
  const current = pod(name)!;
  const conditions = current.status?.conditions ?? [];
  const isTrue = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
  const gates = ((current.spec?.readinessGates ?? []) as { conditionType: string }[]).map((g) => g.conditionType);
  const ready = isTrue('ContainersReady') && (!honourGates || gates.every(isTrue));
  const next = conditions.map((c) => (c.type === 'Ready' ? { ...c, status: ready ? 'True' : 'False' } : c));
  w.kube.putPod({ ...current, status: { ...current.status, conditions: next } } as Pod);
  return ready;
}

/** The EndpointSlice controller: an endpoint per Pod on 8080, ready as the Pod is. */
function syncSlice(replicas: readonly Replica[]): void {
  w.kube.putEndpointSlice({
    metadata: { name: 'web-abc12', namespace: NAMESPACE, labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: replicas.map((r) => {
      const ready = (pod(r.name)?.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
      return {
        addresses: [r.ip],
        conditions: { ready, serving: ready, terminating: false },
        nodeName: 'node-1',
        targetRef: { kind: 'Pod', name: r.name, namespace: NAMESPACE },
      };
    }),
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  });
}

const targetGroup = () => [...w.elbv2.targetGroups.values()].map((g) => g.tg).find((g) => g.targetType === 'ip')!;
const registered = () =>
  w.elbv2
    .targetsOf(targetGroup().arn)
    .filter((t) => t.state !== 'draining')
    .map((t) => `${t.target.id}:${t.target.port}`)
    .sort();
const healthy = () => w.elbv2.targetsOf(targetGroup().arn).filter((t) => t.state === 'healthy').length;

/** ELB's health checks: every target registered and not yet checked passes them now. */
function healthChecks(): void {
  const arn = targetGroup().arn;
  for (const t of w.elbv2.targetsOf(arn)) {
    if (t.state === 'initial' || t.state === 'unused') w.elbv2.setTargetHealth(arn, t.target.id, 'healthy');
  }
}

/**
 * One pass of each controller: the Ingress group's, then the stack binding's (its Pods' gates, and their targets).
 * `full`: the Ingress pass looks at every resource (as when the hour of its quick look is over, or another member
 * changed), so it deregisters whatever it does not count as a target, even one the binding controller registered.
 */
async function controllers(full = false): Promise<void> {
  if (full) w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
  await w.converge([GROUP], w.stackBindingDeps);
  for (const b of await w.bindings.listTargetGroupBindings(NAMESPACE)) {
    await w.reconcileBinding(NAMESPACE, b.metadata.name);
  }
}

describe("a Pod waiting only for its target group's gate", () => {
  /** Three serving Pods, the group in line; then a fourth created through the webhook, gated, not Ready. */
  async function withGatedPod(): Promise<Replica[]> {
    const replicas = [1, 2, 3].map((i) => ({ name: `web-${i}`, ip: `10.0.20.${10 + i}` }));
    for (const r of replicas) await createPod(r);
    syncSlice(replicas);
    await controllers();
    const fresh = { name: 'web-4', ip: '10.0.20.14' };
    await createPod(fresh);
    expect(pod('web-4')!.spec!.readinessGates).toEqual([{ conditionType: READINESS_GATE_PREFIX + targetGroup().name }]);
    expect(kubelet('web-4', true)).toBe(false);
    syncSlice([...replicas, fresh]);
    return [...replicas, fresh];
  }

  it('is registered by the Ingress pass, and a later full pass keeps it', async () => {
    await withGatedPod();
    await w.converge([GROUP], w.stackBindingDeps);
    expect(registered()).toContain('10.0.20.14:8080');

    w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
    await w.converge([GROUP], w.stackBindingDeps);
    expect(registered()).toEqual(['10.0.20.11:8080', '10.0.20.12:8080', '10.0.20.13:8080', '10.0.20.14:8080']);
  });

  it('gets Ready once its target is healthy, through the binding controller', async () => {
    await withGatedPod();
    await controllers();
    expect(kubelet('web-4', true)).toBe(false);
    healthChecks();
    await controllers();
    expect(kubelet('web-4', true)).toBe(true);
  });

  it('is not registered with stack bindings off (the readiness gate then has nothing to wait for)', async () => {
    await withGatedPod();
    w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
    await w.converge([GROUP]);
    expect(registered()).not.toContain('10.0.20.14:8080');
  });
});

/**
 * A rolling update of a 3-replica Deployment (maxSurge 1, maxUnavailable 0): a new Pod, and an old one deleted once
 * the new one is Ready. Answers the fewest healthy targets seen after any step, and where it ended.
 */
async function rollOut(honourGates: boolean, fullPasses = false) {
  w.elbv2.initialDescribes = 1000; // health moves only when the test's health checks say so
  let replicas: Replica[] = [1, 2, 3].map((i) => ({ name: `old-${i}`, ip: `10.0.20.${10 + i}` }));
  for (const r of replicas) await createPod(r);
  syncSlice(replicas);
  await controllers();
  healthChecks();
  expect(healthy()).toBe(3);

  let lowest = Number.POSITIVE_INFINITY;
  const observe = () => {
    lowest = Math.min(lowest, healthy());
  };
  // Every AWS state the controllers' passes go through is looked at too, not only where each pass ends.
  w.elbv2.beforeCall = observe;
  const step = async () => {
    await controllers(fullPasses);
    observe();
  };
  for (let i = 1; i <= 3; i++) {
    const fresh = { name: `new-${i}`, ip: `10.0.20.${20 + i}` };
    await createPod(fresh);
    expect(pod(fresh.name)!.spec!.readinessGates).toHaveLength(1);
    replicas = [...replicas, fresh];
    let ready = kubelet(fresh.name, honourGates);
    syncSlice(replicas);
    for (let tries = 0; tries < 10 && !ready; tries++) {
      await step();
      ready = kubelet(fresh.name, honourGates);
      if (ready) break;
      healthChecks(); // time passes: what is registered gets checked
      observe();
    }
    expect(ready).toBe(true);
    syncSlice(replicas);
    await step();
    // maxUnavailable 0: an old Pod goes only once the new one is Ready.
    const old = replicas.find((r) => r.name.startsWith('old-'))!;
    w.kube.workloads.delete(NAMESPACE, old.name, { gracePeriodSeconds: 0 });
    replicas = replicas.filter((r) => r !== old);
    syncSlice(replicas);
    await step();
  }
  healthChecks();
  await step();
  w.elbv2.beforeCall = undefined;
  return { lowest, registered: registered(), healthy: healthy() };
}

describe('a rolling update behind an Ingress with ip targets and stack bindings', () => {
  it.each([
    ['quick looks', false],
    ['full passes', true],
  ])('never has fewer than 3 healthy targets, and ends on the new Pods (Ingress %s)', async (_, full) => {
    const result = await rollOut(true, full);
    expect(result.lowest).toBeGreaterThanOrEqual(3);
    expect(result.registered).toEqual(['10.0.20.21:8080', '10.0.20.22:8080', '10.0.20.23:8080']);
    expect(result.healthy).toBe(3);
  });

  it('without the gates honoured, the same rollout falls below 3 healthy targets', async () => {
    const result = await rollOut(false);
    expect(result.lowest).toBeLessThan(3);
  });
});
