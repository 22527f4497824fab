import { LEGACY_READINESS_GATE_PREFIX, READINESS_GATE_PREFIX } from './tgb-types.ts';
import type { Pod } from './types.ts';

/**
 * What a binding reads of a Pod: its readiness gate for the binding, that gate's condition, its other conditions and
 * its address. https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-readiness-gate
 */

export interface PodConditionView {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
}

function conditionsOf(pod: Pod): PodConditionView[] {
  return (pod.status?.conditions ?? []) as PodConditionView[];
}

/**
 * The condition type of the Pod's readiness gate for this binding (`target-health.elbv2.k8s.aws/<binding>`, or the
 * reference's older prefix, which is served the same), or undefined when the Pod has none.
 */
export function gateOf(pod: Pod, bindingName: string): string | undefined {
  const gates = (pod.spec?.readinessGates ?? []) as { conditionType?: string }[];
  const wanted = [READINESS_GATE_PREFIX + bindingName, LEGACY_READINESS_GATE_PREFIX + bindingName];
  return gates.map((g) => g.conditionType).find((t): t is string => t !== undefined && wanted.includes(t));
}

export function conditionOf(pod: Pod, type: string): PodConditionView | undefined {
  return conditionsOf(pod).find((c) => c.type === type);
}

export function gateStatus(pod: Pod, gate: string): PodConditionView['status'] | undefined {
  return conditionOf(pod, gate)?.status;
}

export function isPodConditionTrue(pod: Pod, type: string): boolean {
  return conditionOf(pod, type)?.status === 'True';
}

/** The Pod's addresses (`status.podIPs`, else `status.podIP`). */
export function podAddresses(pod: Pod): string[] {
  const ips = (pod.status?.podIPs ?? []) as { ip?: string }[];
  const listed = ips.flatMap((i) => (i.ip ? [i.ip] : []));
  if (listed.length > 0) return listed;
  const ip = pod.status?.podIP;
  return typeof ip === 'string' && ip ? [ip] : [];
}
