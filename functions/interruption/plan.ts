import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import type { MergePatch, Node, Taint } from '../../shared/k8s/types.ts';
import {
  INTERRUPTION_TAINT_KEYS,
  type InterruptionKind,
  type InterruptionNotice,
  interruptionTaint,
  type NoticeKind,
  taintValue,
} from '../../shared/queue/interruption.ts';
import {
  ANNOTATION_INTERRUPTION,
  type Interruption,
  type InterruptionAction,
  type InterruptionState,
  noticeOfKind,
  stateText,
} from './notices.ts';

export type { InterruptionAction } from './notices.ts';

/**
 * The interruption controller's decisions about the Node, as pure functions: how the Node is marked (the reference
 * handler's taints and labels, the load balancer exclusion label so the service controller deregisters the Node
 * before its Pods go, and the controller's memory of the notices), and how those marks go once the interruption is
 * over. How the notices combine is notices.ts's.
 */

/**
 * The defaults: a rebalance recommendation is no notice of termination, so it only marks the Node (as
 * Karpenter does); everything else drains.
 */
export const DEFAULT_INTERRUPTION_ACTIONS: Readonly<Record<InterruptionKind, InterruptionAction>> = {
  'spot-interruption': 'drain',
  'rebalance-recommendation': 'taint-only',
  'scheduled-maintenance': 'drain',
  'asg-lifecycle-termination': 'drain',
  'capacity-reservation-interruption': 'drain',
  'instance-stopping': 'drain',
};

/** The reference handler's labels (aws-node-termination-handler), kept so tooling reading them keeps working. */
export const LABEL_ACTION = 'aws-node-termination-handler/action';
export const LABEL_ACTION_TIME = 'aws-node-termination-handler/action-time';
export const LABEL_EVENT_ID = 'aws-node-termination-handler/event-id';

/**
 * The value of `node.kubernetes.io/exclude-from-external-load-balancers` this controller sets, the reference
 * handler's: any value excludes the Node (the label's presence does), and this one says who set it, so that only
 * this value is ever removed, never an exclusion someone else decided.
 */
export const EXCLUDE_FROM_LOAD_BALANCERS_VALUE = 'aws-node-termination-handler';

/** The out-of-service taint: the Node is shut down, its Pods may be force-deleted and their volumes detached. */
export const TAINT_OUT_OF_SERVICE: Taint = {
  key: 'node.kubernetes.io/out-of-service',
  value: 'nodeshutdown',
  effect: 'NoExecute',
};

export interface MarkOptions {
  /** Exclude a drained Node from load balancers (INTERRUPTION_EXCLUDE_FROM_LOAD_BALANCERS). */
  excludeFromLoadBalancers: boolean;
}

/**
 * The patch that marks the Node for its interruption and remembers its notices: the leader's labels, the taint of
 * every kind among the notices (its value the ID of that kind's notice in charge), for a drain the load balancer
 * exclusion unless the Node has one already (whoever set it), and the state. Undefined when the Node carries them
 * all: a duplicate or a redelivery changes nothing.
 */
export function markPatch(
  node: Node,
  interruption: Interruption,
  state: InterruptionState,
  options: MarkOptions,
): MergePatch<Node> | undefined {
  const labels = node.metadata.labels ?? {};
  const { leader, action } = interruption;
  const wanted: Record<string, string> = {
    [LABEL_ACTION]: action === 'drain' ? 'cordon-and-drain' : 'taint',
    [LABEL_EVENT_ID]: taintValue(leader.eventId),
    [LABEL_ACTION_TIME]: String(Math.floor(Date.parse(leader.eventTime) / 1000)),
  };
  const exclusion = labels[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS];
  const labelChanges: Record<string, string | null> = Object.fromEntries(
    Object.entries(wanted).filter(([k, v]) => labels[k] !== v),
  );
  if (action === 'drain' && options.excludeFromLoadBalancers && exclusion === undefined) {
    labelChanges[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = EXCLUDE_FROM_LOAD_BALANCERS_VALUE;
  }
  // Ours from a drain that is over (the Node was uncordoned since) while nothing drains now: back in service. A Node
  // still cordoned keeps it until the end of the interruption lifts it (recovery.ts).
  if (action !== 'drain' && exclusion === EXCLUDE_FROM_LOAD_BALANCERS_VALUE && !node.spec?.unschedulable) {
    labelChanges[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = null;
  }
  const kinds = new Set<NoticeKind>(interruption.notices.map((n) => n.kind));
  const original = node.spec?.taints ?? [];
  // The taints of notices that no longer count go; a kind's taint still wanted is put back below.
  let taints = withoutTaintsOf(original, interruption.dropped);
  for (const kind of kinds) {
    const taint = interruptionTaint(kind, noticeOfKind(interruption, kind)!.eventId);
    if (!taint || taints.some((t) => t.key === taint.key && t.value === taint.value && t.effect === taint.effect))
      continue;
    taints = [...taints.filter((t) => t.key !== taint.key), taint];
  }
  const patch: MergePatch<Node> = {};
  const annotation = stateChange(node, state);
  if (Object.keys(labelChanges).length > 0 || annotation) {
    patch.metadata = {
      ...(Object.keys(labelChanges).length > 0 ? { labels: labelChanges } : {}),
      ...(annotation ? { annotations: annotation } : {}),
    };
  }
  if (taints !== original) patch.spec = { taints };
  return patch.metadata || patch.spec ? patch : undefined;
}

/** The patch that stores the state alone (a heartbeat's time), or undefined when the Node has it. */
export function statePatch(node: Node, state: InterruptionState): MergePatch<Node> | undefined {
  const annotation = stateChange(node, state);
  return annotation ? { metadata: { annotations: annotation } } : undefined;
}

/**
 * The interruption of these notices is over (the instance runs again, the Node is schedulable): the patch that
 * takes their marks off, or undefined when there are none. Their taints go (those whose value is theirs), the
 * reference's labels when they name one of them, this controller's own load balancer exclusion (never another
 * value) unless `keepExclusion` (a later notice drains), and the state keeps only `remaining`.
 */
export function overPatch(
  node: Node,
  over: readonly InterruptionNotice[],
  remaining: InterruptionState,
  keepExclusion: boolean,
): MergePatch<Node> | undefined {
  const ids = new Set(over.map((n) => taintValue(n.eventId)));
  const taints = node.spec?.taints ?? [];
  const kept = withoutTaintsOf(taints, over);
  const labels = node.metadata.labels ?? {};
  const removed: Record<string, null> = {};
  if (ids.has(labels[LABEL_EVENT_ID] ?? '')) {
    for (const key of [LABEL_ACTION, LABEL_EVENT_ID, LABEL_ACTION_TIME]) if (key in labels) removed[key] = null;
  }
  if (!keepExclusion && labels[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] === EXCLUDE_FROM_LOAD_BALANCERS_VALUE) {
    removed[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = null;
  }
  const annotation = stateChange(node, remaining);
  const patch: MergePatch<Node> = {};
  if (Object.keys(removed).length > 0 || annotation) {
    patch.metadata = {
      ...(Object.keys(removed).length > 0 ? { labels: removed } : {}),
      ...(annotation ? { annotations: annotation } : {}),
    };
  }
  if (kept.length !== taints.length) patch.spec = { taints: kept };
  return patch.metadata || patch.spec ? patch : undefined;
}

/** The out-of-service taint added to the Node's taints, or undefined when it has it. */
export function outOfServicePatch(node: Node): MergePatch<Node> | undefined {
  const taints = node.spec?.taints ?? [];
  if (taints.some((t) => t.key === TAINT_OUT_OF_SERVICE.key)) return undefined;
  return { spec: { taints: [...taints, TAINT_OUT_OF_SERVICE] } };
}

/** The taints without the interruption taints whose value is one of these notices'. */
function withoutTaintsOf(taints: readonly Taint[], notices: readonly InterruptionNotice[]): Taint[] {
  if (notices.length === 0) return taints as Taint[];
  const ids = new Set(notices.map((n) => taintValue(n.eventId)));
  const keys = new Set(Object.values(INTERRUPTION_TAINT_KEYS));
  const kept = taints.filter((t) => !(keys.has(t.key) && ids.has(t.value ?? '')));
  return kept.length === taints.length ? (taints as Taint[]) : kept;
}

/** The annotation change that stores `state` (null removes it), or undefined when the Node has it already. */
function stateChange(node: Node, state: InterruptionState): Record<string, string | null> | undefined {
  const current = node.metadata.annotations?.[ANNOTATION_INTERRUPTION];
  const next = stateText(state);
  if (current === next) return undefined;
  return { [ANNOTATION_INTERRUPTION]: next ?? null };
}
