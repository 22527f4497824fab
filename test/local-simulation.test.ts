import { describe, expect, it } from 'vitest';
import { SIM_WORKLOAD } from '../bin/sim-interruption.ts';
import { createSimulation, SIM_CLASSIC_SERVICE, SIM_SERVICE } from '../bin/simulation.ts';
import { TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { silentLog } from '../shared/observability/log.ts';
import { MetricName } from '../shared/observability/metrics.ts';

describe('npm start scenario (embedded simulation)', () => {
  it('converges: Nodes initialized and routed, stopped one tainted, terminated one deleted, load balancer active, no DLQ', async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 2, log: silentLog });
    await sim.runToCompletion();

    expect(sim.problems()).toEqual([]);
    const [first, stopped, terminated, interrupted, ...rest] = sim.instances;
    const running = [first!, ...rest];
    expect(sim.kube.nodes.has(terminated!.privateDnsName!)).toBe(false);
    expect(sim.kube.nodes.has(interrupted!.privateDnsName!)).toBe(false);
    expect(sim.kube.nodes.get(stopped!.privateDnsName!)!.spec?.taints?.map((t) => t.key)).toEqual([TAINT_SHUTDOWN]);
    for (const instance of running) {
      const node = sim.kube.nodes.get(instance.privateDnsName!)!;
      expect(node.spec?.providerID).toBe(`aws:///${instance.availabilityZone}/${instance.instanceId}`);
      expect(node.spec?.taints?.some((t) => t.key === TAINT_UNINITIALIZED)).toBe(false);
      expect(node.metadata.labels?.['topology.kubernetes.io/zone']).toBe(instance.availabilityZone);
    }
    const routes = [...sim.ec2.routeTables.values()][0]!.routes;
    for (const instance of [stopped!, ...running]) {
      const node = sim.kube.nodes.get(instance.privateDnsName!)!;
      expect(routes).toContainEqual(
        expect.objectContaining({
          destination: node.spec?.podCIDR,
          target: expect.objectContaining({ instanceId: instance.instanceId }),
        }),
      );
      expect(node.status?.conditions).toContainEqual(
        expect.objectContaining({ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }),
      );
    }
    expect(routes.filter((r) => r.destination.startsWith('10.244.'))).toHaveLength(7);
    expect(sim.kube.events.filter((e) => e.reason === 'Synced')).toHaveLength(9);

    // The LoadBalancer Service: an active NLB, its hostname in the status, the ready Nodes as targets.
    const service = sim.kube.services.get(`${SIM_SERVICE.namespace}/${SIM_SERVICE.name}`)!;
    const hostname = service.status?.loadBalancer?.ingress?.[0]?.hostname;
    const lbs = [...sim.elbv2.loadBalancers.values()];
    expect(lbs).toHaveLength(1);
    expect(lbs[0]!.lb).toMatchObject({ dnsName: hostname, state: 'active', scheme: 'internet-facing' });
    expect(service.metadata.finalizers).toContain('service.kubernetes.io/load-balancer-cleanup');
    const targets = [...sim.elbv2.targetGroups.values()].flatMap((tg) => [...tg.targets.values()]);
    expect(
      targets
        .filter((t) => t.state !== 'draining')
        .map((t) => t.target.id)
        .sort(),
    ).toEqual(running.map((i) => i.instanceId).sort());
    const ensured = sim.kube.events.filter((e) => e.reason === 'EnsuredLoadBalancer');
    expect(ensured.map((e) => e.involvedObject.name).sort()).toEqual(['legacy', 'web']);

    // The Service moved over from the reference controller keeps its Classic ELB, with the same Nodes.
    const legacy = sim.kube.services.get(`${SIM_CLASSIC_SERVICE.namespace}/${SIM_CLASSIC_SERVICE.name}`)!;
    const classicName = `a${SIM_CLASSIC_SERVICE.uid.replace(/-/g, '')}`.slice(0, 32);
    const classic = sim.elb.describeNamed(classicName)!;
    expect(legacy.status?.loadBalancer?.ingress?.[0]?.hostname).toBe(classic.DNSName);
    expect(classic.Instances?.map((i) => i.InstanceId).sort()).toEqual(running.map((i) => i.instanceId).sort());
    expect(sim.elbv2.loadBalancers.size).toBe(1);
    expect(sim.kube.events.filter((e) => e.reason === 'DeletingNode')).toHaveLength(2);
  });

  it('a spot interruption: the Node marked, out of the load balancers, drained within its PDB inside two minutes, then terminated', async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 0, log: silentLog });
    const scenario = sim.interruption!;
    const instance = sim.instances[3]!;
    // Whether the instance was still a live NLB target when the drain ended.
    let inNlbAtDrain: boolean | undefined;
    await sim.runToCompletion(() => {
      if (scenario.drainedAfterMs() === undefined || inNlbAtDrain !== undefined) return;
      inNlbAtDrain = [...sim.elbv2.targetGroups.values()].some((tg) =>
        [...tg.targets.values()].some((t) => t.target.id === instance.instanceId && t.state !== 'draining'),
      );
    });

    expect(sim.problems()).toEqual([]);
    expect(scenario.budgetViolations()).toBe(0);
    expect(scenario.drainedAfterMs()).toBeLessThanOrEqual(120_000);
    // Deregistered by the time its Pods were gone (the exclusion label comes with the cordon).
    expect(inNlbAtDrain).toBe(false);
    const reasons = sim.kube.eventsFor('Node', scenario.nodeName).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['InterruptionReceived', 'Cordoned', 'Drained', 'DeletingNode']));
    expect(reasons.indexOf('Drained')).toBeLessThan(reasons.indexOf('DeletingNode'));
    expect(sim.ec2.instances.get(instance.instanceId)?.state).toBe('terminated');
    // The replicas now run elsewhere, all Ready; the evicted ones are gone.
    const replicas = sim.kube.workloads.list().filter((p) => p.metadata.labels?.app === SIM_WORKLOAD.name);
    expect(replicas).toHaveLength(SIM_WORKLOAD.replicas);
    expect(replicas.every((p) => p.spec?.nodeName !== scenario.nodeName)).toBe(true);
    expect(sim.metrics.total(MetricName.PodsEvicted)).toBe(SIM_WORKLOAD.replicas);
    // The budget did hold evictions back: the replacements had to become Ready first.
    expect(sim.metrics.total(MetricName.PdbWaits)).toBeGreaterThan(0);
  });
});
