import type { InterruptionActionName } from '../../shared/config/schemas.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { parseBody } from '../../shared/parse-body.ts';
import {
  type InterruptionKind,
  InterruptionNotice,
  type NoticeKind,
  SPOT_NOTICE_MS,
} from '../../shared/queue/interruption.ts';
import * as z from '../../shared/zod.ts';

/**
 * The notices of one Node's interruption, as pure functions: what the Node remembers of them (an annotation, since
 * a requeue carries only the newest message of a batch forward: an older, stronger notice would be lost with the
 * others), and how they combine. Whatever their order of arrival and however the queue groups them into batches,
 * the strongest action and the earliest deadline win: a rebalance recommendation arriving with the spot
 * interruption it announces (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html)
 * never stops its drain, and a later notice never pushes a deadline back.
 */

/** What to do for a kind of notice: cordon and drain, or only mark the Node (INTERRUPTION_ACTIONS names them). */
export type InterruptionAction = InterruptionActionName;

/** The Node's memory of its interruption: JSON, written by this controller only, in the same patch as its marks. */
export const ANNOTATION_INTERRUPTION = 'serverless-ccm/interruption';

/** Notices remembered at most (the newest): a Node interrupted over and over must not grow without end. */
export const MAX_REMEMBERED_NOTICES = 16;

export interface InterruptionState {
  /** The notices of the interruption under way, in event order. */
  notices: InterruptionNotice[];
  /** When each lifecycle hook's last heartbeat went (ISO), by its notice's event ID. */
  heartbeats: Record<string, string>;
}

const StoredState = z.strictObject({
  notices: z.array(InterruptionNotice),
  heartbeats: z.record(z.string(), z.iso.datetime({ offset: true })),
});

export const EMPTY_STATE: InterruptionState = { notices: [], heartbeats: {} };

/** The Node's annotation read back; what does not parse (edited by hand) reads as nothing remembered, with why. */
export function readState(node: Node): { state: InterruptionState; problem?: string } {
  const text = node.metadata.annotations?.[ANNOTATION_INTERRUPTION];
  if (text === undefined) return { state: EMPTY_STATE };
  const parsed = parseBody(text, StoredState, 'an interruption state');
  return parsed.ok ? { state: parsed.value } : { state: EMPTY_STATE, problem: parsed.error };
}

/** The annotation's value for a state; undefined for nothing to remember (the annotation goes). */
export function stateText(state: InterruptionState): string | undefined {
  if (state.notices.length === 0) return undefined;
  const notices = [...state.notices].sort(byEvent).slice(-MAX_REMEMBERED_NOTICES);
  const ids = new Set(notices.map((n) => n.eventId));
  const heartbeats = Object.fromEntries(
    Object.entries(state.heartbeats)
      .filter(([id]) => ids.has(id))
      .sort(),
  );
  return JSON.stringify({ notices, heartbeats });
}

/** The notice kinds that interrupt (all but `instance-running`, which ends an interruption). */
export function isInterruption(notice: InterruptionNotice): notice is InterruptionNotice & { kind: InterruptionKind } {
  return notice.kind !== 'instance-running';
}

/** A lifecycle hook's timeouts, as DescribeLifecycleHooks gives them. */
export interface HookTimeouts {
  heartbeatTimeoutSeconds: number;
  globalTimeoutSeconds: number;
}

/**
 * When the drain must be over, in ms since the epoch: the notice's deadline; for a spot or capacity reservation
 * warning without one, two minutes after it; for a lifecycle hook, half a heartbeat timeout before its global
 * timeout after the event (heartbeats keep the instance waiting until then, and the last pass must complete the
 * action before Auto Scaling takes the default result). Undefined: no deadline (a rebalance recommendation, a
 * stopping instance, a hook whose timeouts are not known).
 */
export function drainDeadline(notice: InterruptionNotice, hook?: HookTimeouts): number | undefined {
  if (notice.deadline) return Date.parse(notice.deadline);
  const at = Date.parse(notice.eventTime);
  if (notice.kind === 'spot-interruption' || notice.kind === 'capacity-reservation-interruption') {
    return at + SPOT_NOTICE_MS;
  }
  if (notice.kind === 'asg-lifecycle-termination' && hook) {
    return at + (hook.globalTimeoutSeconds - hook.heartbeatTimeoutSeconds / 2) * 1000;
  }
  return undefined;
}

/** The interruption of a Node as the notices decide it together. */
export interface Interruption {
  /** Every notice that still counts, in event order. */
  notices: InterruptionNotice[];
  /** Of those, the ones the Node did not remember: new this pass. */
  fresh: InterruptionNotice[];
  /** Notices that no longer count (see `combineNotices`): forgotten, and their marks taken off. */
  dropped: InterruptionNotice[];
  /** The strongest: `drain` if any notice drains. */
  action: InterruptionAction;
  /** The notice in charge: the strongest action, then the earliest deadline, event and ID. Its ID labels the Node. */
  leader: InterruptionNotice;
  /** The notices in that order, the leader first. */
  ranked: InterruptionNotice[];
  /** The earliest deadline of all, and the notice that set it. */
  deadline?: { at: number; notice: InterruptionNotice };
}

export interface InterruptionRules {
  actions: Readonly<Record<InterruptionKind, InterruptionAction>>;
  /** A lifecycle hook's timeouts, by the hook's notice (undefined: not known). */
  hookOf?: (notice: InterruptionNotice) => HookTimeouts | undefined;
}

/**
 * The notices the Node remembers and those of the batch, together; undefined when none interrupts. Dropped as over:
 * - what the Node remembers of a drain while the Node is schedulable: a drain is cordoned from its first pass on, so
 *   someone uncordoned it since (the instance came back, or an admin wants the Node in service);
 * - a notice whose deadline passed before a later notice's event: the Node outlived it (a spot instance stopped and
 *   started again, a maintenance window gone by), and its deadline must not cut a later drain short.
 */
export function combineNotices(
  remembered: readonly InterruptionNotice[],
  batch: readonly InterruptionNotice[],
  node: Node,
  rules: InterruptionRules,
): Interruption | undefined {
  const actionOf = (n: InterruptionNotice) => (isInterruption(n) ? rules.actions[n.kind] : 'taint-only');
  const deadlineOf = (n: InterruptionNotice) => drainDeadline(n, rules.hookOf?.(n));
  const uncordoned = !node.spec?.unschedulable && remembered.some((n) => actionOf(n) === 'drain');
  const byId = new Map<string, InterruptionNotice>();
  for (const n of [...remembered, ...batch]) if (isInterruption(n)) byId.set(n.eventId, n);
  const inBatch = new Set(batch.map((n) => n.eventId));
  const all = [...byId.values()];
  const latest = Math.max(...all.map((n) => Date.parse(n.eventTime)));
  const counts = (n: InterruptionNotice) => {
    if (uncordoned && !inBatch.has(n.eventId)) return false;
    const deadline = deadlineOf(n);
    return deadline === undefined || deadline >= latest || Date.parse(n.eventTime) >= latest;
  };
  const notices = all.filter(counts).sort(byEvent);
  if (notices.length === 0) return undefined;
  const rank = (n: InterruptionNotice) => (actionOf(n) === 'drain' ? 0 : 1);
  const due = (n: InterruptionNotice) => deadlineOf(n) ?? Number.POSITIVE_INFINITY;
  const ranked = [...notices].sort((a, b) => rank(a) - rank(b) || due(a) - due(b) || byEvent(a, b));
  const leader = ranked[0]!;
  const earliest = [...notices].sort((a, b) => due(a) - due(b) || byEvent(a, b))[0]!;
  const deadline = deadlineOf(earliest);
  const known = new Set(remembered.map((n) => n.eventId));
  return {
    notices,
    fresh: notices.filter((n) => !known.has(n.eventId)),
    dropped: all.filter((n) => !counts(n)).sort(byEvent),
    action: rank(leader) === 0 ? 'drain' : 'taint-only',
    leader,
    ranked,
    ...(deadline === undefined ? {} : { deadline: { at: deadline, notice: earliest } }),
  };
}

/** Event order: by time, then by ID (so that every order of arrival sorts alike). */
export function byEvent(a: InterruptionNotice, b: InterruptionNotice): number {
  return (
    Date.parse(a.eventTime) - Date.parse(b.eventTime) || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0)
  );
}

/** The kind's notice in charge of its taint: the first of that kind in the leader's order. */
export function noticeOfKind(interruption: Interruption, kind: NoticeKind): InterruptionNotice | undefined {
  return interruption.ranked.find((n) => n.kind === kind);
}
