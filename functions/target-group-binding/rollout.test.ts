import { describe, expect, it } from 'vitest';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import { healthChecks, healthy, type Place, putPod, rollOut, syncSlice } from '../../test/helpers/rollout.ts';
import { createTgbWorld, NAMESPACE } from './testing/world.ts';

/**
 * A rolling update of a 3-replica Deployment (maxSurge 1, maxUnavailable 0) played through the fakes
 * (test/helpers/rollout.ts: the Deployment and EndpointSlice controllers, the kubelet, ELB's health checks); the
 * binding controller is the real one. With the readiness gate honoured, the target group never has fewer than 3
 * healthy targets; a kubelet that does not wait for the gate (a Pod Ready once its containers are) lets it drop below.
 */

const GATE = `${READINESS_GATE_PREFIX}web`;

async function rollOutBehindBinding(honourGates: boolean) {
  const w = createTgbWorld();
  w.addPodNode(1);
  w.putWebService();
  const group = await w.targetGroup('web-ip');
  w.elbv2.initialDescribes = 1000; // health moves only when the test's health checks say so
  w.putBinding('web', { targetGroupARN: group.arn });
  const place: Place = { kube: w.kube, namespace: NAMESPACE, service: 'web' };
  const s = { ...place, elbv2: w.elbv2, group: () => group.arn };

  // The old ReplicaSet, serving.
  const replicas = [1, 2, 3].map((i) => ({ name: `old-${i}`, ip: `10.0.20.${10 + i}` }));
  for (const r of replicas) putPod(place, r, []);
  syncSlice(place, replicas);
  await w.reconcile('web');
  healthChecks(s);
  expect(healthy(s)).toBe(3);

  return rollOut(
    {
      ...s,
      gate: () => GATE,
      admit: async () => [GATE], // the Pod template carries the gate of the user's binding
      passes: async () => {
        await w.reconcile('web');
      },
      fresh: (i) => ({ name: `new-${i + 1}`, ip: `10.0.20.${21 + i}` }),
      honourGates,
    },
    replicas,
  );
}

describe('a gated rolling update', () => {
  it('never has fewer than 3 healthy targets, and ends on the new Pods', async () => {
    const result = await rollOutBehindBinding(true);
    expect(result.lowest).toBeGreaterThanOrEqual(3);
    expect(result.registered).toEqual(['10.0.20.21:8080', '10.0.20.22:8080', '10.0.20.23:8080']);
    expect(result.healthy).toBe(3);
  });

  it('without the gate honoured, the same rollout falls below 3 healthy targets', async () => {
    const result = await rollOutBehindBinding(false);
    expect(result.lowest).toBeLessThan(3);
  });
});
