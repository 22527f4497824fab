import { describe, expect, it } from 'vitest';
import { makeNetworkInterface } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { IPAM_GC_KEY } from '../../shared/queue/ipam-gc-key.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { interfaceOwnershipTags, SEEN_AVAILABLE_TAG } from './gc.ts';
import { createIpamWorld, IPAM_QUEUE, type IpamWorld } from './testing/world.ts';

let rounds = 0;
async function sweep(w: IpamWorld) {
  await w.enqueue(IPAM_QUEUE, [{ ...IPAM_GC_KEY, hint: { eventType: 'RESYNC', eventId: `round-${++rounds}` } }]);
  await w.settle();
}

const exists = async (w: IpamWorld, id: string) =>
  (await w.ec2Port.describeNetworkInterfaces({ networkInterfaceIds: [id] })).length === 1;

describe('ipam garbage collection: interfaces we created and left available', () => {
  it('deletes one only on the second sweep that finds it available (the two-pass rule)', async () => {
    const w = createIpamWorld();
    const leaked = w.ec2.putNetworkInterface(makeNetworkInterface({ tags: interfaceOwnershipTags(CLUSTER) }));
    await sweep(w);
    expect(await exists(w, leaked.networkInterfaceId)).toBe(true);
    const [marked] = await w.ec2Port.describeNetworkInterfaces({ networkInterfaceIds: [leaked.networkInterfaceId] });
    expect(marked!.tags[SEEN_AVAILABLE_TAG]).toBe(new Date(w.clock.now()).toISOString());

    w.clock.advance(5 * 60_000);
    await sweep(w);
    expect(await exists(w, leaked.networkInterfaceId)).toBe(false);
    expect(w.metrics.total(MetricName.IpamInterfacesDeleted)).toBe(1);
  });

  it('an interface attached between the sweeps loses its mark and stays', async () => {
    const w = createIpamWorld();
    const instance = w.addWindowsNode('win-1');
    const eni = w.ec2.putNetworkInterface(makeNetworkInterface({ tags: interfaceOwnershipTags(CLUSTER) }));
    await sweep(w);
    w.ec2.putNetworkInterface({
      ...makeNetworkInterface({ tags: { ...interfaceOwnershipTags(CLUSTER), [SEEN_AVAILABLE_TAG]: 'x' } }),
      networkInterfaceId: eni.networkInterfaceId,
      attachment: { instanceId: instance.instanceId, deviceIndex: 1 },
    });
    await sweep(w);
    const [after] = await w.ec2Port.describeNetworkInterfaces({ networkInterfaceIds: [eni.networkInterfaceId] });
    expect(after).toBeDefined();
    expect(after!.tags[SEEN_AVAILABLE_TAG]).toBeUndefined();
  });

  it("never touches an interface without our owner tag, or another cluster's", async () => {
    const w = createIpamWorld();
    const clusterOnly = w.ec2.putNetworkInterface(
      makeNetworkInterface({ tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' } }),
    );
    const otherCluster = w.ec2.putNetworkInterface(makeNetworkInterface({ tags: interfaceOwnershipTags('other') }));
    await sweep(w);
    w.clock.advance(5 * 60_000);
    await sweep(w);
    for (const eni of [clusterOnly, otherCluster]) expect(await exists(w, eni.networkInterfaceId)).toBe(true);
    expect(w.ec2.writeCallCount()).toBe(0);
  });

  it('looks only in its own VPC', async () => {
    const w = createIpamWorld();
    const ours = w.ec2.putNetworkInterface(makeNetworkInterface({ tags: interfaceOwnershipTags(CLUSTER) }));
    w.deps.vpcId = 'vpc-0ffffffff';
    await sweep(w);
    w.clock.advance(5 * 60_000);
    await sweep(w);
    expect(await exists(w, ours.networkInterfaceId)).toBe(true);
    expect(w.ec2.writeCallCount()).toBe(0);
  });
});
