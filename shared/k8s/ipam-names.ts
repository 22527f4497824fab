import type { Node, Pod } from './types.ts';

/**
 * The names Windows IP address management shares with the VPC CNI and the VPC resource controller it replaces:
 * the extended resource, the Pod annotation the Windows CNI reads, the ConfigMap that switches it on. Shared by
 * the IPAM reconciler, the relay's forwarding rules and its admission webhooks, so all three agree.
 */

/** The extended resource: a Node's capacity of VPC addresses for Pods, and each Pod's request of one. */
export const IPV4_RESOURCE = 'vpc.amazonaws.com/PrivateIPv4Address';

/** Written on a Pod by the controller: `<ip>/<subnet prefix length>` (e.g. `10.0.1.5/19`). */
export const POD_IP_ANNOTATION = 'vpc.amazonaws.com/PrivateIPv4Address';

/** The VPC CNI's ConfigMap, whose keys turn Windows IPAM on and size the warm pool. */
export const VPC_CNI_CONFIGMAP = { namespace: 'kube-system', name: 'amazon-vpc-cni' } as const;

export const OS_LABEL = 'kubernetes.io/os';
export const BETA_OS_LABEL = 'beta.kubernetes.io/os';

/** `kubernetes.io/os=windows`, or the beta label when the GA one is absent. */
export function isWindowsNode(node: Pick<Node, 'metadata'>): boolean {
  const labels = node.metadata.labels ?? {};
  return (labels[OS_LABEL] ?? labels[BETA_OS_LABEL]) === 'windows';
}

interface Container {
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
}

/** Whether some container requests (or limits) a VPC address: what the mutating webhook adds. */
export function requestsPodAddress(pod: Pick<Pod, 'spec'>): boolean {
  const containers = (pod.spec?.containers as Container[] | undefined) ?? [];
  return containers.some(
    (c) => c.resources?.requests?.[IPV4_RESOURCE] !== undefined || c.resources?.limits?.[IPV4_RESOURCE] !== undefined,
  );
}

/** A Pod in a final phase: its address goes back to the Node's pool. */
export function isFinished(pod: Pick<Pod, 'status'>): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}
