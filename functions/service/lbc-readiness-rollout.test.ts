import { describe, expect, it } from 'vitest';
import { fakeTgbControllerKube } from '../../shared/k8s/fakes/target-group-bindings.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { createServiceWorld, VPC } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { gatedBindings } from '../relay/webhook/mutate-pod-readiness.ts';
import type { TgbDeps } from '../target-group-binding/deps.ts';
import { targetGroupBindingReconciler } from '../target-group-binding/reconciler.ts';
import { putIpService, putWebPod, putWebSlice, stackWorld } from './testing/stack.ts';

/**
 * A rolling update of a 3-replica Deployment (maxSurge 1, maxUnavailable 0) behind the Network Load Balancer of a
 * Service the reference serves (`external`, ip targets), played through the fakes. The test is the Deployment
 * controller, the EndpointSlice controller, the kubelet (a Pod is Ready when its containers are and its readiness
 * gates are True), the relay's Pod webhook (the gates `gatedBindings` gives a new Pod) and ELB's health checks; the
 * service controller and the binding controller are the real ones, the first keeping the stack binding and the
 * targets, the second the gate. With the gate honoured the target group never has fewer than 3 healthy targets; a
 * kubelet that does not wait for it (a Pod Ready once its containers are) lets it drop below.
 */

interface Replica {
  name: string;
  ip: string;
}

async function rollOut(honourGate: boolean) {
  const w = createServiceWorld();
  const stack = stackWorld(w);
  const tgbDeps: TgbDeps = {
    clusterName: CLUSTER,
    vpcId: VPC,
    readinessRequeueSeconds: 10,
    checkLbcLease: false,
    kube: fakeTgbControllerKube(stack.bindings, w.kube),
    ec2: w.ec2Port,
    elbv2: w.elbv2Port,
    clock: w.clock,
    log: w.serviceDeps.log,
    metrics: w.metrics,
  };
  w.addNode(1);
  w.elbv2.initialDescribes = 1000; // health moves only when the test's health checks say so

  let replicas: Replica[] = [1, 2, 3].map((i) => ({ name: `old-${i}`, ip: `10.0.20.${10 + i}` }));
  const pod = (r: Replica): Pod => w.kube.workloads.get('default', r.name)!;
  const isReady = (r: Replica) => pod(r).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  /** The EndpointSlice controller: an endpoint per Pod, ready as the Pod is. */
  const syncSlice = () =>
    putWebSlice(
      w,
      replicas.map((r) => ({ pod: r.name, ip: r.ip, ready: isReady(r) })),
    );
  /** The kubelet: Ready when the containers are and (if honoured) every readiness gate is True. */
  const kubelet = () => {
    for (const r of replicas) {
      const current = pod(r);
      const conditions = current.status?.conditions ?? [];
      const gates = ((current.spec?.readinessGates ?? []) as { conditionType?: string }[]).map((g) => g.conditionType);
      const gatesTrue = gates.every((g) => conditions.some((c) => c.type === g && c.status === 'True'));
      const ready = !honourGate || gatesTrue;
      if (ready === isReady(r)) continue;
      const others = conditions.filter((c) => c.type !== 'Ready');
      w.kube.putPod({
        ...current,
        status: { ...current.status, conditions: [...others, { type: 'Ready', status: ready ? 'True' : 'False' }] },
      });
    }
  };

  // The old ReplicaSet, serving before the Service's load balancer was made (so its Pods have no gate).
  for (const r of replicas) putWebPod(w, r.name, r.ip);
  syncSlice();
  putIpService(w);
  await stack.converge();
  const binding = stack.list()[0]!;
  const group = binding.spec.targetGroupARN!;
  const healthy = () => w.elbv2.targetsOf(group).filter((t) => t.state === 'healthy').length;
  /** ELB's health checks: every target registered and still initial passes them now. */
  const healthChecks = () => {
    for (const t of w.elbv2.targetsOf(group)) {
      if (t.state === 'initial') w.elbv2.setTargetHealth(group, t.target.id, 'healthy');
    }
  };
  let lowest = Number.POSITIVE_INFINITY;
  let steps = 0;
  const observe = () => {
    lowest = Math.min(lowest, healthy());
    steps++;
  };
  const servicePass = async () => {
    await stack.pass();
    observe();
  };
  const bindingPass = async () => {
    await targetGroupBindingReconciler.reconcile(
      { kind: 'TargetGroupBinding', namespace: 'default', name: binding.metadata.name },
      tgbDeps,
      undefined,
      { hints: [], payloads: [], receiveCount: 1 },
    );
    observe();
  };
  healthChecks();
  expect(healthy()).toBe(3);

  for (let i = 1; i <= 3; i++) {
    // Surge: one new Pod, given its gate by the webhook at creation, its containers ready, not Ready yet.
    const fresh = { name: `new-${i}`, ip: `10.0.20.${20 + i}` };
    const gates = gatedBindings({ app: 'web' }, [...w.kube.services.values()], stack.list());
    expect(gates).toEqual([binding.metadata.name]);
    putWebPod(w, fresh.name, fresh.ip, { ready: false, gates });
    replicas = [...replicas, fresh];
    kubelet();
    syncSlice();
    for (let step = 0; step < 10 && !isReady(fresh); step++) {
      await servicePass();
      await bindingPass();
      kubelet();
      if (isReady(fresh)) break;
      // Time passes: the health checks of what is registered run.
      healthChecks();
      observe();
    }
    expect(isReady(fresh)).toBe(true);
    syncSlice();
    await servicePass();
    // maxUnavailable 0: an old Pod goes only once the new one is Ready.
    const old = replicas.find((r) => r.name.startsWith('old-'))!;
    w.kube.workloads.delete('default', old.name, { gracePeriodSeconds: 0 });
    replicas = replicas.filter((r) => r !== old);
    syncSlice();
    await servicePass();
    await bindingPass();
    healthChecks();
    observe();
  }
  const registered = w.elbv2
    .targetsOf(group)
    .filter((t) => t.state !== 'draining')
    .map((t) => `${t.target.id}:${t.target.port}`)
    .sort();
  return { lowest, steps, registered, healthy: healthy() };
}

describe('a gated rolling update behind the NLB of a Service the reference serves', () => {
  it('never has fewer than 3 healthy targets, and ends on the new Pods', async () => {
    const result = await rollOut(true);
    expect(result.steps).toBeGreaterThan(20);
    expect(result.lowest).toBeGreaterThanOrEqual(3);
    expect(result.registered).toEqual(['10.0.20.21:8080', '10.0.20.22:8080', '10.0.20.23:8080']);
    expect(result.healthy).toBe(3);
  });

  it('without the gate honoured, the same rollout falls below 3 healthy targets', async () => {
    const result = await rollOut(false);
    expect(result.lowest).toBeLessThan(3);
  });
});
