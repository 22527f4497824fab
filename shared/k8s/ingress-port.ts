import type {
  Ingress,
  IngressClass,
  IngressClassParams,
  IngressLoadBalancerIngress,
  Namespace,
} from './ingress-types.ts';
import type { LeaseReadPort } from './lbc-lease.ts';
import type { KubernetesPort, WriteGuard } from './port.ts';
import type { ServicesPort } from './service-port.ts';

/**
 * Ingresses, IngressClasses and IngressClassParams as the Ingress controller needs them. As the Services port, the
 * finalizer write is a merge patch guarded by `metadata.resourceVersion` (409 Conflict when the Ingress changed
 * since it was read), since a merge patch replaces the finalizer list whole.
 */
export interface IngressesPort {
  /** Every Ingress of every namespace (a group's members can be anywhere), paged inside the adapter. */
  listIngresses(): Promise<Ingress[]>;
  /** undefined when the Ingress does not exist (404). */
  getIngress(namespace: string, name: string): Promise<Ingress | undefined>;
  listIngressClasses(): Promise<IngressClass[]>;
  /** undefined when it does not exist, or when the IngressClassParams CRD is not installed. */
  getIngressClassParams(name: string): Promise<IngressClassParams | undefined>;
  /** undefined when it does not exist. */
  getNamespace(name: string): Promise<Namespace | undefined>;
  /** Replaces `metadata.finalizers`; answers the Ingress as written. */
  setIngressFinalizers(namespace: string, name: string, finalizers: string[], guard: WriteGuard): Promise<Ingress>;
  /** Replaces `status.loadBalancer.ingress` (the status subresource). */
  setIngressStatus(namespace: string, name: string, ingress: IngressLoadBalancerIngress[]): Promise<Ingress>;
}

/**
 * What the Ingress controller reads and writes in Kubernetes; the AWS Load Balancer Controller's leader Lease too,
 * since no group is touched while that controller runs (shared/k8s/lbc-lease.ts).
 */
export type IngressControllerKube = IngressesPort &
  LeaseReadPort &
  Pick<ServicesPort, 'getService' | 'listEndpointSlices'> &
  Pick<KubernetesPort, 'listNodes' | 'recordEvent'>;

/**
 * The Ingress controller's view of Kubernetes: Ingresses from one port, Services and EndpointSlices from another,
 * Nodes and Events from the third, the reference's leader Lease from the fourth.
 */
export function ingressControllerKube(
  ingresses: IngressesPort,
  services: Pick<ServicesPort, 'getService' | 'listEndpointSlices'>,
  nodes: Pick<KubernetesPort, 'listNodes' | 'recordEvent'>,
  lease: LeaseReadPort,
): IngressControllerKube {
  return {
    listIngresses: () => ingresses.listIngresses(),
    getIngress: (namespace, name) => ingresses.getIngress(namespace, name),
    listIngressClasses: () => ingresses.listIngressClasses(),
    getIngressClassParams: (name) => ingresses.getIngressClassParams(name),
    getNamespace: (name) => ingresses.getNamespace(name),
    setIngressFinalizers: (namespace, name, finalizers, guard) =>
      ingresses.setIngressFinalizers(namespace, name, finalizers, guard),
    setIngressStatus: (namespace, name, ingress) => ingresses.setIngressStatus(namespace, name, ingress),
    getService: (namespace, name) => services.getService(namespace, name),
    listEndpointSlices: (namespace, name) => services.listEndpointSlices(namespace, name),
    listNodes: () => nodes.listNodes(),
    recordEvent: (event) => nodes.recordEvent(event),
    getLease: (namespace, name) => lease.getLease(namespace, name),
  };
}
