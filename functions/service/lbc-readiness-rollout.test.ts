import { describe, expect, it } from 'vitest';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import {
  bindingPasses,
  healthChecks,
  healthy,
  type Place,
  putPod,
  type Replica,
  rollOut,
  syncSlice,
  webhookGates,
} from '../../test/helpers/rollout.ts';
import { createServiceWorld } from '../../test/helpers/service-world.ts';
import { putIpService, stackWorld } from './testing/stack.ts';

/**
 * A rolling update of a 3-replica Deployment (maxSurge 1, maxUnavailable 0) behind the Network Load Balancer of a
 * Service the reference serves (`external`, ip targets), played through the fakes (test/helpers/rollout.ts: the
 * Deployment controller, the EndpointSlice controller, the kubelet (a Pod is Ready when its containers are and its
 * readiness gates are True), the relay's Pod webhook (the gates `gatedBindings` gives a new Pod) and ELB's health
 * checks); the service controller and the binding controller are the real ones, the first keeping the stack binding
 * and the targets, the second the gate. With the gate honoured the target group never has fewer than 3 healthy
 * targets; a kubelet that does not wait for it (a Pod Ready once its containers are) lets it drop below.
 */

async function rollOutBehindNlb(honourGates: boolean) {
  const w = createServiceWorld();
  const stack = stackWorld(w);
  w.addNode(1);
  w.elbv2.initialDescribes = 1000; // health moves only when the test's health checks say so
  const place: Place = { kube: w.kube, namespace: 'default', service: 'web' };

  // The old ReplicaSet, serving before the Service's load balancer was made (so its Pods have no gate).
  const replicas: Replica[] = [1, 2, 3].map((i) => ({ name: `old-${i}`, ip: `10.0.20.${10 + i}` }));
  for (const r of replicas) putPod(place, r, []);
  syncSlice(place, replicas);
  putIpService(w);
  await stack.converge();
  const binding = stack.list()[0]!;
  const s = { ...place, elbv2: w.elbv2, group: () => binding.spec.targetGroupARN! };
  healthChecks(s);
  expect(healthy(s)).toBe(3);

  return rollOut(
    {
      ...s,
      gate: () => READINESS_GATE_PREFIX + binding.metadata.name,
      admit: (labels) => webhookGates(place, stack.bindings, labels),
      passes: async () => {
        await stack.pass();
        await bindingPasses(place, stack.bindings, stack.tgbDeps);
      },
      fresh: (i) => ({ name: `new-${i + 1}`, ip: `10.0.20.${21 + i}` }),
      honourGates,
    },
    replicas,
  );
}

describe('a gated rolling update behind the NLB of a Service the reference serves', () => {
  it('never has fewer than 3 healthy targets, and ends on the new Pods', async () => {
    const result = await rollOutBehindNlb(true);
    expect(result.observations).toBeGreaterThan(20);
    expect(result.lowest).toBeGreaterThanOrEqual(3);
    expect(result.registered).toEqual(['10.0.20.21:8080', '10.0.20.22:8080', '10.0.20.23:8080']);
    expect(result.healthy).toBe(3);
  });

  it('without the gate honoured, the same rollout falls below 3 healthy targets', async () => {
    const result = await rollOutBehindNlb(false);
    expect(result.lowest).toBeLessThan(3);
  });
});
