import type { TargetHealth } from '../../shared/aws/elbv2-port.ts';
import { conditionOf, gateOf, podAddresses } from '../../shared/k8s/pod-readiness.ts';
import type { PodConditionWrite } from '../../shared/k8s/tgb-port.ts';
import type { Pod } from '../../shared/k8s/types.ts';

/**
 * Readiness gates, pure: each gated Pod's condition from its target's health in the target group. True only when
 * the target is `healthy`; otherwise False with ELB's reason and description, so `kubectl describe pod` says why the
 * rollout waits. https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/pod_readiness_gate/
 */

export interface GateChange {
  pod: Pod;
  condition: PodConditionWrite;
}

export interface GateDecision {
  /** The conditions that differ from what the Pods hold (only those are written). */
  changes: GateChange[];
  /** A gated Pod whose target is not healthy yet: look again soon. */
  waiting: boolean;
}

/** Reason and message of a gated Pod whose target is not registered (yet). */
export const NOT_REGISTERED = {
  reason: 'Target.NotRegistered',
  message: 'the target is not registered in the target group',
};

/** The message of every gate a deleted binding releases (the reference's words). */
export const BINDING_DELETED_MESSAGE = 'Target Group Binding is deleted';

/**
 * `health` is the target group's DescribeTargetHealth; a Pod's target is its address on `targetPort` (the port the
 * binding registers it on), or any target of its address when the port is not known.
 */
export function decideGates(
  pods: readonly Pod[],
  bindingName: string,
  health: readonly TargetHealth[],
  targetPort: (pod: Pod) => number | undefined,
): GateDecision {
  const changes: GateChange[] = [];
  let waiting = false;
  for (const pod of pods) {
    const gate = gateOf(pod, bindingName);
    if (!gate || pod.metadata.deletionTimestamp) continue;
    const addresses = new Set(podAddresses(pod));
    const port = targetPort(pod);
    const target = health.find(
      (h) => addresses.has(h.target.id) && (port === undefined || h.target.port === port) && !isDraining(h),
    );
    const condition = conditionFor(gate, target);
    if (condition.status !== 'True') waiting = true;
    if (differs(pod, condition)) changes.push({ pod, condition });
  }
  return { changes, waiting };
}

function isDraining(h: TargetHealth): boolean {
  return h.state === 'draining' || h.state === 'unhealthy.draining';
}

function conditionFor(type: string, target: TargetHealth | undefined): PodConditionWrite {
  if (!target) return { type, status: 'False', ...NOT_REGISTERED };
  if (target.state === 'healthy') return { type, status: 'True' };
  return {
    type,
    status: 'False',
    reason: target.reason ?? `Target.${target.state}`,
    message: target.description ?? `the target is ${target.state}`,
  };
}

/** Whether the Pod's condition of that type is not already the one wanted (status, reason and message). */
export function differs(pod: Pod, wanted: PodConditionWrite): boolean {
  const current = conditionOf(pod, wanted.type);
  return (
    !current ||
    current.status !== wanted.status ||
    (current.reason ?? '') !== (wanted.reason ?? '') ||
    (current.message ?? '') !== (wanted.message ?? '')
  );
}

/** Every gated Pod's condition True, as a deleted binding leaves them (only those not True already). */
export function releaseGates(pods: readonly Pod[], bindingName: string): GateChange[] {
  const out: GateChange[] = [];
  for (const pod of pods) {
    const gate = gateOf(pod, bindingName);
    if (!gate || pod.metadata.deletionTimestamp) continue;
    const condition: PodConditionWrite = { type: gate, status: 'True', reason: '', message: BINDING_DELETED_MESSAGE };
    if (conditionOf(pod, gate)?.status !== 'True') out.push({ pod, condition });
  }
  return out;
}
