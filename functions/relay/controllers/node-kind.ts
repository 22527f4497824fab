import type { Node } from '../../../shared/k8s/types.ts';
import type { KindInfo, KubeObject } from '../kube-object.ts';

/**
 * Nodes: read by most controllers, so declared once here rather than in one of their modules (the table refuses
 * two declarations of one kind). A kind only one controller reads is declared in that controller's module.
 */
export const NODE_KIND = { name: 'Node', path: '/api/v1/nodes', namespaced: false } as const satisfies KindInfo;

/** A watched Node as the shared type the reconcilers' predicates take. */
export const asNode = (object: KubeObject) => object as unknown as Node;
