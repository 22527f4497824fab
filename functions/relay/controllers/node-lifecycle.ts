import { hasTaint, isNodeReady, TAINT_SHUTDOWN } from '../../../shared/k8s/node-helpers.ts';
import type { KubeObject } from '../kube-object.ts';
import type { ControllerModule } from './module.ts';
import { asNode, NODE_KIND } from './node-kind.ts';

/**
 * functions/node-lifecycle: readiness, the shutdown taint and the instance behind the Node. Ready
 * False and Unknown (kubelet silent) are both not ready: flapping between them is not news.
 */
function nodeLifecycleReads(object: KubeObject): unknown[] {
  const node = asNode(object);
  return [node.metadata.uid, node.spec?.providerID, isNodeReady(node), hasTaint(node, TAINT_SHUTDOWN)];
}

/** A changed Node is the Node's own key; a deleted one is no longer the controller's to delete. */
export const nodeLifecycleController = {
  queueUrlVariable: 'NODE_LIFECYCLE_QUEUE_URL',
  migrationNames: ['cloud-node-lifecycle', 'cloud-node-lifecycle-controller'],
  rules: [{ kind: NODE_KIND, onDelete: false, reads: nodeLifecycleReads }],
  routing: (context) => ({
    routes: { Node: { changed: (change, outcome) => context.send(outcome, [context.ownKey(change)]) } },
  }),
} as const satisfies ControllerModule;
