import type { KubernetesPort, WriteGuard } from './port.ts';
import type { EndpointSlice, MergePatch, Service } from './types.ts';

/**
 * Services and EndpointSlices as the service controller needs them. Like `KubernetesPort`, writes are JSON
 * merge patches guarded by `metadata.resourceVersion` (409 Conflict when the Service changed since it was
 * read): the finalizer list is replaced whole by a merge patch, so an unguarded write could drop another
 * controller's finalizer.
 */
export interface ServicesPort {
  /** undefined when the Service does not exist (404). */
  getService(namespace: string, name: string): Promise<Service | undefined>;
  /** Every Service of every namespace, paged inside the adapter. */
  listServices(): Promise<Service[]>;
  /** Patch metadata (finalizers) or spec; status is ignored by the API server on this path. */
  patchService(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard): Promise<Service>;
  /** Patch the status subresource (`status.loadBalancer`). */
  patchServiceStatus(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard): Promise<Service>;
  /** The EndpointSlices of a Service: label `kubernetes.io/service-name=<name>` in its namespace. */
  listEndpointSlices(namespace: string, serviceName: string): Promise<EndpointSlice[]>;
}

/** What the service controller reads and writes in Kubernetes: Services, EndpointSlices, Nodes and Events. */
export type ServiceControllerKube = ServicesPort & Pick<KubernetesPort, 'listNodes' | 'recordEvent'>;

/** The service controller's view of Kubernetes: Services and EndpointSlices from one port, Nodes and Events from the other. */
export function serviceControllerKube(
  services: ServicesPort,
  nodes: Pick<KubernetesPort, 'listNodes' | 'recordEvent'>,
): ServiceControllerKube {
  return {
    getService: (namespace, name) => services.getService(namespace, name),
    listServices: () => services.listServices(),
    patchService: (namespace, name, patch, guard) => services.patchService(namespace, name, patch, guard),
    patchServiceStatus: (namespace, name, patch, guard) => services.patchServiceStatus(namespace, name, patch, guard),
    listEndpointSlices: (namespace, name) => services.listEndpointSlices(namespace, name),
    listNodes: () => nodes.listNodes(),
    recordEvent: (event) => nodes.recordEvent(event),
  };
}

/**
 * Names the Kubernetes service controller and the AWS controllers already use (docs/reference.md
 * "Services"); users' tooling looks for them.
 */
export const FINALIZER_LOAD_BALANCER_CLEANUP = 'service.kubernetes.io/load-balancer-cleanup';
/** The label that ties an EndpointSlice to its Service, and the tag that ties an AWS resource to it. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
export const LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS = 'node.kubernetes.io/exclude-from-external-load-balancers';
export const TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER = 'ToBeDeletedByClusterAutoscaler';

export function serviceKey(service: { metadata: { namespace?: string; name: string } }): string {
  return `${service.metadata.namespace ?? ''}/${service.metadata.name}`;
}
