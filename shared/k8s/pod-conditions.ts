import type { PodConditionWrite } from './tgb-port.ts';
import type { Pod } from './types.ts';

/**
 * A Pod condition set by type (the readiness gate's), written as a strategic merge patch of `pods/<name>/status`:
 * `status.conditions` is merged by `type` (its patchMergeKey), so the kubelet's conditions and the other gates stay as
 * they are; a field left out of the condition is removed (null); `lastTransitionTime` moves only when the status
 * does, as the API conventions ask. The adapters and the fakes build the same patch here.
 * https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-readiness-gate
 * https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties
 */

export type PodCondition = NonNullable<NonNullable<Pod['status']>['conditions']>[number];

export interface PodConditionPatch {
  status: { conditions: Record<string, string | null>[] };
}

/** The patch that sets `condition` on `pod`, or undefined when the Pod already has it as asked (nothing to write). */
export function podConditionPatch(
  pod: Pod,
  condition: PodConditionWrite,
  nowMs: number,
): PodConditionPatch | undefined {
  const current = pod.status?.conditions?.find((c) => c.type === condition.type);
  const sameStatus = current?.status === condition.status;
  if (
    sameStatus &&
    current?.lastTransitionTime !== undefined &&
    (current.reason ?? '') === (condition.reason ?? '') &&
    (current.message ?? '') === (condition.message ?? '')
  ) {
    return undefined;
  }
  const element: Record<string, string | null> = {
    type: condition.type,
    status: condition.status,
    reason: condition.reason || null,
    message: condition.message || null,
  };
  if (!sameStatus || current?.lastTransitionTime === undefined) element.lastTransitionTime = metaTime(nowMs);
  return { status: { conditions: [element] } };
}

/** metav1.Time as the API server writes it: RFC 3339 in whole seconds. */
export function metaTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
