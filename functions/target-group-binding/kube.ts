import { errorMessage, RetryableError } from '../../shared/errors.ts';
import { classifyKubernetesError, isConflict, isNotFound } from '../../shared/k8s/errors.ts';
import { changeFinalizer as changeGuarded, type FinalizerAccess } from '../../shared/k8s/finalizer-change.ts';
import type { PodConditionWrite } from '../../shared/k8s/tgb-port.ts';
import {
  type TargetGroupBinding,
  TGB_API_VERSION,
  type TgbCondition,
  type TgbInferredFields,
} from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import type { TgbDeps } from './deps.ts';

/**
 * What the binding controller writes in Kubernetes: Events (the reference's reasons, so alerts written for it keep
 * working), the finalizer, the filled-in fields, the multi-cluster record, the status and the Pods' gate conditions.
 */
export const EVENT = {
  reconciled: 'SuccessfullyReconciled',
  failedReconcile: 'FailedReconcile',
  failedAddFinalizer: 'FailedAddFinalizer',
  failedRemoveFinalizer: 'FailedRemoveFinalizer',
  failedStatus: 'FailedUpdateStatus',
  failedCleanup: 'FailedCleanup',
  failedNetwork: 'FailedNetworkReconcile',
  backendNotFound: 'BackendNotFound',
} as const;

export type KubeDeps = Pick<TgbDeps, 'kube' | 'log' | 'clock'>;

export const bindingKey = (b: TargetGroupBinding) => `${b.metadata.namespace ?? 'default'}/${b.metadata.name}`;
const namespaceOf = (b: TargetGroupBinding) => b.metadata.namespace ?? 'default';

/** Events are best effort: losing one must neither fail nor repeat a reconcile. */
export async function recordBindingEvent(
  deps: KubeDeps,
  binding: TargetGroupBinding,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  try {
    await deps.kube.recordEvent({
      involvedObject: {
        apiVersion: TGB_API_VERSION,
        kind: 'TargetGroupBinding',
        name: binding.metadata.name,
        namespace: namespaceOf(binding),
        uid: binding.metadata.uid,
      },
      type,
      reason,
      message,
    });
  } catch (err) {
    deps.log.warn('could not record event', { binding: bindingKey(binding), reason, error: errorMessage(err) });
  }
}

/** Adds or removes one finalizer (shared/k8s/finalizer-change.ts); undefined once the binding is gone. */
export function changeFinalizer(
  deps: KubeDeps,
  binding: TargetGroupBinding,
  finalizer: string,
  change: 'add' | 'remove',
): Promise<TargetGroupBinding | undefined> {
  const access: FinalizerAccess<TargetGroupBinding> = {
    write: (b, finalizers, guard) =>
      deps.kube.setTargetGroupBindingFinalizers(namespaceOf(b), b.metadata.name, finalizers, guard),
    read: (b) => deps.kube.getTargetGroupBinding(namespaceOf(b), b.metadata.name),
  };
  return changeGuarded(access, binding, finalizer, change);
}

/** Guarded writes of the spec fields and annotations: a conflict retries the whole pass on what the binding is now. */
export async function fillSpec(
  deps: KubeDeps,
  binding: TargetGroupBinding,
  fields: TgbInferredFields,
): Promise<TargetGroupBinding> {
  try {
    const guard = { resourceVersion: binding.metadata.resourceVersion ?? '' };
    return await deps.kube.fillTargetGroupBindingSpec(namespaceOf(binding), binding.metadata.name, fields, guard);
  } catch (err) {
    if (isConflict(err)) throw new RetryableError(`filling in ${bindingKey(binding)}: it changed meanwhile`);
    throw classifyKubernetesError(`filling in ${Object.keys(fields).join(', ')} of ${bindingKey(binding)}`, err);
  }
}

export async function setAnnotations(
  deps: KubeDeps,
  binding: TargetGroupBinding,
  annotations: Record<string, string | null>,
): Promise<TargetGroupBinding> {
  try {
    const guard = { resourceVersion: binding.metadata.resourceVersion ?? '' };
    return await deps.kube.setTargetGroupBindingAnnotations(
      namespaceOf(binding),
      binding.metadata.name,
      annotations,
      guard,
    );
  } catch (err) {
    if (isConflict(err))
      throw new RetryableError(`recording the targets of ${bindingKey(binding)}: it changed meanwhile`);
    throw classifyKubernetesError(`recording the targets of ${bindingKey(binding)}`, err);
  }
}

/** The condition this controller keeps on a binding. */
export const READY_CONDITION = 'Ready';

export interface WantedCondition {
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/**
 * `observedGeneration` and the Ready condition, written only when either differs (the transition time moves only
 * when the status does). A failure is a `FailedUpdateStatus` Warning, and the pass goes on: the status is a report.
 */
export async function setStatus(
  deps: KubeDeps,
  binding: TargetGroupBinding,
  wanted: WantedCondition,
): Promise<boolean> {
  const generation = binding.metadata.generation;
  const conditions = binding.status?.conditions ?? [];
  const current = conditions.find((c) => c.type === READY_CONDITION);
  const same =
    current &&
    current.status === wanted.status &&
    (current.reason ?? '') === wanted.reason &&
    (current.message ?? '') === wanted.message &&
    current.observedGeneration === generation &&
    binding.status?.observedGeneration === generation;
  if (same) return false;
  const condition: TgbCondition = {
    type: READY_CONDITION,
    ...wanted,
    lastTransitionTime:
      current && current.status === wanted.status && current.lastTransitionTime
        ? current.lastTransitionTime
        : new Date(deps.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  try {
    await deps.kube.setTargetGroupBindingStatus(namespaceOf(binding), binding.metadata.name, {
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      conditions: [...conditions.filter((c) => c.type !== READY_CONDITION), condition],
    });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    const failure = classifyKubernetesError(`writing the status of ${bindingKey(binding)}`, err);
    await recordBindingEvent(deps, binding, 'Warning', EVENT.failedStatus, failure.message);
    return false;
  }
}

/** One Pod's gate condition; a Pod gone meanwhile is no error. Answers whether it wrote. */
export async function setGate(deps: KubeDeps, pod: Pod, condition: PodConditionWrite): Promise<boolean> {
  const namespace = pod.metadata.namespace ?? 'default';
  try {
    return (await deps.kube.setPodCondition(namespace, pod.metadata.name, condition)) !== 'gone';
  } catch (err) {
    if (isNotFound(err)) return false;
    throw classifyKubernetesError(`setting ${condition.type} on pod ${namespace}/${pod.metadata.name}`, err);
  }
}
