import { controllerOf, isFinishedPod, isPodReady, isTerminatingPod } from '../drain.ts';
import { KubernetesApiError } from '../errors.ts';
import { selectorMatches } from '../label-selector.ts';
import type { LabelSelector, OwnerReference, Pod, PodDisruptionBudget } from '../types.ts';

/**
 * PodDisruptionBudgets as FakeKubernetes evaluates them: the status the disruption controller would
 * compute, always up to date (the real one trails by a sync), and the eviction subresource's
 * admission check on it.
 * https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-budgets
 * https://kubernetes.io/docs/tasks/run-application/configure-pdb/
 */

export type BudgetStatus = NonNullable<PodDisruptionBudget['status']>;

/** The replicas a Pod's controller wants (its scale subresource), or undefined when the fake was not told. */
export type ScaleOf = (namespace: string, owner: OwnerReference) => number | undefined;

/** An unset selector selects nothing; `{}` selects every Pod of the namespace. */
export function selects(selector: LabelSelector | undefined, labels: Record<string, string> = {}): boolean {
  return selector !== undefined && selectorMatches(selector, labels);
}

/** The budgets of the Pod's namespace whose selector takes it. */
export function budgetsFor(pod: Pod, budgets: Iterable<PodDisruptionBudget>): PodDisruptionBudget[] {
  return [...budgets].filter(
    (b) => b.metadata.namespace === pod.metadata.namespace && selects(b.spec?.selector, pod.metadata.labels),
  );
}

/**
 * As the disruption controller computes it: healthy = Ready and not terminating. An integer
 * minAvailable counts the Pods selected; maxUnavailable and a percentage minAvailable count the
 * replicas of the Pods' controllers, percentages rounded up. No disruption is allowed while nothing
 * is expected, or (the controller's fail-safe) when such a budget selects a Pod without a controller.
 * The fake keeps no workload objects: a controller whose scale it was not told (`setScale`) counts
 * the Pods it controls, terminating ones included (a replacement is usually on its way).
 */
export function budgetStatus(budget: PodDisruptionBudget, pods: readonly Pod[], scaleOf: ScaleOf): BudgetStatus {
  const selected = pods.filter(
    (p) => p.metadata.namespace === budget.metadata.namespace && selects(budget.spec?.selector, p.metadata.labels),
  );
  const currentHealthy = selected.filter((p) => isPodReady(p) && !isTerminatingPod(p)).length;
  const { minAvailable, maxUnavailable } = budget.spec ?? {};
  let expectedPods = selected.length;
  let desiredHealthy = 0;
  if (maxUnavailable !== undefined || typeof minAvailable === 'string') {
    const scale = expectedScale(selected, scaleOf);
    if (scale === undefined) return failSafe(budget, currentHealthy);
    expectedPods = scale;
    desiredHealthy =
      maxUnavailable !== undefined
        ? Math.max(0, scale - scaled(maxUnavailable, scale))
        : scaled(minAvailable as string, scale);
  } else if (typeof minAvailable === 'number') {
    desiredHealthy = minAvailable;
  }
  const allowed = currentHealthy - desiredHealthy;
  const observedGeneration = budget.metadata.generation ?? 1;
  return {
    observedGeneration,
    disruptionsAllowed: expectedPods <= 0 || allowed <= 0 ? 0 : allowed,
    currentHealthy,
    desiredHealthy,
    expectedPods,
  };
}

/**
 * The eviction subresource's admission, given the Pod's budgets with their status: throws what the
 * API server answers when it refuses, returns when the Pod may be deleted.
 * - no budget, or a Pod no budget protects (finished, Pending, already terminating): allowed;
 * - more than one budget: 500, the eviction API does not support it;
 * - a Pod that is running but not Ready may go when the budget is not disrupted
 *   (IfHealthyBudget, the default) or always (AlwaysAllow);
 * - otherwise a disruption must be allowed, else 429.
 * https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/#how-api-initiated-eviction-works
 */
export function admitEviction(pod: Pod, budgets: readonly PodDisruptionBudget[]): void {
  if (budgets.length === 0) return;
  const phase = pod.status?.phase;
  if (isFinishedPod(pod) || phase === 'Pending' || isTerminatingPod(pod)) return;
  if (budgets.length > 1) {
    throw new KubernetesApiError(
      500,
      'InternalError',
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    );
  }
  const budget = budgets[0]!;
  const status = budget.status!;
  if (phase === 'Running' && !isPodReady(pod)) {
    const policy = budget.spec?.unhealthyPodEvictionPolicy ?? 'IfHealthyBudget';
    if (policy === 'AlwaysAllow') return;
    if (status.currentHealthy >= status.desiredHealthy && status.desiredHealthy > 0) return;
  }
  if (status.disruptionsAllowed > 0) return;
  throw new KubernetesApiError(
    429,
    'TooManyRequests',
    `Cannot evict pod as it would violate the pod's disruption budget. The disruption budget ${budget.metadata.name} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`,
  );
}

/**
 * The NamespaceLifecycle admission plugin: no create in a namespace being deleted, and an Eviction is a create (of
 * the `pods/eviction` subresource). The API server answers 403 Forbidden with the cause `NamespaceTerminating`;
 * `kubectl drain` retries such a Pod until the namespace controller has deleted it.
 * https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#namespacelifecycle
 */
export function admitInNamespace(namespace: string, name: string, terminating: ReadonlySet<string>): void {
  if (!terminating.has(namespace)) return;
  throw new KubernetesApiError(
    403,
    'Forbidden',
    `pods "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
  );
}

/** intstr.GetScaledValueFromIntOrPercent with rounding up. */
function scaled(value: number | string, total: number): number {
  if (typeof value === 'number') return value;
  const percent = Number(value.replace(/%$/, ''));
  return Math.ceil((percent * total) / 100);
}

/** The sum of the replicas of the selected Pods' controllers, each counted once. */
function expectedScale(selected: readonly Pod[], scaleOf: ScaleOf): number | undefined {
  const controllers = new Map<string, number>();
  for (const pod of selected) {
    const owner = controllerOf(pod);
    if (!owner) return undefined;
    const key = `${owner.kind}/${owner.name}`;
    if (controllers.has(key)) continue;
    const namespace = pod.metadata.namespace ?? 'default';
    const controlled = selected.filter((p) => controllerOf(p)?.uid === owner.uid).length;
    controllers.set(key, scaleOf(namespace, owner) ?? controlled);
  }
  return [...controllers.values()].reduce((a, b) => a + b, 0);
}

function failSafe(budget: PodDisruptionBudget, currentHealthy: number): BudgetStatus {
  const observedGeneration = budget.metadata.generation ?? 1;
  return { observedGeneration, disruptionsAllowed: 0, currentHealthy, desiredHealthy: 0, expectedPods: 0 };
}
