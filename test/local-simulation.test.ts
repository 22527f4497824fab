import { describe, expect, it } from 'vitest';
import { createSimulation } from '../bin/simulation.ts';
import { TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from '../shared/k8s/node-helpers.ts';
import { silentLog } from '../shared/observability/log.ts';

describe('npm start scenario (embedded simulation)', () => {
  it('converges: every Node initialized, the stopped one tainted, the terminated one deleted, no DLQ', async () => {
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
    expect(sim.kube.events.filter((e) => e.reason === 'Synced')).toHaveLength(9);
    expect(sim.kube.events.filter((e) => e.reason === 'DeletingNode')).toHaveLength(1);
  });
});
