import { beforeEach, describe, expect, it } from 'vitest';
import type { Instance } from '../../shared/aws/ec2-port.ts';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { NEW_INSTANCE_GRACE_MS, TAINT_SHUTDOWN } from '../../shared/k8s/node-helpers.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { fifoRecord, nodeKey } from '../../test/helpers/records.ts';
import { createWorld, type World } from '../../test/helpers/world.ts';
import { nodeLifecycleReconciler } from './reconciler.ts';

let w: World;
let instance: Instance;
let name: string;

beforeEach(() => {
  w = createWorld();
  instance = w.ec2.putInstance(makeInstance({ index: 1 }));
  name = instance.privateDnsName!;
  w.kube.putNode(makeNode(name, { providerID: `aws:///eu-west-1a/${instance.instanceId}`, initialized: true }));
});

const run = (...names: string[]) =>
  w.invoke(
    nodeLifecycleReconciler,
    w.lifecycleDeps,
    names.map((n) => fifoRecord(nodeKey(n))),
  );
const setReady = (ready: boolean | 'Unknown') =>
  w.kube.mutateNode(name, (n) => {
    n.status!.conditions = [{ type: 'Ready', status: ready === 'Unknown' ? 'Unknown' : ready ? 'True' : 'False' }];
  });
const taintKeys = () => (w.kube.nodes.get(name)?.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);

describe('node lifecycle', () => {
  it('stopped and NotReady -> shutdown taint (NoSchedule)', async () => {
    w.ec2.setState(instance.instanceId, 'stopped');
    setReady('Unknown');
    expect(await run(name)).toEqual({ batchItemFailures: [] });
    expect(taintKeys()).toEqual([`${TAINT_SHUTDOWN}:NoSchedule`]);
    expect(w.metrics.total(MetricName.NodesTainted)).toBe(1);
  });

  it('stopped but still Ready -> nothing yet', async () => {
    w.ec2.setState(instance.instanceId, 'stopped');
    await run(name);
    expect(taintKeys()).toEqual([]);
    expect(w.kube.writeCount()).toBe(0);
  });

  it('terminated and NotReady -> Node deleted with a DeletingNode Event', async () => {
    w.ec2.setState(instance.instanceId, 'terminated');
    setReady(false);
    await run(name);
    expect(w.kube.nodes.has(name)).toBe(false);
    expect(w.kube.eventsFor('Node', name, 'DeletingNode')[0]?.message).toContain('terminated');
    expect(w.metrics.total(MetricName.NodesDeleted)).toBe(1);
  });

  it('instance unknown to EC2 and NotReady -> Node deleted, but not while the Node is young enough for EC2 to be catching up', async () => {
    w.ec2.removeInstance(instance.instanceId);
    setReady('Unknown');
    // A Node registered a moment ago: EC2 may not show its new instance yet (eventual consistency).
    const young = await run(name);
    expect(w.kube.nodes.has(name)).toBe(true);
    expect(young.batchItemFailures).toHaveLength(1);
    expect(w.metrics.total(MetricName.Requeues)).toBe(1);
    expect(w.metrics.total(MetricName.NodesDeleted)).toBe(0);

    w.clock.advance(NEW_INSTANCE_GRACE_MS);
    await run(name);
    expect(w.kube.nodes.has(name)).toBe(false);
    expect(w.kube.eventsFor('Node', name, 'DeletingNode')[0]?.message).toContain('no longer exists');
  });

  it('a young Node whose instance shows up within the grace is kept', async () => {
    const hidden = w.ec2.instances.get(instance.instanceId)!;
    w.ec2.removeInstance(instance.instanceId);
    setReady('Unknown');
    await run(name);
    w.ec2.putInstance(hidden);
    w.clock.advance(60_000);
    await run(name);
    expect(w.kube.nodes.has(name)).toBe(true);
    expect(w.metrics.total(MetricName.NodesDeleted)).toBe(0);
  });

  it('running again and Ready -> taint removed, other taints kept', async () => {
    w.kube.mutateNode(name, (n) => {
      n.spec!.taints = [
        { key: 'dedicated', value: 'infra', effect: 'NoSchedule' },
        { key: TAINT_SHUTDOWN, effect: 'NoSchedule' },
      ];
    });
    await run(name);
    expect(taintKeys()).toEqual(['dedicated:NoSchedule']);
    expect(w.metrics.total(MetricName.NodesUntainted)).toBe(1);
  });

  it('a failed delete records DeletingNodeFailed and is retried', async () => {
    w.ec2.setState(instance.instanceId, 'terminated');
    setReady(false);
    w.kube.queueError('deleteNode', new KubernetesApiError(500, 'InternalError', 'etcd timeout'));
    const response = await run(name);
    expect(response.batchItemFailures).toHaveLength(1);
    expect(w.kube.eventsFor('Node', name, 'DeletingNodeFailed')).toHaveLength(1);
    expect(w.kube.nodes.has(name)).toBe(true);
    await run(name);
    expect(w.kube.nodes.has(name)).toBe(false);
  });

  it('never deletes a Node re-created under the same name meanwhile (uid precondition)', async () => {
    w.ec2.setState(instance.instanceId, 'terminated');
    setReady(false);
    const batch = await nodeLifecycleReconciler.prepareBatch!([{ kind: 'Node', name }], w.lifecycleDeps);
    // The Node is deleted and registered again by a new kubelet before our delete lands.
    w.kube.nodes.delete(name);
    w.kube.putNode(makeNode(name));
    await nodeLifecycleReconciler.reconcile({ kind: 'Node', name }, w.lifecycleDeps, batch, {
      hints: [],
      payloads: [],
      receiveCount: 1,
    });
    expect(w.kube.nodes.has(name)).toBe(true);
  });

  it('leaves Nodes without an AWS providerID alone', async () => {
    w.kube.putNode(makeNode('other', { providerID: 'gce://p/z/other', ready: false, initialized: true }));
    await run('other');
    expect(w.kube.nodes.has('other')).toBe(true);
    expect(w.ec2.callCount('DescribeInstances')).toBe(0);
  });

  it('one DescribeInstances for a batch of keys', async () => {
    const names = [name];
    for (let i = 2; i <= 10; i++) {
      const other = w.ec2.putInstance(makeInstance({ index: i }));
      w.kube.putNode(makeNode(other.privateDnsName!, { providerID: `aws:///eu-west-1a/${other.instanceId}` }));
      names.push(other.privateDnsName!);
    }
    await run(...names);
    expect(w.ec2.callCount('DescribeInstances')).toBe(1);
  });

  it('stop -> start cycle through the queue ends untainted', async () => {
    w.ec2.setState(instance.instanceId, 'stopped');
    setReady('Unknown');
    await w.enqueue('node-lifecycle.fifo', [nodeKey(name, 'a')]);
    await w.drain('node-lifecycle.fifo', nodeLifecycleReconciler, w.lifecycleDeps);
    expect(taintKeys()).toEqual([`${TAINT_SHUTDOWN}:NoSchedule`]);
    w.ec2.setState(instance.instanceId, 'running');
    setReady(true);
    await w.enqueue('node-lifecycle.fifo', [nodeKey(name, 'b')]);
    await w.drain('node-lifecycle.fifo', nodeLifecycleReconciler, w.lifecycleDeps);
    expect(taintKeys()).toEqual([]);
  });
});

describe('node lifecycle: uninitialized Nodes without a provider ID', () => {
  const joinUninitialized = (n: string) => w.kube.putNode(makeNode(n, { ready: false }));

  it('is deleted once its instance (looked up by its name) is gone and the young-Node grace is over', async () => {
    const lost = w.ec2.putInstance(makeInstance({ index: 7 }));
    joinUninitialized(lost.privateDnsName!);
    w.ec2.setState(lost.instanceId, 'terminated');
    await run(lost.privateDnsName!);
    expect(w.kube.nodes.has(lost.privateDnsName!)).toBe(true);

    w.clock.advance(NEW_INSTANCE_GRACE_MS);
    await run(lost.privateDnsName!);
    expect(w.kube.nodes.has(lost.privateDnsName!)).toBe(false);
    const [event] = w.kube.eventsFor('Node', lost.privateDnsName!, 'DeletingNode');
    expect(event?.message).toContain(lost.privateDnsName!);
  });

  it('is kept while its instance runs (the node reconciler initializes it)', async () => {
    const running = w.ec2.putInstance(makeInstance({ index: 8 }));
    joinUninitialized(running.privateDnsName!);
    w.clock.advance(NEW_INSTANCE_GRACE_MS);
    await run(running.privateDnsName!);
    expect(w.kube.nodes.has(running.privateDnsName!)).toBe(true);
  });

  it('a resource-named Node (i-...) is judged by that instance', async () => {
    const byId = w.ec2.putInstance(makeInstance({ index: 9 }));
    joinUninitialized(byId.instanceId);
    w.ec2.setState(byId.instanceId, 'terminated');
    w.clock.advance(NEW_INSTANCE_GRACE_MS);
    await run(byId.instanceId);
    expect(w.kube.nodes.has(byId.instanceId)).toBe(false);
  });

  it('a resource-named Node whose instance EC2 shows terminated goes at once (no wait for what is known)', async () => {
    const gone = w.ec2.putInstance(makeInstance({ index: 11 }));
    joinUninitialized(gone.instanceId);
    w.ec2.setState(gone.instanceId, 'terminated');
    await run(gone.instanceId);
    expect(w.kube.nodes.has(gone.instanceId)).toBe(false);
  });

  it('a Node without the uninitialized taint and without a provider ID belongs to another provider: untouched', async () => {
    w.kube.putNode(makeNode('elsewhere', { ready: false, initialized: true }));
    w.clock.advance(NEW_INSTANCE_GRACE_MS);
    await run('elsewhere');
    expect(w.kube.nodes.has('elsewhere')).toBe(true);
    expect(w.ec2.callCount()).toBe(0);
  });
});
