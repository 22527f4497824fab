import { routeReconciler } from '../../functions/route/reconciler.ts';
import { makeInstance, makeRouteTable } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import { makeNode } from '../helpers/nodes.ts';
import { cidrs, createWorld } from '../helpers/world.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- route';
/** Wide enough for a /24 per Node at any size measured here, outside the fake VPC's 10.0.0.0/16. */
const CLUSTER_CIDR = '10.128.0.0/9';

interface Measured {
  nodes: number;
  burstPasses: number;
  burstDescribes: number;
  burstCreates: number;
  resyncDescribeRouteTables: number;
  resyncDescribeInstances: number;
  resyncEc2Writes: number;
  resyncKubeWrites: number;
  resyncNodeLists: number;
}

/**
 * `count` initialized Nodes appear at once (one message each on the route queue, as the relay sends
 * them), then a scheduled resync finds everything in place. EC2 calls are the commands the real adapter
 * sends to the fake EC2 API (one DescribeInstances per 1000 IDs is the adapter's own chunking).
 */
async function measure(count: number): Promise<Measured> {
  const w = createWorld();
  w.ec2.routeLimit = 1000;
  w.ec2.putRouteTable(makeRouteTable());
  const deps = { ...w.routeDeps, clusterCidrs: cidrs([CLUSTER_CIDR]), routeTableLimit: 1000 };
  for (let i = 0; i < count; i++) {
    const instance = w.ec2.putInstance(makeInstance({ index: 1 + i }));
    const node: Node = makeNode(`node-${i}`, {
      providerID: `aws:///eu-west-1a/${instance.instanceId}`,
      initialized: true,
    });
    node.spec = { ...node.spec, podCIDR: `10.${128 + Math.floor(i / 256)}.${i % 256}.0/24` };
    w.kube.putNode(node);
  }

  await w.enqueue(
    'route.fifo',
    Array.from({ length: count }, (_, i) =>
      routeTableMessage({ eventType: 'ADDED', uid: `uid-${i}`, resourceVersion: String(1000 + i) }),
    ),
  );
  const burstPasses = await w.drain('route.fifo', routeReconciler, deps);
  const routes = w.ec2.routesOf('rtb-0123456789abcdef0').filter((r) => r.target.instanceId).length;
  if (routes !== count) throw new Error(`only ${routes} of ${count} routes created`);
  const burstDescribes = w.ec2.callCount('DescribeRouteTables') + w.ec2.callCount('DescribeInstances');
  const burstCreates = w.ec2.callCount('CreateRoute');

  w.ec2.resetCalls();
  w.kube.resetCalls();
  await w.enqueue('route.fifo', [routeTableMessage({ eventType: 'RESYNC', eventId: 'resync-1' })]);
  await w.drain('route.fifo', routeReconciler, deps);
  return {
    nodes: count,
    burstPasses,
    burstDescribes,
    burstCreates,
    resyncDescribeRouteTables: w.ec2.callCount('DescribeRouteTables'),
    resyncDescribeInstances: w.ec2.callCount('DescribeInstances'),
    resyncEc2Writes: w.ec2.writeCallCount(),
    resyncKubeWrites: w.kube.writeCount(),
    resyncNodeLists: w.kube.callCount('listNodes'),
  };
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const count of [100, 500]) {
    const m = await measure(count);
    results.push(
      {
        name: `route resync, ${count} unchanged Nodes: EC2 describe calls`,
        value: m.resyncDescribeRouteTables + m.resyncDescribeInstances,
        unit: 'calls',
        target: '2, whatever the Node count',
        rerun: RERUN,
        note: `${m.resyncDescribeRouteTables} DescribeRouteTables + ${m.resyncDescribeInstances} DescribeInstances; reference CCM: a full pass every 10 s`,
      },
      {
        name: `route resync, ${count} unchanged Nodes: EC2 + Kubernetes writes`,
        value: m.resyncEc2Writes + m.resyncKubeWrites,
        unit: 'calls',
        target: '0',
        rerun: RERUN,
        note: `${m.resyncNodeLists} Node list`,
      },
      {
        name: `route burst, ${count} new Nodes at once: passes`,
        value: m.burstPasses,
        unit: 'passes',
        target: `<= ${Math.ceil(count / 10)} (10 messages coalesce per batch)`,
        rerun: RERUN,
        note: `${m.burstCreates} CreateRoute; ${m.burstDescribes} describe calls in all`,
      },
    );
  }
  return results;
}
