import { nodeReconciler } from '../../functions/node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../functions/node-lifecycle/reconciler.ts';
import { type ResyncDeps, resync } from '../../functions/resync/resync.ts';
import { makeInstance } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { providerIdFor } from '../../shared/aws/provider-id.ts';
import { instanceAddresses } from '../../shared/nodes/addresses.ts';
import { makeNode } from '../helpers/nodes.ts';
import { CLUSTER, createWorld } from '../helpers/world.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- resync';

/**
 * EC2 cost of one resync round over unchanged Nodes, node and node-lifecycle together: every Node key to both
 * queues, reconciled in batches of 10 as the event source mapping delivers them (before), against the node sweep
 * (after: one DescribeInstances page per 1000 of the cluster's instances, and only the Nodes out of step sent).
 */
export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const count of [1000, 5000]) results.push(...(await round(count)));
  return results;
}

async function round(count: number): Promise<BenchResult[]> {
  const w = createWorld();
  for (let i = 0; i < count; i++) {
    const zone = ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'][i % 3]!;
    const instance = w.ec2.putInstance(makeInstance({ index: 1 + i, availabilityZone: zone }));
    // In step, as the node reconciler leaves a Node it initialized.
    const node = makeNode(instance.privateDnsName!, {
      initialized: true,
      providerID: providerIdFor(zone, instance.instanceId),
    });
    node.status!.addresses = instanceAddresses(instance, ['ipv4']);
    w.kube.putNode(node);
  }
  const deps: ResyncDeps = {
    kube: w.kube,
    sqs: w.sqs,
    queues: { node: w.sqs.urlOf('node.fifo'), nodeLifecycle: w.sqs.urlOf('node-lifecycle.fifo') },
    log: w.runner.log,
    metrics: w.metrics,
  };
  const reconcileBoth = async () => {
    const polls = Math.ceil(count / 10) + 10;
    await w.drain('node.fifo', nodeReconciler, w.nodeDeps, polls);
    await w.drain('node-lifecycle.fifo', nodeLifecycleReconciler, w.lifecycleDeps, polls);
  };

  const before = await resync('before', deps);
  await reconcileBoth();
  const describeBefore = w.ec2.callCount('DescribeInstances');

  w.ec2.resetCalls();
  w.kube.resetCalls();
  const after = await resync('after', {
    ...deps,
    nodeSweep: { ec2: w.ec2Port, clusterName: CLUSTER, ipFamilies: ['ipv4'] },
  });
  const describeSweep = w.ec2.callCount('DescribeInstances');
  await reconcileBoth();
  const describeAfter = w.ec2.callCount('DescribeInstances');
  const writes = w.kube.writeCount();

  const n = count.toLocaleString('en-US');
  return [
    {
      name: `resync of ${n} unchanged Nodes, every key (before): DescribeInstances (node + lifecycle)`,
      value: describeBefore,
      unit: 'calls',
      rerun: RERUN,
      note: `${before.sent} keys sent; one call per batch of 10 per reconciler`,
    },
    {
      name: `resync of ${n} unchanged Nodes, node sweep (after): DescribeInstances (sweep + node + lifecycle)`,
      value: describeAfter,
      unit: 'calls',
      target: '<= 10 (issue: 5,000 Nodes)',
      rerun: RERUN,
      note: `${describeSweep} by the sweep (pages of 1000); ${writes} Kubernetes writes`,
    },
    {
      name: `resync of ${n} unchanged Nodes, node sweep (after): Node keys sent`,
      value: after.sent,
      unit: 'keys',
      target: '0',
      rerun: RERUN,
      note: `before: ${before.sent}`,
    },
  ];
}
