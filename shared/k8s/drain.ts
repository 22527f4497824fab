import type { OwnerReference, Pod } from './types.ts';

/**
 * Which Pods a drain evicts, deletes, skips or waits for: pure, no I/O, table-tested. The rules are
 * those of `kubectl drain` with `--ignore-daemonsets`
 * (https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/), as a controller that must
 * empty a Node before its instance goes has no one to ask about the others.
 */

/** The annotation the kubelet puts on the API copy of a static Pod. */
export const ANNOTATION_MIRROR_POD = 'kubernetes.io/config.mirror';

/** What the API server uses when a Pod does not set terminationGracePeriodSeconds. */
export const DEFAULT_TERMINATION_GRACE_SECONDS = 30;

export type PodDrainAction =
  /** Through the Eviction API, with this grace period. */
  | { action: 'evict'; gracePeriodSeconds: number }
  /** Finished: a plain delete (no budget counts a finished Pod, and nothing restarts it). */
  | { action: 'delete' }
  /** Left on the Node: a mirror Pod (the kubelet owns it) or a DaemonSet's Pod (see drainAction). */
  | { action: 'skip'; reason: 'mirror' | 'daemonset' }
  /** Already terminating: its grace period is running, evicting it again changes nothing. */
  | { action: 'wait' };

export interface DrainOptions {
  /**
   * Upper bound on each Pod's grace period: an interruption notice leaves a fixed time, and a Pod
   * that asks for more would still be running when the instance goes.
   */
  maxGracePeriodSeconds?: number;
}

/**
 * - mirror Pods are skipped: they are the API's view of a static Pod from the kubelet's manifest
 *   directory; deleting one only makes the kubelet create it again;
 * - terminating Pods (deletionTimestamp set) are waited for;
 * - finished Pods (Succeeded, Failed) are deleted, even a DaemonSet's, as kubectl drain does;
 * - a running DaemonSet Pod is skipped: the DaemonSet controller ignores `unschedulable` and would
 *   put it back at once; it stops with the Node. "DaemonSet's" means its controller reference (the
 *   owner with `controller: true`), as kubectl decides;
 * - everything else is evicted with its own grace period (capped by `maxGracePeriodSeconds`).
 */
export function drainAction(pod: Pod, options: DrainOptions = {}): PodDrainAction {
  if (isMirrorPod(pod)) return { action: 'skip', reason: 'mirror' };
  if (isTerminatingPod(pod)) return { action: 'wait' };
  if (isFinishedPod(pod)) return { action: 'delete' };
  if (controllerOf(pod)?.kind === 'DaemonSet') return { action: 'skip', reason: 'daemonset' };
  return { action: 'evict', gracePeriodSeconds: podGracePeriodSeconds(pod, options.maxGracePeriodSeconds) };
}

export interface DrainPlan {
  evict: { pod: Pod; gracePeriodSeconds: number }[];
  delete: Pod[];
  skip: Pod[];
  wait: Pod[];
}

/** The Pods of one Node sorted by what a drain pass does with them. */
export function planDrain(pods: readonly Pod[], options: DrainOptions = {}): DrainPlan {
  const plan: DrainPlan = { evict: [], delete: [], skip: [], wait: [] };
  for (const pod of pods) {
    const decided = drainAction(pod, options);
    if (decided.action === 'evict') plan.evict.push({ pod, gracePeriodSeconds: decided.gracePeriodSeconds });
    else plan[decided.action].push(pod);
  }
  return plan;
}

/** Drained: nothing left but Pods a drain leaves in place. */
export function isDrained(pods: readonly Pod[]): boolean {
  return pods.every((pod) => drainAction(pod).action === 'skip');
}

/** The Pod's own grace period (spec.terminationGracePeriodSeconds, 30 when unset), at most `max`. */
export function podGracePeriodSeconds(pod: Pod, max?: number): number {
  const own = pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_SECONDS;
  return max === undefined ? own : Math.max(0, Math.min(own, max));
}

export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[ANNOTATION_MIRROR_POD] !== undefined;
}

export function isTerminatingPod(pod: Pod): boolean {
  return Boolean(pod.metadata.deletionTimestamp);
}

export function isFinishedPod(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** Ready condition True: what the disruption controller counts as a healthy Pod. */
export function isPodReady(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The owner with `controller: true` (metav1.GetControllerOf). */
export function controllerOf(pod: Pod): OwnerReference | undefined {
  return pod.metadata.ownerReferences?.find((owner) => owner.controller === true);
}
