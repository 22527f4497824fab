import type { KeyHint, KeyMessage, ObjectKey } from './message.ts';

/**
 * The service controller's garbage-collection key (docs/adr/0005): a Service key with no namespace,
 * which no real Service can have. The resync sends it every round; reconciling it removes the
 * cluster-owned load balancers, target groups and security groups that no Service wants any more.
 */
export const GARBAGE_COLLECTION_KEY = { kind: 'Service', name: 'garbage-collection' } as const satisfies ObjectKey;

export function isGarbageCollectionKey(key: ObjectKey): boolean {
  return key.kind === 'Service' && !key.namespace && key.name === GARBAGE_COLLECTION_KEY.name;
}

export function garbageCollectionMessage(hint?: KeyHint): KeyMessage {
  return hint ? { ...GARBAGE_COLLECTION_KEY, hint } : { ...GARBAGE_COLLECTION_KEY };
}
