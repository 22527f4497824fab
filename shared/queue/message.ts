import { createHash } from 'node:crypto';
import { parseBody } from '../parse-body.ts';
import * as z from '../zod.ts';

/**
 * A message names a key, not a change: reconcilers always re-read current state, and the hint
 * only says why the key was enqueued (for logs, deduplication and metrics).
 */
export const ObjectKind = z.enum([
  'Node',
  'Service',
  'EndpointSlice',
  'Pod',
  'RouteTable',
  'IngressGroup',
  'IngressStacks',
  'TargetGroupBinding',
]);
export type ObjectKind = z.infer<typeof ObjectKind>;

const RFC1123 = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const dnsName = (max: number) =>
  z.string().check(z.minLength(1), z.maxLength(max), z.regex(RFC1123, 'must be a lowercase RFC 1123 name'));
const upTo = (max: number) => z.optional(z.string().check(z.maxLength(max)));

/** The longest `uid` or `resourceVersion` a hint may carry (an API server's uids are 36 characters). */
export const HINT_FIELD_MAX = 64;

export const KeyHint = z.strictObject({
  uid: upTo(HINT_FIELD_MAX),
  resourceVersion: upTo(HINT_FIELD_MAX),
  eventType: z.optional(z.enum(['ADDED', 'MODIFIED', 'DELETED', 'RESYNC', 'EC2'])),
  source: upTo(64),
  eventId: upTo(128),
});
export type KeyHint = z.infer<typeof KeyHint>;

/**
 * The hint source of the Service keys the relay sends when the set of Nodes that may take load balancer traffic
 * changed (a Node joined, left, or changed its part): the service controller then needs only targets and Node
 * rules looked at (functions/service/resync-check.ts).
 */
export const NODE_SET_HINT_SOURCE = 'relay/Node';

/**
 * The hint source of such a round when every change in it was a Node becoming a candidate (joining the targets),
 * seen after the relay's full list of the Nodes: no target can have left, so the wanted targets can be registered
 * (idempotent) without first reading which are (functions/service/nlb/targets-pass.ts).
 */
export const NODE_JOIN_HINT_SOURCE = 'relay/Node/joined';

/**
 * The hint source of such a round when every change in it was a Node ceasing to be a candidate while it stays in
 * the cluster (excluded, marked by the cluster autoscaler), seen after the relay's full list of the Nodes: the
 * instances that left belong to Nodes the pass lists, so the ones no longer wanted can be deregistered
 * (DeregisterTargets of a target not registered is no error) without first reading which are registered
 * (functions/service/nlb/targets-pass.ts). A Node deleted, or one whose instance changed, makes the ordinary round.
 */
export const NODE_LEAVE_HINT_SOURCE = 'relay/Node/left';

/**
 * The hint source of a round whose changes were both: Nodes becoming candidates and candidates ceasing to be ones
 * while they stay in the cluster (a Node replaced by another), and nothing else. The pass does what each of the
 * two does alone, still without reading the registered targets.
 */
export const NODE_JOIN_LEAVE_HINT_SOURCE = 'relay/Node/joined-left';

export const KeyMessage = z.strictObject({
  kind: ObjectKind,
  namespace: z.optional(dnsName(63)),
  name: dnsName(253),
  hint: z.optional(KeyHint),
});
export type KeyMessage = z.infer<typeof KeyMessage>;

export interface ObjectKey {
  kind: ObjectKind;
  namespace?: string;
  name: string;
}

/** A Node's key: kind Node and no namespace (Nodes are cluster-scoped; a namespaced Node key is synthetic). */
export function isNodeKey(key: ObjectKey): boolean {
  return key.kind === 'Node' && key.namespace === undefined;
}

/** `Kind/namespace/name` (namespace empty for cluster-scoped kinds): the FIFO MessageGroupId. */
export function keyString(key: ObjectKey): string {
  return `${key.kind}/${key.namespace ?? ''}/${key.name}`;
}

/** SQS allows at most 128 characters in a MessageGroupId; longer keys are hashed (still one group per key). */
export function messageGroupId(key: ObjectKey): string {
  const id = keyString(key);
  return id.length <= 128 ? id : `${key.kind}/sha256:${createHash('sha256').update(id).digest('hex')}`;
}

/**
 * Key + the revision that caused the message: a re-sent event (same revision) is dropped by SQS
 * within its 5-minute deduplication window, a newer revision is not. Without a revision, the event
 * ID stands in. SQS allows at most 128 characters, hence the hash.
 */
export function messageDeduplicationId(message: KeyMessage): string {
  const revision = message.hint?.resourceVersion ?? message.hint?.eventId ?? '';
  return createHash('sha256')
    .update(`${keyString(message)}\n${message.hint?.eventType ?? ''}\n${revision}`)
    .digest('hex');
}

export type ParseResult = { ok: true; message: KeyMessage } | { ok: false; error: string };

export function parseKeyMessage(body: string): ParseResult {
  const parsed = parseBody(body, KeyMessage, 'a key message');
  return parsed.ok ? { ok: true, message: parsed.value } : parsed;
}
