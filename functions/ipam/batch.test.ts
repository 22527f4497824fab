import { describe, expect, it } from 'vitest';
import { makeNode } from '../../test/helpers/nodes.ts';
import { ipamReconciler } from './reconciler.ts';
import { createIpamWorld, IPAM_QUEUE, type IpamWorld } from './testing/world.ts';

const NODES = ['win-1', 'win-2', 'win-3', 'win-4'];

/** The Nodes with one Pod each, settled: every journal written and verified. */
async function settledWorld(): Promise<IpamWorld> {
  const w = createIpamWorld();
  w.configure();
  for (const node of NODES) {
    w.addWindowsNode(node);
    w.addPod(node, `${node}-pod`);
  }
  await w.settle(...NODES);
  return w;
}

const reads = (w: IpamWorld) => ({
  instances: w.ec2.callCount('DescribeInstances'),
  interfaces: w.ec2.callCount('DescribeNetworkInterfaces'),
});

/** One resync round's keys, received in one batch. */
async function resyncRound(w: IpamWorld, names: string[], round: string) {
  await w.enqueue(
    IPAM_QUEUE,
    names.map((name) => ({ ...w.keyOf(name), hint: { eventType: 'RESYNC' as const, eventId: round } })),
  );
  let batches = 0;
  const handled = await w.sqs.pump(IPAM_QUEUE, (records) => {
    batches++;
    return w.invoke(ipamReconciler, w.deps, records);
  });
  expect({ handled, batches }).toEqual({ handled: names.length, batches: 1 });
}

describe('ipam: a batch reads EC2 once for all its Nodes', () => {
  it('a resync round over four Windows Nodes is one DescribeInstances and one DescribeNetworkInterfaces', async () => {
    const w = await settledWorld();
    const before = reads(w);
    w.clock.advance(60_000);

    await resyncRound(w, NODES, 'r1');

    // A resync pass does not go by its journal alone (the next test: those read nothing), so each of the four
    // looked at EC2; before batching that was four of each.
    expect(reads(w)).toEqual({ instances: before.instances + 1, interfaces: before.interfaces + 1 });
    for (const node of NODES) expect(w.podAddress('default', `${node}-pod`)).toBeDefined();
  });

  it('keys whose journal is recent read nothing from EC2', async () => {
    const w = await settledWorld();
    const before = reads(w);
    for (const node of NODES) w.addPod(node, `${node}-second`);
    await w.settle(...NODES);
    expect(reads(w)).toEqual(before);
    for (const node of NODES) expect(w.podAddress('default', `${node}-second`)).toBeDefined();
  });

  it('a Node whose instance EC2 does not show waits; the others of the batch go on', async () => {
    const w = await settledWorld();
    w.kube.putNode(
      makeNode('win-ghost', {
        providerID: 'aws:///eu-west-1a/i-0fffffffffffffff0',
        initialized: true,
        labels: { 'kubernetes.io/os': 'windows' },
      }),
    );
    w.addPod('win-ghost', 'ghost-pod');
    for (const node of NODES) w.addPod(node, `${node}-second`);

    await resyncRound(w, [...NODES, 'win-ghost'], 'r2');

    for (const node of NODES) expect(w.podAddress('default', `${node}-second`)).toBeDefined();
    expect(w.podAddress('default', 'ghost-pod')).toBeUndefined();
    expect(w.sqs.depth('ipam-dlq.fifo')).toBe(0);
  });
});
