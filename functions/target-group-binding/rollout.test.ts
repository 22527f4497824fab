import { describe, expect, it } from 'vitest';
import { READINESS_GATE_PREFIX } from '../../shared/k8s/tgb-types.ts';
import { createTgbWorld, NAMESPACE } from './testing/world.ts';

/**
 * A rolling update of a 3-replica Deployment (maxSurge 1, maxUnavailable 0) played through the fakes: the test is the
 * Deployment controller, the EndpointSlice controller and ELB's health checks; the binding controller is the real one.
 * With the readiness gate honoured, the target group never has fewer than 3 healthy targets; a Deployment controller
 * that does not wait for the gate (a Pod counted ready once its containers are) drops below.
 */

const GATE = `${READINESS_GATE_PREFIX}web`;

interface Replica {
  name: string;
  ip: string;
}

async function rollOut(honourGate: boolean) {
  const w = createTgbWorld();
  w.addPodNode(1);
  w.putWebService();
  const group = await w.targetGroup('web-ip');
  w.elbv2.initialDescribes = 1000; // health moves only when the test's health checks say so
  w.putBinding('web', { targetGroupARN: group.arn });

  const ready = new Set<string>();
  let replicas: Replica[] = [1, 2, 3].map((i) => ({ name: `old-${i}`, ip: `10.0.20.${10 + i}` }));
  /** The EndpointSlice controller: an endpoint per Pod, ready as the Pod is. */
  const syncSlice = () => w.putSlice(replicas.map((r) => ({ pod: r.name, ip: r.ip, ready: ready.has(r.name) })));
  /** ELB's health checks: every target registered and still initial passes them now. */
  const healthChecks = () => {
    for (const t of w.elbv2.targetsOf(group.arn)) {
      if (t.state === 'initial') w.elbv2.setTargetHealth(group.arn, t.target.id, 'healthy');
    }
  };
  let lowest = Number.POSITIVE_INFINITY;
  const observe = () => {
    lowest = Math.min(lowest, w.healthy(group.arn));
  };
  const pass = async () => {
    await w.reconcile('web');
    observe();
  };
  /** The kubelet: a Pod is Ready when its containers are and (if honoured) its readiness gate is True. */
  const podReady = (r: Replica) => {
    const conditions = w.kube.workloads.get(NAMESPACE, r.name)?.status?.conditions ?? [];
    const gateTrue = conditions.some((c) => c.type === GATE && c.status === 'True');
    return !honourGate || gateTrue;
  };

  // The old ReplicaSet, serving.
  for (const r of replicas) {
    w.putPod(r.name, r.ip);
    ready.add(r.name);
  }
  syncSlice();
  await w.reconcile('web');
  healthChecks();
  expect(w.healthy(group.arn)).toBe(3);

  for (let i = 1; i <= 3; i++) {
    // Surge: one new Pod, with the gate, its containers ready, not Ready yet.
    const fresh = { name: `new-${i}`, ip: `10.0.20.${20 + i}` };
    w.putPod(fresh.name, fresh.ip, { gates: ['web'], ready: false });
    replicas = [...replicas, fresh];
    syncSlice();
    for (let step = 0; step < 10 && !ready.has(fresh.name); step++) {
      await pass();
      if (podReady(fresh)) {
        ready.add(fresh.name);
        syncSlice();
        await pass();
        break;
      }
      // Time passes: the health checks of what is registered run.
      healthChecks();
      observe();
    }
    expect(ready.has(fresh.name)).toBe(true);
    // maxUnavailable 0: an old Pod goes only once the new one is Ready.
    const old = replicas.find((r) => r.name.startsWith('old-'))!;
    w.kube.workloads.delete(NAMESPACE, old.name, { gracePeriodSeconds: 0 });
    replicas = replicas.filter((r) => r !== old);
    ready.delete(old.name);
    syncSlice();
    await pass();
  }
  await pass();
  return { lowest, registered: w.registered(group.arn), healthy: w.healthy(group.arn) };
}

describe('a gated rolling update', () => {
  it('never has fewer than 3 healthy targets, and ends on the new Pods', async () => {
    const result = await rollOut(true);
    expect(result.lowest).toBeGreaterThanOrEqual(3);
    expect(result.registered).toEqual(['10.0.20.21:8080', '10.0.20.22:8080', '10.0.20.23:8080']);
    expect(result.healthy).toBe(3);
  });

  it('without the gate honoured, the same rollout falls below 3 healthy targets', async () => {
    const result = await rollOut(false);
    expect(result.lowest).toBeLessThan(3);
  });
});
