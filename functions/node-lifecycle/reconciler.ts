import type { Ec2Port, Instance } from '../../shared/aws/ec2-port.ts';
import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import type { Clock } from '../../shared/clock.ts';
import { isConflict, isNotFound } from '../../shared/k8s/errors.ts';
import {
  hasTaint,
  instanceGraceLeftMs,
  isNodeReady,
  TAINT_SHUTDOWN,
  withoutTaint,
} from '../../shared/k8s/node-helpers.ts';
import { readNode, recordNodeEvent, syncNodeWithConflictRetry } from '../../shared/k8s/node-ops.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import { isNodeKey } from '../../shared/queue/message.ts';
import type { Reconciler } from '../../shared/queue/runner.ts';
import { lifecycleAction } from './diff.ts';

export interface LifecycleDeps {
  kube: KubernetesPort;
  ec2: Ec2Port;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

export interface LifecycleBatch {
  nodes: Map<string, Node | undefined>;
  instances: Map<string, Instance>;
}

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
    const instances = ids.length > 0 ? await deps.ec2.describeInstances(ids) : new Map<string, Instance>();
    return { nodes, instances };
  },

  async reconcile(key, deps, batch) {
    const node = batch.nodes.has(key.name) ? batch.nodes.get(key.name) : await readNode(deps.kube, key.name);
    let waitMs = 0;
    await syncNodeWithConflictRetry(deps.kube, key.name, node, async (n) => {
      // Only Nodes with an AWS provider ID are ours to judge; the rest are still being
      // initialized, or belong to another provider.
      const instanceId = instanceIdFromProviderId(n.spec?.providerID);
      if (instanceId) waitMs = await act(n, instanceId, batch.instances.get(instanceId), deps);
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
