import { beforeEach, describe, expect, it } from 'vitest';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { TAINT_UNINITIALIZED } from '../../shared/k8s/node-helpers.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { fifoRecord, nodeKey } from '../../test/helpers/records.ts';
import { createWorld, type World } from '../../test/helpers/world.ts';
import { nodeReconciler } from './reconciler.ts';

let w: World;
beforeEach(() => {
  w = createWorld();
});

const run = (...names: string[]) =>
  w.invoke(
    nodeReconciler,
    w.nodeDeps,
    names.map((n) => fifoRecord(nodeKey(n))),
  );

function expectInitialized(name: string, instanceId: string, zone = 'eu-west-1a') {
  const node = w.kube.nodes.get(name)!;
  expect(node.spec?.providerID).toBe(`aws:///${zone}/${instanceId}`);
  expect(node.spec?.taints?.some((t) => t.key === TAINT_UNINITIALIZED)).toBe(false);
  expect(node.metadata.labels).toMatchObject({
    'node.kubernetes.io/instance-type': 'm5.large',
    'topology.kubernetes.io/zone': zone,
    'topology.kubernetes.io/region': 'eu-west-1',
    'topology.k8s.aws/zone-id': w.ec2.zones.find((z) => z.zoneName === zone)!.zoneId,
  });
  expect(w.kube.eventsFor('Node', name, 'Synced')).toHaveLength(1);
}

describe('node initialization', () => {
  it('finds the instance by private DNS name (cluster-tagged only)', async () => {
    const ours = w.ec2.putInstance(makeInstance({ index: 1 }));
    // Same DNS name in another cluster's VPC: must be ignored.
    w.ec2.putInstance(makeInstance({ index: 1, instanceId: 'i-0000000000000abcd', clusterName: 'other' }));
    w.kube.putNode(makeNode(ours.privateDnsName!));

    expect(await run(ours.privateDnsName!)).toEqual({ batchItemFailures: [] });

    expectInitialized(ours.privateDnsName!, ours.instanceId);
    expect(w.kube.nodes.get(ours.privateDnsName!)!.status?.addresses).toEqual([
      { type: 'InternalIP', address: ours.privateIpAddress },
      { type: 'InternalDNS', address: ours.privateDnsName },
      { type: 'Hostname', address: ours.privateDnsName },
    ]);
    expect(w.metrics.total(MetricName.NodesInitialized)).toBe(1);
  });

  it('finds the instance by providerID', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 2, availabilityZone: 'eu-west-1c' }));
    w.kube.putNode(makeNode('worker-a', { providerID: `aws:////${instance.instanceId}` }));
    await run('worker-a');
    const node = w.kube.nodes.get('worker-a')!;
    // An existing providerID is kept as written.
    expect(node.spec?.providerID).toBe(`aws:////${instance.instanceId}`);
    expect(node.metadata.labels?.['topology.kubernetes.io/zone']).toBe('eu-west-1c');
    expect(w.kube.eventsFor('Node', 'worker-a', 'Synced')).toHaveLength(1);
  });

  it('finds the instance from a resource-based name (i-... up to the first dot)', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 3 }));
    const name = `${instance.instanceId}.eu-west-1.compute.internal`;
    w.kube.putNode(makeNode(name));
    await run(name);
    expectInitialized(name, instance.instanceId);
    expect(w.ec2.callCount('DescribeInstances')).toBe(1);
  });

  it('keeps labels that are already present', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 4 }));
    w.kube.putNode(makeNode(instance.privateDnsName!, { labels: { 'topology.kubernetes.io/zone': 'mine' } }));
    await run(instance.privateDnsName!);
    const labels = w.kube.nodes.get(instance.privateDnsName!)!.metadata.labels!;
    expect(labels['topology.kubernetes.io/zone']).toBe('mine');
    expect(labels['failure-domain.beta.kubernetes.io/zone']).toBe('eu-west-1a');
  });

  it('honours provided-node-ip when it is one of the instance addresses', async () => {
    const instance = makeInstance({ index: 5 });
    instance.networkInterfaces[0]!.privateIpAddresses.push({ address: '10.0.0.200', primary: false });
    w.ec2.putInstance(instance);
    const name = instance.privateDnsName!;
    w.kube.putNode(makeNode(name, { annotations: { 'alpha.kubernetes.io/provided-node-ip': '10.0.0.200' } }));
    await run(name);
    expect(w.kube.nodes.get(name)!.status?.addresses?.[0]).toEqual({ type: 'InternalIP', address: '10.0.0.200' });
    expectInitialized(name, instance.instanceId);
  });

  it('refuses provided-node-ip that is not an instance address: taint stays, Event, retried', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 6 }));
    const name = instance.privateDnsName!;
    w.kube.putNode(makeNode(name, { annotations: { 'alpha.kubernetes.io/provided-node-ip': '10.9.9.9' } }));
    const response = await run(name);
    expect(response.batchItemFailures).toHaveLength(1);
    const node = w.kube.nodes.get(name)!;
    expect(node.spec?.taints?.map((t) => t.key)).toContain(TAINT_UNINITIALIZED);
    expect(node.spec?.providerID).toBeUndefined();
    expect(w.kube.eventsFor('Node', name, 'ProvidedNodeIPNotFound')[0]?.message).toContain('10.9.9.9');
  });

  it('retries with backoff and an Event while the instance is not visible yet (eventual consistency)', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 7 }), { invisibleForCalls: 2 });
    const name = instance.privateDnsName!;
    w.kube.putNode(makeNode(name));
    await w.enqueue('node.fifo', [nodeKey(name, '1')]);
    await w.drain('node.fifo', nodeReconciler, w.nodeDeps);
    expectInitialized(name, instance.instanceId);
    expect(w.kube.eventsFor('Node', name, 'InstanceNotFound')).toHaveLength(2);
    expect(w.metrics.total(MetricName.ReconcileErrors, { reconciler: 'node' })).toBe(2);
    expect(w.sqs.depth('node-dlq.fifo')).toBe(0);
  });

  it('does not initialize from an instance without our cluster tag', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 8, clusterName: '' }));
    w.kube.putNode(makeNode(instance.instanceId));
    const response = await run(instance.instanceId);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(w.kube.nodes.get(instance.instanceId)!.spec?.providerID).toBeUndefined();
    expect(w.kube.eventsFor('Node', instance.instanceId, 'InstanceNotInCluster')).toHaveLength(1);
  });

  it('retries a 409 on patch by re-reading the Node', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 9 }));
    const name = instance.privateDnsName!;
    w.kube.putNode(makeNode(name));
    w.kube.queueError('patchNode', new KubernetesApiError(409, 'Conflict', 'the object has been modified'));
    expect(await run(name)).toEqual({ batchItemFailures: [] });
    expectInitialized(name, instance.instanceId);
    expect(w.kube.callCount('patchNode')).toBe(2);
  });

  it('re-diffs against a concurrent write instead of overwriting it', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 10 }));
    const name = instance.privateDnsName!;
    w.kube.putNode(makeNode(name));
    // Another actor labels the Node between our read (prepareBatch) and our write.
    const batch = await nodeReconciler.prepareBatch!([{ kind: 'Node', name }], w.nodeDeps);
    w.kube.mutateNode(name, (n) => {
      n.metadata.labels!['topology.kubernetes.io/zone'] = 'set-by-someone-else';
    });
    await nodeReconciler.reconcile({ kind: 'Node', name }, w.nodeDeps, batch, {
      hints: [],
      payloads: [],
      receiveCount: 1,
    });
    expect(w.kube.nodes.get(name)!.metadata.labels!['topology.kubernetes.io/zone']).toBe('set-by-someone-else');
    expect(w.kube.nodes.get(name)!.spec?.providerID).toBe(`aws:///eu-west-1a/${instance.instanceId}`);
  });

  it('shares one DescribeInstances across every key of a batch, and one zone lookup per container', async () => {
    const names: string[] = [];
    for (let i = 0; i < 10; i++) {
      const instance = w.ec2.putInstance(makeInstance({ index: 100 + i }));
      w.kube.putNode(makeNode(instance.privateDnsName!));
      names.push(instance.privateDnsName!);
    }
    expect(await run(...names)).toEqual({ batchItemFailures: [] });
    for (const name of names) expect(w.kube.nodes.get(name)!.spec?.providerID).toMatch(/^aws:\/\/\/eu-west-1a\/i-/);
    expect(w.ec2.callCount('DescribeInstances')).toBe(1);
    expect(w.ec2.callCount('DescribeAvailabilityZones')).toBe(1);
  });
});

describe('address refresh of initialized Nodes', () => {
  async function initialized() {
    const instance = w.ec2.putInstance(makeInstance({ index: 20 }));
    const name = instance.privateDnsName!;
    w.kube.putNode(makeNode(name));
    await run(name);
    w.kube.resetCalls();
    return { instance, name };
  }

  it('patches the status when the addresses changed', async () => {
    const { instance, name } = await initialized();
    w.ec2.instances.get(instance.instanceId)!.publicIpAddress = '34.1.1.1';
    await run(name);
    expect(w.kube.nodes.get(name)!.status?.addresses).toContainEqual({ type: 'ExternalIP', address: '34.1.1.1' });
    expect(w.kube.callCount('patchNodeStatus')).toBe(1);
    expect(w.kube.callCount('patchNode')).toBe(0);
    expect(w.metrics.total(MetricName.NodeAddressesUpdated)).toBe(1);
  });

  it('leaves the addresses alone once the instance is terminated', async () => {
    const { instance, name } = await initialized();
    w.ec2.setState(instance.instanceId, 'terminated');
    await run(name);
    expect(w.kube.writeCount()).toBe(0);
    expect(w.kube.nodes.get(name)!.status?.addresses).toContainEqual({
      type: 'InternalIP',
      address: instance.privateIpAddress,
    });
  });

  it('makes no write when nothing changed', async () => {
    const { name } = await initialized();
    const rv = w.kube.nodes.get(name)!.metadata.resourceVersion;
    await run(name);
    expect(w.kube.writeCount()).toBe(0);
    expect(w.kube.nodes.get(name)!.metadata.resourceVersion).toBe(rv);
  });
});

describe('workqueue behaviour with the node reconciler', () => {
  it('duplicated and reordered messages give the same final state', async () => {
    const instances = [30, 31, 32].map((i) => w.ec2.putInstance(makeInstance({ index: i })));
    const names = instances.map((i) => i.privateDnsName!);
    for (const name of names) w.kube.putNode(makeNode(name));

    const once = createWorld();
    for (const i of instances) once.ec2.putInstance(i);
    for (const name of names) once.kube.putNode(makeNode(name));
    await once.enqueue(
      'node.fifo',
      names.map((n) => nodeKey(n, '1')),
    );
    await once.drain('node.fifo', nodeReconciler, once.nodeDeps);

    const messy = [...names, ...names.slice().reverse(), names[1]!, names[0]!].map((n, i) => nodeKey(n, String(i)));
    await w.enqueue('node.fifo', messy);
    await w.enqueue('node.fifo', messy); // the same revisions again: deduplicated by SQS
    await w.drain('node.fifo', nodeReconciler, w.nodeDeps);

    const strip = (world: World) =>
      names.map((n) => {
        const { metadata, ...rest } = world.kube.nodes.get(n)!;
        return { labels: metadata.labels, ...rest };
      });
    expect(strip(w)).toEqual(strip(once));
    expect(w.kube.events.filter((e) => e.reason === 'Synced')).toHaveLength(3);
  });

  it('throttling requeues with backoff and loses no message', async () => {
    const names: string[] = [];
    for (let i = 0; i < 25; i++) {
      const instance = w.ec2.putInstance(makeInstance({ index: 200 + i }));
      w.kube.putNode(makeNode(instance.privateDnsName!));
      names.push(instance.privateDnsName!);
    }
    w.ec2.throttle('DescribeInstances', 3);
    await w.enqueue(
      'node.fifo',
      names.map((n) => nodeKey(n, '1')),
    );
    const changesBefore = w.sqs.callCount('ChangeMessageVisibilityBatch');
    await w.drain('node.fifo', nodeReconciler, w.nodeDeps);

    for (const name of names) expect(w.kube.nodes.get(name)!.spec?.providerID).toBeDefined();
    expect(w.sqs.depth('node-dlq.fifo')).toBe(0);
    // Three throttled DescribeInstances calls: the three batches of 10, 10 and 5 keys each retried.
    expect(w.metrics.total(MetricName.ReconcileErrors, { errorClass: 'throttled' })).toBe(25);
    expect(w.sqs.callCount('ChangeMessageVisibilityBatch')).toBeGreaterThan(changesBefore);
  });
});
