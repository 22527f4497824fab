import { createHash } from 'node:crypto';
import {
  type KeyHint,
  NODE_JOIN_HINT_SOURCE,
  NODE_JOIN_LEAVE_HINT_SOURCE,
  NODE_LEAVE_HINT_SOURCE,
  NODE_SET_HINT_SOURCE,
} from '../../shared/queue/message.ts';

/**
 * A resync round sends every LoadBalancer Service every 5 minutes (functions/resync/). Reading all of a load
 * balancer each time (attributes, listener attributes, target health, security groups: 12 calls for a Service
 * of two ports) costs more than it finds, since nearly every round finds nothing. So a resync pass looks first
 * (each backend's quick check: the load balancer, its tags and what its listeners forward to, with reads shared
 * across the batch) and falls through to the full pass only when something differs; every Service still gets
 * a full pass once an hour, in a slot of its own, so the load is even across rounds
 * (docs/reconcilers.md, the service controller).
 */

/** How often the resync runs (the schedule in stacks/). */
export const RESYNC_ROUND_MS = 5 * 60_000;
/** Every Service gets a full pass once in this many rounds: hourly. */
export const FULL_PASS_ROUNDS = 12;
/**
 * A round's messages reach a Service a little after the round starts; a slot this much wider than a round
 * still holds the round meant for it when that round comes late (the next round may then find it due again).
 */
const SLOT_SLACK_MS = 60_000;
const PERIOD_MS = RESYNC_ROUND_MS * FULL_PASS_ROUNDS;

/** The Service's slot, 0..11: its full pass falls in the round that starts then within each hour. */
export function fullPassSlot(serviceKey: string): number {
  return createHash('sha256').update(serviceKey).digest().readUInt32BE(0) % FULL_PASS_ROUNDS;
}

/**
 * Whether a resync pass at `nowMs` is the Service's hourly full pass. The round number comes from the clock
 * (`nowMs / 5 min`), not from the hint: the round's eventId is EventBridge's event ID, which has no order.
 */
export function fullPassDue(serviceKey: string, nowMs: number): boolean {
  const sinceSlot = (((nowMs - fullPassSlot(serviceKey) * RESYNC_ROUND_MS) % PERIOD_MS) + PERIOD_MS) % PERIOD_MS;
  return sinceSlot < RESYNC_ROUND_MS + SLOT_SLACK_MS;
}

/**
 * A pass may start with the quick check only when the resync alone sent the key, on its first delivery: a
 * Service, EndpointSlice or Node event (any other hint) asks for the full pass, and so does a retry or a
 * requeue (work left by an earlier attempt: a load balancer provisioning, a target group waiting to go).
 */
export function quickCheckAllowed(
  hints: readonly KeyHint[],
  receiveCount: number,
  serviceKey: string,
  nowMs: number,
): boolean {
  if (receiveCount !== 1 || hints.length === 0) return false;
  if (!hints.every((h) => h.eventType === 'RESYNC')) return false;
  return !fullPassDue(serviceKey, nowMs);
}

/**
 * A Node-set change (a Node joined, left, or changed its part in the load balancers' targets: the relay sends every
 * LoadBalancer Service's key) changes what the targets and the Node security group rules should be, nothing
 * else. On its first delivery, when Node-set changes alone sent the key, the backend looks quickly (as a resync
 * does) and then sees only to the targets and the Node rules; when the look finds anything else off, it makes the
 * full pass. A retry, a requeue or any other hint asks for the full pass.
 */
export function nodeSetPassAllowed(hints: readonly KeyHint[], receiveCount: number): boolean {
  const nodeSet = (h: KeyHint) => h.source !== undefined && NODE_SET_SOURCES.has(h.source);
  return receiveCount === 1 && hints.length > 0 && hints.every(nodeSet);
}

/**
 * The kinds of shorter pass a key's hints allow (`Pass.shortPass`): `node-join` is a Node-set pass whose every
 * hint is a round of joins only (NODE_JOIN_HINT_SOURCE): no target can have left, so the wanted instance targets
 * are registered without reading the registered ones first; `node-leave` one whose every hint is a round of leaves
 * only (NODE_LEAVE_HINT_SOURCE): the listed Nodes' instances no longer wanted are deregistered without that read;
 * `node-join-leave` one whose hints are such rounds of both kinds, or rounds of both (NODE_JOIN_LEAVE_HINT_SOURCE):
 * both, still without the read (shared/load-balancers/targets.ts `TargetsMode`). Any ordinary round coalesced
 * with them makes the ordinary `node-set`.
 */
export type ShortPass = 'resync' | 'node-set' | 'node-join' | 'node-leave' | 'node-join-leave';

const NODE_SET_SOURCES: ReadonlySet<string> = new Set([
  NODE_SET_HINT_SOURCE,
  NODE_JOIN_HINT_SOURCE,
  NODE_LEAVE_HINT_SOURCE,
  NODE_JOIN_LEAVE_HINT_SOURCE,
]);

/** Which shorter pass, if any, this delivery allows: the resync's quick look or a Node-set change's pass. */
export function shortPassFor(
  hints: readonly KeyHint[],
  receiveCount: number,
  serviceKey: string,
  nowMs: number,
): ShortPass | undefined {
  if (quickCheckAllowed(hints, receiveCount, serviceKey, nowMs)) return 'resync';
  if (!nodeSetPassAllowed(hints, receiveCount)) return undefined;
  if (hints.some((h) => h.source === NODE_SET_HINT_SOURCE)) return 'node-set';
  const joins = hints.some((h) => h.source !== NODE_LEAVE_HINT_SOURCE);
  const leaves = hints.some((h) => h.source !== NODE_JOIN_HINT_SOURCE);
  return joins && leaves ? 'node-join-leave' : joins ? 'node-join' : 'node-leave';
}
