import type { InterruptionActionName } from '../../shared/config/schemas.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import type { MergePatch, Node, Taint } from '../../shared/k8s/types.ts';
import {
  type InterruptionKind,
  type InterruptionMessage,
  type InterruptionNotice,
  interruptionTaint,
  SPOT_NOTICE_MS,
  taintValue,
} from '../../shared/queue/interruption.ts';

/**
 * The interruption controller's decisions, as pure functions of the Node, the notice and the time: how the
 * Node is marked (the reference handler's taint and labels, and the load balancer exclusion label so the
 * service controller deregisters the Node before its Pods go), and when the drain must be over.
 */

/** What to do for a kind of notice: cordon and drain, or only mark the Node (INTERRUPTION_ACTIONS names them). */
export type InterruptionAction = InterruptionActionName;

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

/** The out-of-service taint: the Node is shut down, its Pods may be force-deleted and their volumes detached. */
export const TAINT_OUT_OF_SERVICE: Taint = {
  key: 'node.kubernetes.io/out-of-service',
  value: 'nodeshutdown',
  effect: 'NoExecute',
};

/** The newest notice of a batch (several events about one Node coalesce): the latest event decides. */
export function newestNotice(messages: readonly InterruptionMessage[]): InterruptionNotice | undefined {
  let newest: InterruptionNotice | undefined;
  for (const { notice } of messages) {
    if (!newest || Date.parse(notice.eventTime) >= Date.parse(newest.eventTime)) newest = notice;
  }
  return newest;
}

/**
 * When the drain must be over, in ms since the epoch: the notice's deadline; for a spot warning without one,
 * two minutes after it; for a lifecycle hook, its global timeout after the event (heartbeats keep the
 * instance waiting until then). Undefined: no deadline (a rebalance recommendation).
 */
export function drainDeadline(notice: InterruptionNotice, hookGlobalTimeoutSeconds?: number): number | undefined {
  if (notice.deadline) return Date.parse(notice.deadline);
  const at = Date.parse(notice.eventTime);
  if (notice.kind === 'spot-interruption' || notice.kind === 'capacity-reservation-interruption') {
    return at + SPOT_NOTICE_MS;
  }
  if (notice.kind === 'asg-lifecycle-termination' && hookGlobalTimeoutSeconds) {
    return at + hookGlobalTimeoutSeconds * 1000;
  }
  return undefined;
}

/**
 * The patch that marks the Node for the notice (taint, the reference's labels, the load balancer exclusion),
 * or undefined when it carries them already: a duplicate or a redelivery changes nothing.
 */
export function markPatch(
  node: Node,
  notice: InterruptionNotice,
  action: InterruptionAction,
): MergePatch<Node> | undefined {
  const labels = node.metadata.labels ?? {};
  const wantedLabels: Record<string, string> = {
    [LABEL_ACTION]: action === 'drain' ? 'cordon-and-drain' : 'taint',
    [LABEL_EVENT_ID]: taintValue(notice.eventId),
    [LABEL_ACTION_TIME]: String(Math.floor(Date.parse(notice.eventTime) / 1000)),
  };
  if (action === 'drain') wantedLabels[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = 'true';
  const labelChanges = Object.fromEntries(Object.entries(wantedLabels).filter(([k, v]) => labels[k] !== v));
  const taint = interruptionTaint(notice.kind, notice.eventId);
  const taints = node.spec?.taints ?? [];
  const hasTaint =
    !taint || taints.some((t) => t.key === taint.key && t.value === taint.value && t.effect === taint.effect);
  if (Object.keys(labelChanges).length === 0 && hasTaint) return undefined;
  const patch: MergePatch<Node> = {};
  if (Object.keys(labelChanges).length > 0) patch.metadata = { labels: labelChanges };
  if (!hasTaint && taint) patch.spec = { taints: [...taints.filter((t) => t.key !== taint.key), taint] };
  return patch;
}

/** The out-of-service taint added to the Node's taints, or undefined when it has it. */
export function outOfServicePatch(node: Node): MergePatch<Node> | undefined {
  const taints = node.spec?.taints ?? [];
  if (taints.some((t) => t.key === TAINT_OUT_OF_SERVICE.key)) return undefined;
  return { spec: { taints: [...taints, TAINT_OUT_OF_SERVICE] } };
}
