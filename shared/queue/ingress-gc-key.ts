import type { KeyHint, KeyMessage, ObjectKey } from './message.ts';

/**
 * The Ingress controller's garbage-collection key: a kind of its own (every name is a valid IngressGroup name, so
 * no IngressGroup key could be set aside for it). The resync sends it every round; reconciling it deletes the
 * stacks (load balancer, target groups, security group) of IngressGroups that have no member and no finalizer
 * left, such as those of Ingresses deleted with their finalizers removed by hand.
 */
export const INGRESS_GARBAGE_COLLECTION_KEY = {
  kind: 'IngressStacks',
  name: 'garbage-collection',
} as const satisfies ObjectKey;

export function isIngressGarbageCollectionKey(key: ObjectKey): boolean {
  return key.kind === 'IngressStacks' && key.name === INGRESS_GARBAGE_COLLECTION_KEY.name;
}

export function ingressGarbageCollectionMessage(hint?: KeyHint): KeyMessage {
  return hint ? { ...INGRESS_GARBAGE_COLLECTION_KEY, hint } : { ...INGRESS_GARBAGE_COLLECTION_KEY };
}
