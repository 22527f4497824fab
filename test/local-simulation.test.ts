import { describe, expect, it } from 'vitest';
import { createSimulation } from '../bin/simulation.ts';
import { TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { silentLog } from '../shared/observability/log.ts';

describe('npm start scenario (embedded simulation)', () => {
  it('converges: every Node initialized and routed, the stopped one tainted, the terminated one deleted, no DLQ', async () => {
    const sim = createSimulation({ nodes: 9, ec2LatencyMs: 0, throttleDescribes: 2, log: silentLog });
    await sim.runToCompletion();

    expect(sim.problems()).toEqual([]);
    const [, stopped, terminated, ...running] = sim.instances;
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
    expect(sim.kube.events.filter((e) => e.reason === 'DeletingNode')).toHaveLength(1);
  });
});
