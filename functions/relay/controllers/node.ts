import { ANNOTATION_PROVIDED_NODE_IP, hasTaint, TAINT_UNINITIALIZED } from '../../../shared/k8s/node-helpers.ts';
import type { KubeObject } from '../kube-object.ts';
import type { ControllerModule } from './module.ts';
import { asNode, NODE_KIND } from './node-kind.ts';

/**
 * functions/node: initializes tainted Nodes (provider ID, labels, addresses) and keeps addresses
 * current. Heartbeats (`lastHeartbeatTime`), images, capacity, volumes and the like are left out.
 */
function nodeInitReads(object: KubeObject): unknown[] {
  const node = asNode(object);
  return [
    node.metadata.uid,
    node.spec?.providerID,
    hasTaint(node, TAINT_UNINITIALIZED),
    node.metadata.annotations?.[ANNOTATION_PROVIDED_NODE_IP],
    (node.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`),
  ];
}

/** A changed Node is the Node's own key; a deleted one leaves nothing to initialize. */
export const nodeController = {
  queueUrlVariable: 'NODE_QUEUE_URL',
  migrationNames: ['cloud-node', 'cloud-node-controller'],
  rules: [{ kind: NODE_KIND, onDelete: false, reads: nodeInitReads }],
  routing: (context) => ({
    routes: { Node: { changed: (change, outcome) => context.send(outcome, [context.ownKey(change)]) } },
  }),
} as const satisfies ControllerModule;
