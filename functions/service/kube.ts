import { errorMessage } from '../../shared/errors.ts';
import { classifyKubernetesError, isConflict, isNotFound } from '../../shared/k8s/errors.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP, type ServiceControllerKube } from '../../shared/k8s/service-port.ts';
import { type MergePatch, type Service, serviceRef } from '../../shared/k8s/types.ts';
import type { Log } from '../../shared/observability/log.ts';

/** The Events `kubectl describe service` shows, as the Kubernetes service controller names them. */
export const EVENT = {
  ensuring: 'EnsuringLoadBalancer',
  ensured: 'EnsuredLoadBalancer',
  updated: 'UpdatedLoadBalancer',
  deleting: 'DeletingLoadBalancer',
  deleted: 'DeletedLoadBalancer',
  failed: 'SyncLoadBalancerFailed',
  /** Ours: a load balancer or target group recreated because AWS cannot change a field in place. */
  replacing: 'ReplacingLoadBalancer',
  /** Ours: the target Nodes have no cluster-tagged security group, so no rule lets the load balancer in. */
  noNodeSecurityGroup: 'NodeSecurityGroupMissing',
  /** Ours: an adopted load balancer has no security groups (the reference made it so); rules go on the Nodes' groups. */
  withoutSecurityGroups: 'LoadBalancerWithoutSecurityGroups',
  /** Ours: a load balancer the AWS Load Balancer Controller made, taken over in place. */
  adopted: 'AdoptedLoadBalancer',
  /** Ours: an annotation of the AWS Load Balancer Controller this controller does not carry out (ignored). */
  unsupportedAnnotation: 'UnsupportedAnnotation',
} as const;

export interface KubeDeps {
  kube: ServiceControllerKube;
  log: Log;
}

export async function readService(deps: KubeDeps, namespace: string, name: string): Promise<Service | undefined> {
  try {
    return await deps.kube.getService(namespace, name);
  } catch (err) {
    throw classifyKubernetesError(`reading service ${namespace}/${name}`, err);
  }
}

/** Events are best effort: losing one must neither fail nor repeat a reconcile. */
export async function recordServiceEvent(
  deps: KubeDeps,
  service: Service,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  try {
    await deps.kube.recordEvent({ involvedObject: serviceRef(service), type, reason, message });
  } catch (err) {
    deps.log.warn('could not record event', {
      serviceKey: `${service.metadata.namespace}/${service.metadata.name}`,
      reason,
      error: errorMessage(err),
    });
  }
}

/**
 * A guarded merge patch built from the current Service; on 409 the Service is read again and the patch
 * rebuilt, up to three times. `build` answers undefined when there is nothing to write. Answers the Service
 * after the write, or undefined once it is gone.
 */
export async function patchService(
  deps: KubeDeps,
  service: Service,
  build: (current: Service) => MergePatch<Service> | undefined,
  subresource: 'metadata' | 'status',
): Promise<Service | undefined> {
  const namespace = service.metadata.namespace ?? 'default';
  const name = service.metadata.name;
  let current: Service | undefined = service;
  for (let attempt = 1; ; attempt++) {
    if (!current) return undefined;
    const patch = build(current);
    if (!patch) return current;
    const guard = { resourceVersion: current.metadata.resourceVersion ?? '' };
    try {
      return subresource === 'status'
        ? await deps.kube.patchServiceStatus(namespace, name, patch, guard)
        : await deps.kube.patchService(namespace, name, patch, guard);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err) || attempt >= 3) {
        throw classifyKubernetesError(`patching ${subresource} of service ${namespace}/${name}`, err);
      }
      current = await readService(deps, namespace, name);
    }
  }
}

/**
 * `finalizer`: the in-tree cleanup finalizer, or the AWS Load Balancer Controller's (`service.k8s.aws/resources`)
 * on the Services served its way.
 */
export function hasFinalizer(service: Service, finalizer = FINALIZER_LOAD_BALANCER_CLEANUP): boolean {
  return (service.metadata.finalizers ?? []).includes(finalizer);
}

/** The cleanup finalizer goes on before anything exists in AWS, so a deleted Service always waits for cleanup. */
export function addFinalizer(
  deps: KubeDeps,
  service: Service,
  finalizer = FINALIZER_LOAD_BALANCER_CLEANUP,
): Promise<Service | undefined> {
  return patchService(
    deps,
    service,
    (current) =>
      hasFinalizer(current, finalizer)
        ? undefined
        : { metadata: { finalizers: [...(current.metadata.finalizers ?? []), finalizer] } },
    'metadata',
  );
}

export function removeFinalizer(
  deps: KubeDeps,
  service: Service,
  finalizer = FINALIZER_LOAD_BALANCER_CLEANUP,
): Promise<Service | undefined> {
  return patchService(
    deps,
    service,
    (current) =>
      hasFinalizer(current, finalizer)
        ? { metadata: { finalizers: (current.metadata.finalizers ?? []).filter((f) => f !== finalizer) } }
        : undefined,
    'metadata',
  );
}

/** `status.loadBalancer.ingress` = the hostname (or nothing), written only when it differs. */
export function setIngressHostname(
  deps: KubeDeps,
  service: Service,
  hostname: string | undefined,
): Promise<Service | undefined> {
  return patchService(
    deps,
    service,
    (current) => {
      const ingress = current.status?.loadBalancer?.ingress ?? [];
      if (hostname === undefined)
        return ingress.length === 0 ? undefined : { status: { loadBalancer: { ingress: null } } };
      if (ingress.length === 1 && ingress[0]?.hostname === hostname && !ingress[0].ip) return undefined;
      return { status: { loadBalancer: { ingress: [{ hostname }] } } };
    },
    'status',
  );
}
