import type { ZoneIds } from '../../shared/aws/ec2-facts.ts';
import type { Ec2InstanceReadPort, Instance } from '../../shared/aws/ec2-port.ts';
import { clusterTagKey, isClusterResource } from '../../shared/aws/ownership.ts';
import type { Clock } from '../../shared/clock.ts';
import { RetryableError, TerminalError } from '../../shared/errors.ts';
import { hasTaint, instanceGraceLeftMs, TAINT_UNINITIALIZED } from '../../shared/k8s/node-helpers.ts';
import { readNode, recordNodeEvent, syncNodeWithConflictRetry } from '../../shared/k8s/node-ops.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { addressesEqual, desiredAddresses, type IpFamily, instanceAddresses } from '../../shared/nodes/addresses.ts';
import { type Lookup, lookupFor } from '../../shared/nodes/lookup.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import { isNodeKey, type ObjectKey } from '../../shared/queue/message.ts';
import type { Reconciler } from '../../shared/queue/runner.ts';
import { initializationPatch } from './plan.ts';

export interface NodeDeps {
  clusterName: string;
  region: string;
  ipFamilies: readonly IpFamily[];
  kube: KubernetesPort;
  ec2: Ec2InstanceReadPort;
  facts: Pick<ZoneIds, 'zoneId'>;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

export interface NodeBatch {
  nodes: Map<string, Node | undefined>;
  instances: Map<string, Instance | undefined>;
  lookups: Map<string, Lookup>;
}

/**
 * Initializes Nodes from EC2 (provider ID, addresses, topology and instance-type labels, the
 * uninitialized taint removed) and keeps the addresses of initialized Nodes current.
 */
export const nodeReconciler: Reconciler<NodeDeps, NodeBatch> = {
  name: 'node',
  // Another queue's key (a Service, the route table, the IPAM GC key) names no Node to look at.
  accepts: isNodeKey,

  /** Every key of the batch shares one DescribeInstances (by ID) and one by private DNS name. */
  async prepareBatch(keys, deps) {
    const nodes = new Map<string, Node | undefined>();
    await Promise.all(
      keys.map(async (key) => {
        nodes.set(key.name, await readNode(deps.kube, key.name));
      }),
    );
    const lookups = new Map<string, Lookup>();
    for (const [name, node] of nodes) if (node) lookups.set(name, lookupFor(node));
    const ids = [...lookups.values()].flatMap((l) => (l.by === 'id' ? [l.instanceId] : []));
    const dnsNames = [...lookups.values()].flatMap((l) => (l.by === 'dns' ? [l.name] : []));
    const [byId, byDns] = await Promise.all([
      ids.length > 0 ? deps.ec2.describeInstances(ids) : new Map<string, Instance>(),
      dnsNames.length > 0 ? deps.ec2.findInstancesByPrivateDnsName(dnsNames) : [],
    ]);
    const instances = new Map<string, Instance | undefined>();
    for (const [name, lookup] of lookups) {
      if (lookup.by === 'id') instances.set(name, byId.get(lookup.instanceId));
      if (lookup.by === 'dns') {
        // Several live instances can share a DNS name across VPCs/clusters: only ours count.
        const ours = byDns.filter(
          (i) => i.privateDnsName === lookup.name && isClusterResource(i.tags, deps.clusterName),
        );
        instances.set(name, ours.length === 1 ? ours[0] : undefined);
      }
    }
    return { nodes, instances, lookups };
  },

  async reconcile(key, deps, batch) {
    const node = batch.nodes.has(key.name) ? batch.nodes.get(key.name) : await readNode(deps.kube, key.name);
    await syncNodeWithConflictRetry(deps.kube, key.name, node, (n) => syncNode(n, deps, batch));
    return undefined;
  },

  async reportTerminal(key, error, deps) {
    await reportOnNode(deps, key, 'Warning', 'FailedToInitialize', error);
  },
};

async function syncNode(node: Node, deps: NodeDeps, batch: NodeBatch): Promise<void> {
  const name = node.metadata.name;
  const uninitialized = hasTaint(node, TAINT_UNINITIALIZED);
  const lookup = batch.lookups.get(name) ?? lookupFor(node);
  if (lookup.by === 'none') {
    // An `aws://` provider ID that names no instance is a broken Node of ours, which no retry mends: said once
    // as a terminal error (an Event on the Node, TerminalErrors). Another cloud's provider ID is simply not ours.
    if (node.spec?.providerID?.startsWith('aws:')) throw new TerminalError(`node ${name}: ${lookup.why}`);
    deps.log.info('node skipped: not an AWS instance', { node: name, reason: lookup.why });
    return;
  }
  const found = batch.instances.get(name);
  // A terminated instance is still described for a while, without its addresses: it does not exist.
  const instance = found?.state === 'terminated' ? undefined : found;
  if (!instance) {
    if (!uninitialized) return; // gone instances are the lifecycle controller's business
    const where = lookup.by === 'id' ? `instance ${lookup.instanceId}` : `an instance with private DNS name ${name}`;
    // Past the young-Node grace a missing instance is gone (terminated before its Node was initialized, which loses
    // its DNS name): retrying mends nothing and ends in the DLQ. Said once; the next resync round looks again.
    if (instanceGraceLeftMs(node, deps.clock.now()) === 0) {
      throw new TerminalError(`initializing node ${name}: ${where} not found in EC2`);
    }
    await recordNodeEvent(deps, node, 'Warning', 'InstanceNotFound', `${where} not found in EC2 (yet); will retry`);
    throw new RetryableError(`initializing node ${name}: ${where} not found`);
  }
  if (!isClusterResource(instance.tags, deps.clusterName)) {
    if (!uninitialized) return;
    const message = `instance ${instance.instanceId} is not tagged ${clusterTagKey(deps.clusterName)}; not initializing`;
    await recordNodeEvent(deps, node, 'Warning', 'InstanceNotInCluster', message);
    throw new RetryableError(`initializing node ${name}: ${message}`);
  }

  const wanted = desiredAddresses(node, instanceAddresses(instance, deps.ipFamilies));
  if (!wanted.ok) {
    await recordNodeEvent(deps, node, 'Warning', wanted.reason, wanted.message);
    // Initialization must not finish with the wrong addresses: the taint stays and we retry.
    if (uninitialized) throw new RetryableError(`initializing node ${name}: ${wanted.message}`);
    return;
  }

  let current = node;
  if (!addressesEqual(current.status?.addresses, wanted.addresses)) {
    current = await deps.kube.patchNodeStatus(
      name,
      { status: { addresses: wanted.addresses } },
      { resourceVersion: current.metadata.resourceVersion ?? '' },
    );
    if (!uninitialized) {
      deps.metrics.count(MetricName.NodeAddressesUpdated);
      deps.log.info('node addresses updated', { node: name, addresses: wanted.addresses });
    }
  }
  if (!uninitialized) return;

  const zoneId = await deps.facts.zoneId(instance.availabilityZone);
  const patch = initializationPatch(current, { instance, zoneId, region: deps.region });
  await deps.kube.patchNode(name, patch, { resourceVersion: current.metadata.resourceVersion ?? '' });
  deps.metrics.count(MetricName.NodesInitialized);
  deps.log.info('node initialized', { node: name, instanceId: instance.instanceId });
  await recordNodeEvent(
    deps,
    node,
    'Normal',
    'Synced',
    `Node synced with instance ${instance.instanceId} (${instance.instanceType} in ${instance.availabilityZone})`,
  );
}

export async function reportOnNode(
  deps: Pick<NodeDeps, 'kube' | 'log'>,
  key: ObjectKey,
  type: 'Normal' | 'Warning',
  reason: string,
  error: TerminalError,
): Promise<void> {
  const node = await deps.kube.getNode(key.name).catch(() => undefined);
  if (node) await recordNodeEvent(deps, node, type, reason, error.message);
}
