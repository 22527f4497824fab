import type { KeyHint, KeyMessage, ObjectKey } from './message.ts';

/**
 * The route controller's only key (docs/adr/0003-route-reconciler-key.md): the cluster's route table.
 * Its MessageGroupId is the same for every message, so SQS FIFO never hands two passes over the table
 * to two Lambdas at once, and a burst of Node changes coalesces into few passes.
 */
export const ROUTE_TABLE_KEY = { kind: 'RouteTable', name: 'cluster' } as const satisfies ObjectKey;

export function isRouteTableKey(key: ObjectKey): boolean {
  return key.kind === ROUTE_TABLE_KEY.kind && key.name === ROUTE_TABLE_KEY.name && !key.namespace;
}

/**
 * The message a producer sends to the route queue. For a Node change (pod CIDR or provider ID set,
 * Node deleted) the hint carries that Node's `uid` and `resourceVersion`: the deduplication ID then
 * differs for every change (a re-sent change is still dropped), so a change that arrives while a pass
 * is running is never swallowed by it. The resync sends `{ eventType: 'RESYNC', eventId: <run id> }`.
 */
export function routeTableMessage(hint?: KeyHint): KeyMessage {
  return hint ? { ...ROUTE_TABLE_KEY, hint } : { ...ROUTE_TABLE_KEY };
}
