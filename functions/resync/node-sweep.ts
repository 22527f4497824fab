import type { Instance } from '../../shared/aws/ec2-port.ts';
import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import { hasTaint, isNodeReady, TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from '../../shared/k8s/node-helpers.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { addressesEqual, desiredAddresses, type IpFamily, instanceAddresses } from '../../shared/nodes/addresses.ts';
import { lifecycleAction } from '../../shared/nodes/lifecycle-plan.ts';
import { lookupFor } from '../../shared/nodes/lookup.ts';

export interface NodeSweepInput {
  nodes: readonly Node[];
  /** Every instance of the cluster (`Ec2Port.findClusterInstances`), terminated ones included. */
  clusterInstances: readonly Instance[];
  ipFamilies: readonly IpFamily[];
}

/** The Nodes each reconciler would act on, by name, in the order of `nodes`. */
export interface NodeSweep {
  node: string[];
  lifecycle: string[];
}

/**
 * Which Nodes the node and node-lifecycle reconcilers would change, judged from one list of the cluster's instances
 * instead of one DescribeInstances per batch of keys. Pure: the rules are the reconcilers' own, from shared/nodes
 * (`lookupFor`, `desiredAddresses`, `lifecycleAction`); where the sweep lacks what a reconciler reads (a zone ID, an instance not
 * tagged for the cluster, which may exist or be gone), it sends the key and lets the reconciler judge.
 */
export function sweepNodes(input: NodeSweepInput): NodeSweep {
  const byId = new Map(input.clusterInstances.map((i) => [i.instanceId, i]));
  // As the node reconciler finds a Node by its DNS name: live instances only, and exactly one of ours.
  const byDns = new Map<string, Instance[]>();
  for (const i of input.clusterInstances) {
    if (i.state === 'terminated' || !i.privateDnsName) continue;
    byDns.set(i.privateDnsName, [...(byDns.get(i.privateDnsName) ?? []), i]);
  }
  const sweep: NodeSweep = { node: [], lifecycle: [] };
  for (const node of input.nodes) {
    if (nodeWouldAct(node, byId, byDns, input.ipFamilies)) sweep.node.push(node.metadata.name);
    if (lifecycleWouldAct(node, byId)) sweep.lifecycle.push(node.metadata.name);
  }
  return sweep;
}

/** functions/node/reconciler.ts `syncNode`, as far as a list of the cluster's instances can tell. */
function nodeWouldAct(
  node: Node,
  byId: ReadonlyMap<string, Instance>,
  byDns: ReadonlyMap<string, Instance[]>,
  ipFamilies: readonly IpFamily[],
): boolean {
  // Initializing needs the zone ID (DescribeAvailabilityZones) and always writes: the reconciler's work.
  if (hasTaint(node, TAINT_UNINITIALIZED)) return true;
  const lookup = lookupFor(node);
  // An `aws://` provider ID naming no instance is reported (an Event) by the reconciler; another cloud's is not ours.
  if (lookup.by === 'none') return node.spec?.providerID?.startsWith('aws:') === true;
  const found = lookup.by === 'id' ? byId.get(lookup.instanceId) : soleMatch(byDns.get(lookup.name));
  // Not in the list: gone (the lifecycle reconciler's business) or not tagged for the cluster; either way an
  // initialized Node is left alone by the node reconciler. Terminated counts as gone.
  if (!found || found.state === 'terminated') return false;
  const wanted = desiredAddresses(node, instanceAddresses(found, ipFamilies));
  // A provided node IP the instance does not have: the reconciler says so (an Event) each time it looks.
  if (!wanted.ok) return true;
  return !addressesEqual(node.status?.addresses, wanted.addresses);
}

function soleMatch(candidates: readonly Instance[] | undefined): Instance | undefined {
  return candidates?.length === 1 ? candidates[0] : undefined;
}

/** functions/node-lifecycle/reconciler.ts: `lifecycleAction` on the instance of the Node's provider ID. */
function lifecycleWouldAct(node: Node, byId: ReadonlyMap<string, Instance>): boolean {
  const instanceId = instanceIdFromProviderId(node.spec?.providerID);
  // Without an AWS provider ID, only an uninitialized Node is judged (by the instance its name names, looked up by
  // name or DNS name, young-Node grace included): the reconciler's work, always sent.
  if (!instanceId) return !node.spec?.providerID && hasTaint(node, TAINT_UNINITIALIZED) && !isNodeReady(node);
  const instance = byId.get(instanceId);
  // Not tagged for the cluster, or gone: only DescribeInstances by ID tells, and the young-Node grace applies.
  if (!instance) return true;
  return (
    lifecycleAction({
      ready: isNodeReady(node),
      instanceState: instance.state,
      hasShutdownTaint: hasTaint(node, TAINT_SHUTDOWN),
    }) !== 'none'
  );
}
