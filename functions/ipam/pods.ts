import { classifyKubernetesError, isConflict } from '../../shared/k8s/errors.ts';
import { IPV4_RESOURCE, isFinished, POD_IP_ANNOTATION, requestsPodAddress } from '../../shared/k8s/ipam-names.ts';
import { type Pod, podRef } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { IpamDeps } from './deps.ts';
import type { PodView, PoolPlan } from './plan.ts';

/** The Pods of a Windows Node as the IP address manager sees them, and what it writes on them. */

/** Pods that want an address (the webhook added the resource) or hold one; host-network Pods use the Node's. */
export function managedPod(pod: Pod): boolean {
  if (pod.spec?.hostNetwork === true || !pod.metadata.uid) return false;
  return requestsPodAddress(pod) || pod.metadata.annotations?.[POD_IP_ANNOTATION] !== undefined;
}

/** `<dotted IPv4>/<prefix length>`, as the Windows CNI reads it. */
const ADDRESS_ANNOTATION =
  /^((?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))\/(?:3[0-2]|[12]?\d)$/;

/** The annotation's address; undefined when there is none or it is no `<ip>/<length>` (the Pod gets a new one). */
export function heldAddress(pod: Pod): string | undefined {
  return ADDRESS_ANNOTATION.exec(pod.metadata.annotations?.[POD_IP_ANNOTATION] ?? '')?.[1];
}

export function podView(pod: Pod): PodView {
  const held = heldAddress(pod);
  return {
    uid: pod.metadata.uid!,
    namespace: pod.metadata.namespace ?? 'default',
    name: pod.metadata.name,
    ...(held ? { holds: held } : {}),
    wants: requestsPodAddress(pod),
    finished: isFinished(pod),
    createdAt: pod.metadata.creationTimestamp ?? '',
  };
}

/**
 * An address annotation that is no `<ip>/<length>` (written while the validating webhook was down, or by hand) is
 * a Warning on the Pod; a Pod that requests an address gets a new one over it.
 */
export async function reportUnreadableAnnotations(pods: ReadonlyMap<string, Pod>, deps: IpamDeps): Promise<void> {
  for (const pod of pods.values()) {
    const value = pod.metadata.annotations?.[POD_IP_ANNOTATION];
    if (value === undefined || heldAddress(pod) !== undefined || isFinished(pod)) continue;
    const message = `${POD_IP_ANNOTATION}: "${value.slice(0, 64)}" is no <IPv4 address>/<prefix length>${
      requestsPodAddress(pod) ? '; a new address replaces it' : ''
    }`;
    deps.metrics.count(MetricName.IpamInvalidInput, { input: 'PodAnnotation' });
    deps.log.warn('unreadable Pod address annotation', {
      pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
      value: value.slice(0, 64),
    });
    await podEvent(deps, podView(pod), 'Warning', 'InvalidIPAddressAnnotation', message);
  }
}

/** Events are best effort, as on Nodes. */
export async function podEvent(
  deps: IpamDeps,
  view: PodView,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  const pod: Pod = { metadata: { name: view.name, namespace: view.namespace, uid: view.uid } };
  try {
    await deps.kube.recordEvent({ involvedObject: podRef(pod), type, reason, message });
  } catch (err) {
    deps.log.warn('could not record event', { pod: `${view.namespace}/${view.name}`, reason, error: String(err) });
  }
}

/** Annotate each Pod the plan gave an address; false when one changed meanwhile (the journal keeps its address). */
export async function annotatePods(
  plan: PoolPlan,
  pods: ReadonlyMap<string, Pod>,
  prefixLength: number,
  deps: IpamDeps,
): Promise<boolean> {
  let all = true;
  for (const { pod: view, address } of plan.handouts) {
    const pod = pods.get(view.uid)!;
    const value = `${address}/${prefixLength}`;
    try {
      const result = await deps.pods.patchPodAnnotations(
        view.namespace,
        view.name,
        { [POD_IP_ANNOTATION]: value },
        { resourceVersion: pod.metadata.resourceVersion ?? '', uid: view.uid },
      );
      if (result === 'gone') continue;
    } catch (err) {
      if (!isConflict(err)) throw classifyKubernetesError(`annotating pod ${view.namespace}/${view.name}`, err);
      all = false;
      continue;
    }
    deps.metrics.count(MetricName.IpamAddressesAssigned);
    await podEvent(deps, view, 'Normal', 'ResourceAllocated', `Allocated ${IPV4_RESOURCE} ${value} to the Pod`);
  }
  return all;
}
