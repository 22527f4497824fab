import {
  type Ec2InstanceReadPort,
  type Instance,
  type InstanceState,
  LIVE_INSTANCE_STATES,
} from '../../shared/aws/ec2-port.ts';
import { instanceIdFromNodeName, instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import type { Clock } from '../../shared/clock.ts';
import { isConflict, isNotFound } from '../../shared/k8s/errors.ts';
import {
  hasTaint,
  instanceGraceLeftMs,
  isNodeReady,
  TAINT_SHUTDOWN,
  TAINT_UNINITIALIZED,
  withoutTaint,
} from '../../shared/k8s/node-helpers.ts';
import { readNode, recordNodeEvent, syncNodeWithConflictRetry } from '../../shared/k8s/node-ops.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { lifecycleAction } from '../../shared/nodes/lifecycle-plan.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import { isNodeKey } from '../../shared/queue/message.ts';
import type { Reconciler } from '../../shared/queue/runner.ts';

export interface LifecycleDeps {
  kube: KubernetesPort;
  ec2: Ec2InstanceReadPort;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

export interface LifecycleBatch {
  nodes: Map<string, Node | undefined>;
  instances: Map<string, Instance>;
  /** Instances of Nodes without a provider ID (`unclaimed`), by Node name; absent: EC2 shows none of that name. */
  byName: Map<string, Instance>;
}

/**
 * A NotReady Node without a provider ID that still waits for this controller (the `uninitialized` taint: its
 * kubelet runs with an external cloud provider): judged by the instance its name names, as the reference controller
 * does, so one whose instance was terminated before it was ever initialized is removed too. Other Nodes without an
 * AWS provider ID are another provider's.
 */
function unclaimed(node: Node | undefined): node is Node {
  return (
    node !== undefined &&
    !node.spec?.providerID &&
    hasTaint(node, TAINT_UNINITIALIZED) &&
    !isNodeReady(node) &&
    !node.metadata.deletionTimestamp
  );
}

/**
 * The instances the names of unclaimed Nodes name (a resource name `i-...`, or a private DNS name), terminated ones
 * included (a live one wins). EC2 clears a terminated instance's private DNS name, so a DNS-named Node whose instance
 * is gone finds nothing: judged as the reference controller does, gone once the young-Node grace is over.
 */
async function instancesByName(nodes: readonly Node[], ec2: Ec2InstanceReadPort): Promise<Map<string, Instance>> {
  const byName = new Map<string, Instance>();
  if (nodes.length === 0) return byName;
  const names = nodes.map((n) => n.metadata.name);
  const ids = names.flatMap((n) => instanceIdFromNodeName(n) ?? []);
  const dnsNames = names.filter((n) => !instanceIdFromNodeName(n));
  const [byId, byDns] = await Promise.all([
    ids.length > 0 ? ec2.describeInstances(ids) : new Map<string, Instance>(),
    dnsNames.length > 0 ? ec2.findInstancesByPrivateDnsName(dnsNames, ALL_STATES) : [],
  ]);
  for (const name of names) {
    const id = instanceIdFromNodeName(name);
    const candidates = id
      ? [byId.get(id)].filter((i) => i !== undefined)
      : byDns.filter((i) => i.privateDnsName === name);
    const found = candidates.find((i) => i.state !== 'terminated') ?? candidates[0];
    if (found) byName.set(name, found);
  }
  return byName;
}

const ALL_STATES: readonly InstanceState[] = [...LIVE_INSTANCE_STATES, 'terminated'];

/**
 * Keeps Nodes in step with their instances: shutdown taint while stopped, Node deleted once the
 * instance is gone, taint removed when the Node is Ready again. Keys come from EC2 state-change
 * events (via the ec2-events router), Node readiness changes (via the relay) and the resync.
 */
export const nodeLifecycleReconciler: Reconciler<LifecycleDeps, LifecycleBatch> = {
  name: 'node-lifecycle',
  // Another queue's key (a Service, the route table, the IPAM GC key) names no Node to look at.
  accepts: isNodeKey,

  async prepareBatch(keys, deps) {
    const nodes = new Map<string, Node | undefined>();
    await Promise.all(keys.map(async (k) => nodes.set(k.name, await readNode(deps.kube, k.name))));
    const ids = [...nodes.values()].flatMap((n) => {
      const id = instanceIdFromProviderId(n?.spec?.providerID);
      return id ? [id] : [];
    });
    const [instances, byName] = await Promise.all([
      ids.length > 0 ? deps.ec2.describeInstances(ids) : new Map<string, Instance>(),
      instancesByName([...nodes.values()].filter(unclaimed), deps.ec2),
    ]);
    return { nodes, instances, byName };
  },

  async reconcile(key, deps, batch) {
    const node = batch.nodes.has(key.name) ? batch.nodes.get(key.name) : await readNode(deps.kube, key.name);
    let waitMs = 0;
    await syncNodeWithConflictRetry(deps.kube, key.name, node, async (n) => {
      // Nodes with an AWS provider ID, and uninitialized ones without any (by the instance their name names); the
      // rest belong to another provider.
      const instanceId = instanceIdFromProviderId(n.spec?.providerID);
      if (instanceId) waitMs = await act(n, instanceId, batch.instances.get(instanceId), deps);
      else if (unclaimed(n)) {
        // Read again when the Node changed since the batch was prepared (a 409 retry).
        const byName = batch.nodes.get(key.name) === n ? batch.byName : await instancesByName([n], deps.ec2);
        const found = byName.get(key.name);
        waitMs = await act(n, found?.instanceId ?? `named ${key.name}`, found, deps);
      }
    });
    // A young Node's instance EC2 does not show yet: looked at again once it should (or the grace is over).
    return waitMs > 0 ? { requeueAfterSeconds: Math.ceil(waitMs / 1000) } : undefined;
  },
};

/** Answers how long to wait before looking again (0: nothing to wait for). */
async function act(
  node: Node,
  instanceId: string,
  instance: Instance | undefined,
  deps: LifecycleDeps,
): Promise<number> {
  const name = node.metadata.name;
  const graceLeftMs = instanceGraceLeftMs(node, deps.clock.now());
  const action = lifecycleAction({
    ready: isNodeReady(node),
    instanceState: instance?.state,
    hasShutdownTaint: hasTaint(node, TAINT_SHUTDOWN),
    instanceMayAppear: graceLeftMs > 0,
  });
  const guard = { resourceVersion: node.metadata.resourceVersion ?? '' };
  switch (action) {
    case 'none':
      return 0;
    case 'wait-for-instance':
      deps.log.info('instance not visible yet: the Node is young, waiting before judging it gone', {
        node: name,
        instanceId,
        graceLeftMs,
      });
      return graceLeftMs;
    case 'add-shutdown-taint':
      await deps.kube.patchNode(
        name,
        {
          spec: {
            taints: [
              ...(node.spec?.taints ?? []),
              { key: TAINT_SHUTDOWN, effect: 'NoSchedule', timeAdded: new Date(deps.clock.now()).toISOString() },
            ],
          },
        },
        guard,
      );
      deps.metrics.count(MetricName.NodesTainted);
      deps.log.info('node tainted: instance stopped', { node: name, instanceId });
      return 0;
    case 'remove-shutdown-taint':
      await deps.kube.patchNode(name, { spec: { taints: withoutTaint(node, TAINT_SHUTDOWN) } }, guard);
      deps.metrics.count(MetricName.NodesUntainted);
      deps.log.info('shutdown taint removed: node ready', { node: name, instanceId });
      return 0;
    case 'delete-node': {
      const why = instance ? `instance ${instanceId} is ${instance.state}` : `instance ${instanceId} no longer exists`;
      try {
        await deps.kube.deleteNode(name, { uid: node.metadata.uid, resourceVersion: node.metadata.resourceVersion });
      } catch (err) {
        if (isNotFound(err)) return 0;
        if (!isConflict(err)) {
          await recordNodeEvent(
            deps,
            node,
            'Warning',
            'DeletingNodeFailed',
            `Error deleting node ${name}: ${String(err)}`,
          );
        }
        throw err;
      }
      // Recorded once the delete is accepted: a 409 retry must not announce the deletion twice.
      await recordNodeEvent(deps, node, 'Normal', 'DeletingNode', `Deleting node ${name} because ${why}`);
      deps.metrics.count(MetricName.NodesDeleted);
      deps.log.info('node deleted', { node: name, instanceId, reason: why });
      return 0;
    }
  }
}
