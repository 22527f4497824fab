import { errorMessage } from '../../shared/errors.ts';
import { classifyKubernetesError, isNotFound } from '../../shared/k8s/errors.ts';
import { changeFinalizer as changeGuarded, type FinalizerAccess } from '../../shared/k8s/finalizer-change.ts';
import type { IngressControllerKube } from '../../shared/k8s/ingress-port.ts';
import {
  type Ingress,
  type IngressLoadBalancerIngress,
  ingressKey,
  ingressRef,
} from '../../shared/k8s/ingress-types.ts';
import type { Log } from '../../shared/observability/log.ts';

/**
 * The Events `kubectl describe ingress` shows: the reasons of the AWS Load Balancer Controller, so alerts and
 * runbooks written for it keep working; ours beyond it are marked.
 */
export const EVENT = {
  reconciled: 'SuccessfullyReconciled',
  failedBuild: 'FailedBuildModel',
  failedDeploy: 'FailedDeployModel',
  failedAddFinalizer: 'FailedAddFinalizer',
  failedRemoveFinalizer: 'FailedRemoveFinalizer',
  failedStatus: 'FailedUpdateStatus',
  failedGroup: 'FailedLoadGroupID',
  /** Ours: an annotation or field we do not support, named, never silently ignored. */
  unsupported: 'UnsupportedAnnotation',
  /** Ours: the group's load balancer is being replaced (scheme or name changed). */
  replacing: 'ReplacingLoadBalancer',
} as const;

export interface KubeDeps {
  kube: IngressControllerKube;
  log: Log;
}

/** Events are best effort: losing one must neither fail nor repeat a reconcile. */
export async function recordIngressEvent(
  deps: KubeDeps,
  ingress: Ingress,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  try {
    await deps.kube.recordEvent({ involvedObject: ingressRef(ingress), type, reason, message });
  } catch (err) {
    deps.log.warn('could not record event', { ingress: ingressKey(ingress), reason, error: errorMessage(err) });
  }
}

/** One Event on every member of a group (the reference fans group-level Events out the same way). */
export async function recordMembersEvent(
  deps: KubeDeps,
  members: readonly { ingress: Ingress }[],
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  for (const member of members) await recordIngressEvent(deps, member.ingress, type, reason, message);
}

/** Adds or removes one finalizer (shared/k8s/finalizer-change.ts); undefined once the Ingress is gone. */
export function changeFinalizer(
  deps: KubeDeps,
  ingress: Ingress,
  finalizer: string,
  change: 'add' | 'remove',
): Promise<Ingress | undefined> {
  const access: FinalizerAccess<Ingress> = {
    write: (i, finalizers, guard) =>
      deps.kube.setIngressFinalizers(i.metadata.namespace ?? 'default', i.metadata.name, finalizers, guard),
    read: (i) => deps.kube.getIngress(i.metadata.namespace ?? 'default', i.metadata.name),
  };
  return changeGuarded(access, ingress, finalizer, change);
}

/** Writes `status.loadBalancer.ingress` when it differs (the reference writes it only then too). */
export async function setStatus(
  deps: KubeDeps,
  ingress: Ingress,
  wanted: IngressLoadBalancerIngress[],
): Promise<boolean> {
  const current = ingress.status?.loadBalancer?.ingress ?? [];
  if (JSON.stringify(current) === JSON.stringify(wanted)) return false;
  try {
    await deps.kube.setIngressStatus(ingress.metadata.namespace ?? 'default', ingress.metadata.name, wanted);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw classifyKubernetesError(`writing the status of ${ingressKey(ingress)}`, err);
  }
}
