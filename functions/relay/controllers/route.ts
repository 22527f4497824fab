import {
  CONDITION_NETWORK_UNAVAILABLE,
  isTerminating,
  nodeCondition,
  podCidrsOf,
} from '../../../shared/k8s/node-helpers.ts';
import { routeTableMessage } from '../../../shared/queue/route-table-key.ts';
import type { KubeObject } from '../kube-object.ts';
import type { ControllerModule } from './module.ts';
import { asNode, NODE_KIND } from './node-kind.ts';

/** functions/route: one route per pod CIDR to the Node's instance; it also owns NetworkUnavailable. */
function nodeRouteReads(object: KubeObject): unknown[] {
  const node = asNode(object);
  return [
    node.metadata.uid,
    node.spec?.providerID,
    podCidrsOf(node.spec),
    isTerminating(node),
    nodeCondition(node, CONDITION_NETWORK_UNAVAILABLE)?.status,
  ];
}

/**
 * Any change of a Node, its deletion included, is the route controller's single key `RouteTable/cluster`, hinted
 * with the Node (docs/adr/0003-route-reconciler-key.md).
 */
export const routeController = {
  queueUrlVariable: 'ROUTE_QUEUE_URL',
  migrationNames: ['route', 'route-controller', 'node-route-controller'],
  rules: [{ kind: NODE_KIND, onDelete: true, reads: nodeRouteReads }],
  routing: (context) => ({
    routes: { Node: { changed: (change, outcome) => context.send(outcome, [routeTableMessage(change.hint)]) } },
  }),
} as const satisfies ControllerModule;
