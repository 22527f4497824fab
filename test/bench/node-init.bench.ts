import { nodeReconciler } from '../../functions/node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../functions/node-lifecycle/reconciler.ts';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { makeNode } from '../helpers/nodes.ts';
import { createWorld } from '../helpers/world.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- node-init';

/**
 * AWS and Kubernetes API volume for 1,000 Node initializations arriving as keys on the node
 * queue, delivered in batches of 10 as the event source mapping does; then a resync of the same
 * 1,000 (initialized, unchanged) Nodes through both Node reconcilers.
 */
export async function run(): Promise<BenchResult[]> {
  const w = createWorld();
  const count = 1000;
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const instance = w.ec2.putInstance(
      makeInstance({ index: 1 + i, availabilityZone: ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'][i % 3] }),
    );
    w.kube.putNode(makeNode(instance.privateDnsName!));
    names.push(instance.privateDnsName!);
  }
  await w.enqueue(
    'node.fifo',
    names.map((name) => ({ kind: 'Node' as const, name, hint: { resourceVersion: '1', eventType: 'ADDED' as const } })),
  );
  const started = performance.now();
  const polls = await w.drain('node.fifo', nodeReconciler, w.nodeDeps);
  const elapsed = performance.now() - started;
  const initialized = [...w.kube.nodes.values()].filter((n) => n.spec?.providerID).length;
  if (initialized !== count) throw new Error(`only ${initialized} of ${count} Nodes initialized`);
  const describeInit = w.ec2.callCount('DescribeInstances');
  const zonesInit = w.ec2.callCount('DescribeAvailabilityZones');
  const writesInit = w.kube.writeCount();

  w.ec2.resetCalls();
  w.kube.resetCalls();
  const resync = names.map((name) => ({
    kind: 'Node' as const,
    name,
    hint: { eventType: 'RESYNC' as const, eventId: 'r1' },
  }));
  await w.enqueue('node.fifo', resync);
  await w.enqueue('node-lifecycle.fifo', resync);
  await w.drain('node.fifo', nodeReconciler, w.nodeDeps);
  await w.drain('node-lifecycle.fifo', nodeLifecycleReconciler, w.lifecycleDeps);

  return [
    {
      name: 'node init: DescribeInstances per 1,000 inits (batches of 10)',
      value: describeInit,
      unit: 'calls',
      target: `<= ${Math.ceil(count / 10)} (one per batch)`,
      rerun: RERUN,
      note: `${polls} batches; reference CCM: >= 1,000`,
    },
    {
      name: 'node init: DescribeAvailabilityZones per 1,000 inits',
      value: zonesInit,
      unit: 'calls',
      target: '1 per container',
      rerun: RERUN,
    },
    { name: 'node init: Kubernetes writes per Node', value: writesInit / count, unit: 'writes', rerun: RERUN },
    {
      name: 'node init: in-memory reconcile throughput',
      value: Math.round((count / elapsed) * 1000),
      unit: 'nodes/s',
      rerun: RERUN,
      note: 'fakes, no latency: the controller overhead alone',
    },
    {
      name: 'resync of 1,000 unchanged Nodes: DescribeInstances (node + lifecycle)',
      value: w.ec2.callCount('DescribeInstances'),
      unit: 'calls',
      target: '<= 200 (one per batch per reconciler)',
      rerun: RERUN,
    },
    {
      name: 'resync of 1,000 unchanged Nodes: Kubernetes writes',
      value: w.kube.writeCount(),
      unit: 'writes',
      target: '0',
      rerun: RERUN,
    },
  ];
}
