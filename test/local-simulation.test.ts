import { describe, expect, it } from 'vitest';
import { createSimulation, SIM_CLASSIC_SERVICE, SIM_SERVICE } from '../bin/simulation.ts';
import { TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { silentLog } from '../shared/observability/log.ts';

describe('npm start scenario (embedded simulation)', () => {
  it('converges: Nodes initialized and routed, stopped one tainted, terminated one deleted, load balancer active, no DLQ', async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 2, log: silentLog });
    await sim.runToCompletion();

    expect(sim.problems()).toEqual([]);
    const [first, stopped, terminated, ...rest] = sim.instances;
    const running = [first!, ...rest];
    expect(sim.kube.nodes.has(terminated!.privateDnsName!)).toBe(false);
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
    expect(routes.filter((r) => r.destination.startsWith('10.244.'))).toHaveLength(8);
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
    expect(sim.kube.events.filter((e) => e.reason === 'DeletingNode')).toHaveLength(1);
  });
});
