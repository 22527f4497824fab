import { beforeEach, describe, expect, it } from 'vitest';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { CLUSTER, createWorld, type World } from '../../test/helpers/world.ts';
import { nodeReconciler } from '../node/reconciler.ts';
import { type ResyncDeps, resync } from './resync.ts';

let w: World;
let deps: ResyncDeps;
const bodies = (queue: string) => w.sqs.bodies(queue).map((b) => JSON.parse(b));

beforeEach(() => {
  w = createWorld();
  w.sqs.createQueue('service.fifo', { maxReceiveCount: 5 });
  w.sqs.createQueue('ipam.fifo', { maxReceiveCount: 5 });
  for (const name of ['a', 'b', 'c']) w.kube.putNode(makeNode(name));
  w.kube.putService({
    metadata: { name: 'web', namespace: 'shop' },
    spec: { type: 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP', nodePort: 30080 }] },
  });
  w.kube.putService({ metadata: { name: 'db', namespace: 'shop' }, spec: { type: 'ClusterIP', ports: [] } });
  w.kube.putService({
    metadata: { name: 'was-lb', namespace: 'shop', finalizers: ['service.kubernetes.io/load-balancer-cleanup'] },
    spec: { type: 'ClusterIP', ports: [] },
  });
  deps = {
    kube: w.kube,
    services: w.kube,
    sqs: w.sqs,
    queues: {
      node: w.sqs.urlOf('node.fifo'),
      nodeLifecycle: w.sqs.urlOf('node-lifecycle.fifo'),
      route: w.sqs.urlOf('route.fifo'),
      service: w.sqs.urlOf('service.fifo'),
    },
    log: w.runner.log,
    metrics: w.metrics,
  };
});

describe('resync', () => {
  it('sends every Node to the node reconcilers, one RouteTable key, the LoadBalancer Services and the GC key', async () => {
    expect(await resync('round-1', deps)).toEqual({ sent: 3 + 3 + 1 + 3 });
    const hint = { eventType: 'RESYNC', eventId: 'round-1' };
    expect(bodies('node.fifo')).toEqual(['a', 'b', 'c'].map((name) => ({ kind: 'Node', name, hint })));
    expect(bodies('node-lifecycle.fifo')).toHaveLength(3);
    expect(bodies('route.fifo')).toEqual([{ kind: 'RouteTable', name: 'cluster', hint }]);
    // Each Service's key names its uid (the service controller reads its batch's load balancers ahead with it).
    const uid = (name: string) => w.kube.services.get(`shop/${name}`)!.metadata.uid;
    expect(bodies('service.fifo')).toEqual([
      { kind: 'Service', namespace: 'shop', name: 'web', hint: { ...hint, uid: uid('web') } },
      { kind: 'Service', namespace: 'shop', name: 'was-lb', hint: { ...hint, uid: uid('was-lb') } },
      { kind: 'Service', name: 'garbage-collection', hint },
    ]);
    expect(w.metrics.total(MetricName.KeysSent, { source: 'resync' })).toBe(10);
  });

  it('sends every Windows Node and the IPAM garbage-collection key to the ipam queue', async () => {
    w.kube.putNode(makeNode('win-a', { labels: { 'kubernetes.io/os': 'windows' } }));
    w.kube.putNode(makeNode('win-b', { labels: { 'beta.kubernetes.io/os': 'windows' } }));
    const ipam = w.sqs.urlOf('ipam.fifo');
    expect(await resync('round-1', { ...deps, queues: { ipam }, services: undefined })).toEqual({ sent: 3 });
    const hint = { eventType: 'RESYNC', eventId: 'round-1' };
    expect(bodies('ipam.fifo')).toEqual([
      { kind: 'Node', name: 'win-a', hint },
      { kind: 'Node', name: 'win-b', hint },
      { kind: 'Node', namespace: 'ipam', name: 'garbage-collection', hint },
    ]);
    expect(w.sqs.depth('node.fifo')).toBe(0);
  });

  it('with no Windows Node, the ipam queue still gets its garbage-collection key', async () => {
    await resync('r', { ...deps, queues: { ...deps.queues, ipam: w.sqs.urlOf('ipam.fifo') } });
    expect(bodies('ipam.fifo').map((k) => `${k.kind}/${k.namespace ?? ''}/${k.name}`)).toEqual([
      'Node/ipam/garbage-collection',
    ]);
    expect(w.sqs.depth('node.fifo')).toBe(3);
  });

  it('a retried round is deduplicated; the next round is not', async () => {
    await resync('round-1', deps);
    await resync('round-1', deps);
    expect(w.sqs.depth('node.fifo')).toBe(3);
    await resync('round-2', deps);
    expect(w.sqs.depth('node.fifo')).toBe(6);
  });

  it('feeds only the queues this stage has', async () => {
    await resync('r', { ...deps, queues: { nodeLifecycle: deps.queues.nodeLifecycle }, services: undefined });
    expect(w.sqs.depth('node.fifo')).toBe(0);
    expect(w.sqs.depth('route.fifo')).toBe(0);
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(3);
  });

  it('sends what it can and then fails the round, naming the queue, when SQS refuses keys', async () => {
    w.sqs.refuseNextSends.push(['', 'InternalError']);
    await expect(resync('r', deps)).rejects.toThrow(/1 key\(s\) refused by .*node\.fifo: InternalError/);
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(3);
    expect(w.sqs.depth('service.fifo')).toBe(3);
    expect(w.metrics.total(MetricName.KeySendFailures, { source: 'resync' })).toBe(1);
  });
});

describe('resync with the node sweep', () => {
  const names: string[] = [];
  const sweepDeps = (): ResyncDeps => ({
    kube: w.kube,
    sqs: w.sqs,
    log: w.runner.log,
    metrics: w.metrics,
    queues: { node: w.sqs.urlOf('node.fifo'), nodeLifecycle: w.sqs.urlOf('node-lifecycle.fifo') },
    nodeSweep: { ec2: w.ec2Port, clusterName: CLUSTER, ipFamilies: ['ipv4'] },
  });
  const keyNames = (queue: string) => bodies(queue).map((b) => b.name);

  beforeEach(async () => {
    // Nodes the node reconciler itself initialized: what it leaves is what the sweep must call in step.
    w = createWorld();
    names.length = 0;
    for (let index = 1; index <= 3; index++) {
      const instance = w.ec2.putInstance(makeInstance({ index }));
      w.kube.putNode(makeNode(instance.privateDnsName!));
      names.push(instance.privateDnsName!);
    }
    await w.enqueue(
      'node.fifo',
      names.map((name) => ({ kind: 'Node' as const, name })),
    );
    await w.drain('node.fifo', nodeReconciler, w.nodeDeps);
    expect([...w.kube.nodes.values()].every((n) => n.spec?.providerID)).toBe(true);
    w.ec2.resetCalls();
  });

  it('sends no Node key for unchanged Nodes, in one DescribeInstances', async () => {
    expect(await resync('r', sweepDeps())).toEqual({ sent: 0 });
    expect(w.sqs.depth('node.fifo') + w.sqs.depth('node-lifecycle.fifo')).toBe(0);
    expect(w.ec2.callCount('DescribeInstances')).toBe(1);
  });

  it('sends a Node whose addresses drifted to the node queue only', async () => {
    const instance = w.ec2.instances.get('i-00000000000000002')!;
    w.ec2.putInstance({ ...instance, publicIpAddress: '203.0.113.7' });
    await resync('r', sweepDeps());
    expect(keyNames('node.fifo')).toEqual([names[1]]);
    expect(w.sqs.depth('node-lifecycle.fifo')).toBe(0);
  });

  it('sends a NotReady Node whose instance stopped to the node-lifecycle queue only', async () => {
    const instance = w.ec2.instances.get('i-00000000000000003')!;
    w.ec2.putInstance({ ...instance, state: 'stopped' });
    const node = w.kube.nodes.get(names[2]!)!;
    w.kube.putNode({ ...node, status: { ...node.status, conditions: [{ type: 'Ready', status: 'Unknown' }] } });
    await resync('r', sweepDeps());
    expect(keyNames('node-lifecycle.fifo')).toEqual([names[2]]);
    expect(w.sqs.depth('node.fifo')).toBe(0);
  });

  it('sends a Node whose instance is not in the cluster list to node-lifecycle, which judges it', async () => {
    const instance = w.ec2.instances.get('i-00000000000000001')!;
    w.ec2.putInstance({ ...instance, tags: {} });
    await resync('r', sweepDeps());
    expect(keyNames('node-lifecycle.fifo')).toEqual([names[0]]);
    expect(w.sqs.depth('node.fifo')).toBe(0);
  });

  it('sends a new, uninitialized Node to the node queue', async () => {
    w.kube.putNode(makeNode('ip-10-0-0-99.eu-west-1.compute.internal'));
    await resync('r', sweepDeps());
    expect(keyNames('node.fifo')).toEqual(['ip-10-0-0-99.eu-west-1.compute.internal']);
  });

  it('sends every Node key to both queues when the sweep fails (throttled)', async () => {
    w.ec2.throttle('DescribeInstances', 1);
    expect(await resync('r', sweepDeps())).toEqual({ sent: 6 });
    expect(keyNames('node.fifo')).toEqual(names);
    expect(keyNames('node-lifecycle.fifo')).toEqual(names);
    expect(w.metrics.total(MetricName.NodeSweepFallbacks)).toBe(1);
  });

  it('does not sweep for a stage that feeds neither Node reconciler', async () => {
    await resync('r', { ...sweepDeps(), queues: { route: w.sqs.urlOf('route.fifo') } });
    expect(w.ec2.callCount('DescribeInstances')).toBe(0);
  });
});
