import { KubernetesApiError } from '../errors.ts';
import type { WriteGuard } from '../port.ts';
import type { EndpointSlice, MergePatch, Service } from '../types.ts';
import type { KubernetesOperation } from './fake-kubernetes.ts';
import { apiTime, guardedMergePatch } from './writes.ts';

/**
 * Services and EndpointSlices of FakeKubernetes: written by tests (as `kubectl apply` or the EndpointSlice
 * controller would), read and patched by the service controller's port. Every write and delete takes a new
 * resourceVersion and is reported to watches; a Service with finalizers stays, terminating, until the last is
 * removed.
 */

type Stored = Service | EndpointSlice;

export interface FakeServicesHost {
  nextRevision(): number;
  nextUid(): string;
  now(): number;
  /** Counts the call and throws the error queued for it, if any (`FakeKubernetes.queueError`). */
  call(operation: KubernetesOperation): void;
  /** An object written (ADDED or MODIFIED), as stored. */
  written(kind: 'Service' | 'EndpointSlice', type: 'ADDED' | 'MODIFIED', object: Stored): void;
  /** An object removed, as last stored (the host reports it with a new revision). */
  deleted(kind: 'Service' | 'EndpointSlice', last: Stored): void;
}

export class FakeServices {
  /** By `namespace/name`. */
  readonly services = new Map<string, Service>();
  /** By `namespace/name`. */
  readonly endpointSlices = new Map<string, EndpointSlice>();

  constructor(private readonly host: FakeServicesHost) {}

  /** Create or overwrite a Service, keeping the uid of the one it replaces. */
  put(service: Service): Service {
    const key = `${service.metadata.namespace ?? 'default'}/${service.metadata.name}`;
    const existing = this.services.get(key);
    const stored: Service = structuredClone({
      apiVersion: 'v1',
      kind: 'Service',
      ...service,
      metadata: {
        ...service.metadata,
        namespace: service.metadata.namespace ?? 'default',
        uid: service.metadata.uid ?? existing?.metadata.uid ?? this.host.nextUid(),
        creationTimestamp: service.metadata.creationTimestamp ?? apiTime(this.host.now()),
        resourceVersion: String(this.host.nextRevision()),
      },
    });
    this.services.set(key, stored);
    this.host.written('Service', existing ? 'MODIFIED' : 'ADDED', stored);
    return structuredClone(stored);
  }

  mutate(namespace: string, name: string, change: (service: Service) => void): Service {
    const service = this.services.get(`${namespace}/${name}`);
    if (!service) throw new Error(`FakeKubernetes: no service ${namespace}/${name}`);
    const copy = structuredClone(service);
    change(copy);
    return this.put(copy);
  }

  /** With finalizers the Service only gets a deletionTimestamp; without, it is gone at once. */
  delete(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const service = this.services.get(key);
    if (!service) throw new Error(`FakeKubernetes: no service ${key}`);
    if (service.metadata.finalizers?.length) {
      if (!service.metadata.deletionTimestamp) {
        this.put({
          ...service,
          metadata: { ...service.metadata, deletionTimestamp: apiTime(this.host.now()) },
        });
      }
      return;
    }
    this.remove('Service', this.services, key);
  }

  putSlice(slice: EndpointSlice): EndpointSlice {
    const key = `${slice.metadata.namespace ?? 'default'}/${slice.metadata.name}`;
    const existing = this.endpointSlices.get(key);
    const stored: EndpointSlice = structuredClone({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      ...slice,
      metadata: {
        ...slice.metadata,
        namespace: slice.metadata.namespace ?? 'default',
        uid: slice.metadata.uid ?? existing?.metadata.uid ?? this.host.nextUid(),
        resourceVersion: String(this.host.nextRevision()),
      },
    });
    this.endpointSlices.set(key, stored);
    this.host.written('EndpointSlice', existing ? 'MODIFIED' : 'ADDED', stored);
    return structuredClone(stored);
  }

  deleteSlice(namespace: string, name: string): void {
    if (this.endpointSlices.has(`${namespace}/${name}`)) {
      this.remove('EndpointSlice', this.endpointSlices, `${namespace}/${name}`);
    }
  }

  /** The port's read (counted as `getService`). */
  getRequest(namespace: string, name: string): Service | undefined {
    this.host.call('getService');
    const service = this.services.get(`${namespace}/${name}`);
    return service ? structuredClone(service) : undefined;
  }

  listRequest(): Service[] {
    this.host.call('listServices');
    return [...this.services.values()].map((s) => structuredClone(s));
  }

  listSlicesRequest(namespace: string, serviceName: string): EndpointSlice[] {
    this.host.call('listEndpointSlices');
    return [...this.endpointSlices.values()]
      .filter(
        (s) => s.metadata.namespace === namespace && s.metadata.labels?.['kubernetes.io/service-name'] === serviceName,
      )
      .map((s) => structuredClone(s));
  }

  /** A guarded merge patch of the Service or its status (the caller counts the call). */
  patch(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard, status: boolean): Service {
    const key = `${namespace}/${name}`;
    const next = guardedMergePatch('services', name, this.services.get(key), patch, guard, status);
    if (status) validateStatus(next);
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      this.remove('Service', this.services, key);
      return next;
    }
    return this.put(next);
  }

  private remove<T extends Stored>(kind: 'Service' | 'EndpointSlice', table: Map<string, T>, key: string): void {
    const last = table.get(key)!;
    table.delete(key);
    this.host.deleted(kind, last);
  }
}

/**
 * What the API server checks and defaults in a Service's status on write: load balancer ingress only on a
 * Service of type LoadBalancer (422 otherwise), and an ingress `ip` gets `ipMode: VIP` when it has none.
 * https://kubernetes.io/docs/concepts/services-networking/service/#load-balancer-ip-mode
 */
function validateStatus(service: Service): void {
  const ingress = service.status?.loadBalancer?.ingress ?? [];
  if (ingress.length > 0 && service.spec?.type !== 'LoadBalancer') {
    throw new KubernetesApiError(
      422,
      'Invalid',
      `Service "${service.metadata.name}" is invalid: status.loadBalancer.ingress: Forbidden: may only be used when \`spec.type\` is 'LoadBalancer'`,
    );
  }
  for (const entry of ingress) if (entry.ip && !entry.ipMode) entry.ipMode = 'VIP';
}
