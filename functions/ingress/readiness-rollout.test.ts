import { beforeEach, describe, expect, it } from 'vitest';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { createIngressWorld, type IngressWorld } from '../../test/helpers/ingress-world.ts';
import {
  bindingPasses,
  healthChecks,
  healthy,
  INJECT_LABEL,
  kubelet,
  type Place,
  putPod,
  type Replica,
  registered,
  rollOut,
  syncSlice,
  webhookGates,
} from '../../test/helpers/rollout.ts';
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

let w: IngressWorld;
/** The Deployment's Pods: those of the Service `web`. */
let place: Place;

beforeEach(() => {
  w = createIngressWorld();
  place = { kube: w.kube, namespace: NAMESPACE, service: 'web' };
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

const targetGroup = () => [...w.elbv2.targetGroups.values()].map((g) => g.tg).find((g) => g.targetType === 'ip')!;
const group = () => ({ elbv2: w.elbv2, group: () => targetGroup().arn });
const pod = (name: string): Pod | undefined => w.kube.workloads.get(NAMESPACE, name);
/** The relay's Pod webhook (in a namespace labelled for injection). */
const admit = (labels: Record<string, string>) => webhookGates(place, w.bindings, labels, { namespaceLabel: true });

/** The Deployment controller creates a Pod through the webhook; it runs on node-1, its containers ready. */
async function createPod(r: Replica): Promise<void> {
  putPod(place, r, await admit({ app: 'web' }));
}

/**
 * One pass of each controller: the Ingress group's, then the stack binding's (its Pods' gates, and their targets).
 * `full`: the Ingress pass looks at every resource (as when the hour of its quick look is over, or another member
 * changed), so it deregisters whatever it does not count as a target, even one the binding controller registered.
 */
async function controllers(full = false): Promise<void> {
  if (full) w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
  await w.converge([GROUP], w.stackBindingDeps);
  await bindingPasses(place, w.bindings, w.tgbDeps);
}

describe("a Pod waiting only for its target group's gate", () => {
  /** Three serving Pods, the group in line; then a fourth created through the webhook, gated, not Ready. */
  async function withGatedPod(): Promise<Replica[]> {
    const replicas = [1, 2, 3].map((i) => ({ name: `web-${i}`, ip: `10.0.20.${10 + i}` }));
    for (const r of replicas) await createPod(r);
    syncSlice(place, replicas);
    await controllers();
    const fresh = { name: 'web-4', ip: '10.0.20.14' };
    await createPod(fresh);
    expect(pod('web-4')!.spec!.readinessGates).toEqual([{ conditionType: READINESS_GATE_PREFIX + targetGroup().name }]);
    expect(kubelet(place, 'web-4')).toBe(false);
    syncSlice(place, [...replicas, fresh]);
    return [...replicas, fresh];
  }

  it('is registered by the Ingress pass, and a later full pass keeps it', async () => {
    await withGatedPod();
    await w.converge([GROUP], w.stackBindingDeps);
    expect(registered(group())).toContain('10.0.20.14:8080');

    w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
    await w.converge([GROUP], w.stackBindingDeps);
    expect(registered(group())).toEqual(['10.0.20.11:8080', '10.0.20.12:8080', '10.0.20.13:8080', '10.0.20.14:8080']);
  });

  it('gets Ready once its target is healthy, through the binding controller', async () => {
    await withGatedPod();
    await controllers();
    expect(kubelet(place, 'web-4')).toBe(false);
    healthChecks(group());
    await controllers();
    expect(kubelet(place, 'web-4')).toBe(true);
  });

  it('is not registered with stack bindings off (the readiness gate then has nothing to wait for)', async () => {
    await withGatedPod();
    w.clock.advance(FULL_PASS_INTERVAL_MS + 1000);
    await w.converge([GROUP]);
    expect(registered(group())).not.toContain('10.0.20.14:8080');
  });
});

/**
 * A rolling update of a 3-replica Deployment (maxSurge 1, maxUnavailable 0, test/helpers/rollout.ts): a new Pod, and
 * an old one deleted once the new one is Ready. Answers the fewest healthy targets seen, and where it ended.
 */
async function rollOutBehindIngress(honourGates: boolean, fullPasses = false) {
  w.elbv2.initialDescribes = 1000; // health moves only when the test's health checks say so
  const replicas: Replica[] = [1, 2, 3].map((i) => ({ name: `old-${i}`, ip: `10.0.20.${10 + i}` }));
  for (const r of replicas) await createPod(r);
  syncSlice(place, replicas);
  await controllers();
  healthChecks(group());
  expect(healthy(group())).toBe(3);
  return rollOut(
    {
      ...place,
      ...group(),
      gate: () => READINESS_GATE_PREFIX + targetGroup().name,
      admit,
      passes: () => controllers(fullPasses),
      fresh: (i) => ({ name: `new-${i + 1}`, ip: `10.0.20.${21 + i}` }),
      honourGates,
    },
    replicas,
  );
}

describe('a rolling update behind an Ingress with ip targets and stack bindings', () => {
  it.each([
    ['quick looks', false],
    ['full passes', true],
  ])('never has fewer than 3 healthy targets, and ends on the new Pods (Ingress %s)', async (_, full) => {
    const result = await rollOutBehindIngress(true, full);
    expect(result.lowest).toBeGreaterThanOrEqual(3);
    expect(result.registered).toEqual(['10.0.20.21:8080', '10.0.20.22:8080', '10.0.20.23:8080']);
    expect(result.healthy).toBe(3);
  });

  it('without the gates honoured, the same rollout falls below 3 healthy targets', async () => {
    const result = await rollOutBehindIngress(false);
    expect(result.lowest).toBeLessThan(3);
  });
});
