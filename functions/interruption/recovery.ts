import { readNode, recordNodeEvent } from '../../shared/k8s/node-ops.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import type { InterruptionNotice } from '../../shared/queue/interruption.ts';
import type { ReconcileResult } from '../../shared/queue/runner.ts';
import { isInterruption, readState } from './notices.ts';
import { EXCLUDE_FROM_LOAD_BALANCERS_VALUE, overPatch } from './plan.ts';
import type { InterruptionDeps } from './reconciler.ts';

/**
 * The end of an interruption: the instance behind an interrupted Node runs again (an `instance-running` notice, from
 * the EC2 state change). Once the Node is schedulable too (whoever cordoned it, an admin uncordons it), the marks of
 * the notices older than the instance's start come off: their taints, the reference's labels, and the load balancer
 * exclusion this controller set (only its own value), so the Node takes load balancer traffic again. Until then the
 * notice is looked at again, less and less often; it has a message group of its own, so waiting holds back no
 * notice of the Node.
 */

/** The first wait for an uncordon, doubling at each look up to `MAX_WAIT_SECONDS`. */
export const FIRST_WAIT_SECONDS = 30;
export const MAX_WAIT_SECONDS = 900;
/** How long the controller waits for the uncordon: beyond, a Warning says the exclusion stays (below SQS's 4-day retention). */
export const RECOVERY_WATCH_MS = 3 * 24 * 3_600_000;

export async function recoverNode(
  nodeName: string,
  notices: readonly InterruptionNotice[],
  deps: InterruptionDeps,
  receiveCount: number,
): Promise<ReconcileResult | undefined> {
  const node = await readNode(deps.kube, nodeName);
  if (!node) return undefined;
  const since = Math.max(...notices.map((n) => Date.parse(n.eventTime)));
  const { state } = readState(node);
  const over = state.notices.filter((n) => Date.parse(n.eventTime) <= since);
  const remaining = { ...state, notices: state.notices.filter((n) => Date.parse(n.eventTime) > since) };
  const excluded =
    node.metadata.labels?.[LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] === EXCLUDE_FROM_LOAD_BALANCERS_VALUE;
  // A notice after the start that drains keeps the Node out (its drain has cordoned it, or is about to).
  const keepExclusion = remaining.notices.some((n) => isInterruption(n) && deps.actions[n.kind] === 'drain');
  // A Node this controller never marked (most starts), or marked only since: nothing of this interruption to take off.
  if (over.length === 0 && (!excluded || keepExclusion)) return undefined;
  if (node.spec?.unschedulable) {
    if (deps.clock.now() - since < RECOVERY_WATCH_MS) {
      return {
        requeueAfterSeconds: Math.min(MAX_WAIT_SECONDS, FIRST_WAIT_SECONDS * 2 ** Math.max(0, receiveCount - 1)),
      };
    }
    await recordNodeEvent(
      deps,
      node,
      'Warning',
      'LoadBalancerExclusionKept',
      `Instance ${notices[0]!.instanceId} runs again, but the Node stayed unschedulable for ${RECOVERY_WATCH_MS / 3_600_000} h: ${LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS}=${EXCLUDE_FROM_LOAD_BALANCERS_VALUE} stays; remove it when the Node is back in service`,
    );
    return undefined;
  }
  const patch = overPatch(node, over, remaining, keepExclusion);
  if (!patch) return undefined;
  const patched = await patchGuarded(deps.kube, nodeName, node.metadata.resourceVersion, patch);
  const kinds = [...new Set(over.map((n) => n.kind))].join(', ') || 'interruption';
  await recordNodeEvent(
    deps,
    patched,
    'Normal',
    'InterruptionOver',
    `Instance ${notices[0]!.instanceId} runs again and the Node is schedulable: the ${kinds} marks are off${keepExclusion ? '' : ', and the Node is back in load balancers'}`,
  );
  return undefined;
}

function patchGuarded(kube: KubernetesPort, name: string, resourceVersion: string | undefined, patch: object) {
  return kube.patchNode(name, patch, { resourceVersion: resourceVersion ?? '' });
}
