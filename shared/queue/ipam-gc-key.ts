import type { KeyHint, KeyMessage, ObjectKey } from './message.ts';

/**
 * The IP address manager's garbage-collection key: a Node key with a namespace, which no real Node has (Nodes are
 * cluster-scoped). The resync sends it every round; reconciling it deletes the network interfaces we created and
 * found `available` on two sweeps in a row.
 */
export const IPAM_GC_KEY = { kind: 'Node', namespace: 'ipam', name: 'garbage-collection' } as const satisfies ObjectKey;

export function isIpamGarbageCollectionKey(key: ObjectKey): boolean {
  return key.kind === 'Node' && key.namespace === IPAM_GC_KEY.namespace && key.name === IPAM_GC_KEY.name;
}

export function ipamGarbageCollectionMessage(hint?: KeyHint): KeyMessage {
  return hint ? { ...IPAM_GC_KEY, hint } : { ...IPAM_GC_KEY };
}
