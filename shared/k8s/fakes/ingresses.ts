import { isIPv4, isIPv6 } from 'node:net';
import type { Clock } from '../../clock.ts';
import { KubernetesApiError } from '../errors.ts';
import { type IngressControllerKube, type IngressesPort, ingressControllerKube } from '../ingress-port.ts';
import type {
  Ingress,
  IngressClass,
  IngressClassParams,
  IngressLoadBalancerIngress,
  Namespace,
} from '../ingress-types.ts';
import type { LeaseReadPort } from '../lbc-lease.ts';
import type { KubernetesPort, WriteGuard } from '../port.ts';
import type { ServicesPort } from '../service-port.ts';
import type { MergePatch, ObjectMeta } from '../types.ts';
import { validateIngressClassParams } from './ingress-class-params-schema.ts';
import { apiTime, guardedMergePatch } from './writes.ts';

/**
 * Ingresses, IngressClasses, IngressClassParams and Namespaces as the API server keeps them, behind the Ingress
 * controller's port. Tests write objects as kubectl would (`putIngress`, `deleteIngress`, ...); the controller
 * reads and writes through `IngressesPort`. What the API server does and the controller relies on is kept:
 * - every write takes a new resourceVersion; a write guarded by a stale one is 409 Conflict, of a missing Ingress
 *   404 (writes.ts `guardedMergePatch`, shared with the other fakes);
 * - `metadata.generation` starts at 1 and moves only when the spec changes;
 * - an Ingress with finalizers is only marked for deletion (deletionTimestamp) and is removed when its last
 *   finalizer goes; no finalizer can be added to it once marked (422);
 * - the status subresource takes the status (and metadata), never the spec; the main resource never the status;
 *   an empty list is stored as absent, as the API server's JSON omits it; `ip` and `hostname` are checked;
 * - list items carry no `kind`/`apiVersion`, as the API server's lists do;
 * - an IngressClassParams its CRD's schema refuses is refused (422, ingress-class-params-schema.ts); read while the
 *   CRD is not installed (`paramsCrdInstalled = false`) it is a 404.
 * test/k8s-contract/ingress-port.test.ts runs the same scenarios on this fake and on a real API server.
 * https://kubernetes.io/docs/reference/kubernetes-api/service-resources/ingress-v1/
 */

export type IngressOperation = keyof IngressesPort;

export type IngressKind = 'Ingress' | 'IngressClass' | 'IngressClassParams' | 'Namespace';

export interface IngressChange {
  kind: IngressKind;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: Ingress | IngressClass | IngressClassParams | Namespace;
}

type Stored = { metadata: ObjectMeta; spec?: unknown };

export class FakeIngresses implements IngressesPort {
  /** By `namespace/name`. */
  readonly ingresses = new Map<string, Ingress>();
  readonly classes = new Map<string, IngressClass>();
  readonly params = new Map<string, IngressClassParams>();
  readonly namespaces = new Map<string, Namespace>();
  /** Whether the IngressClassParams CRD (deploy/crds/ingressclassparams.yaml) is installed. */
  paramsCrdInstalled = true;
  readonly calls = new Map<IngressOperation, number>();
  private readonly queuedErrors = new Map<IngressOperation, Error[]>();
  private readonly watchers = new Set<(change: IngressChange) => void>();
  private revision = 0;
  private uids = 0;

  constructor(private readonly clock: Clock) {}

  // ---- what tests do (kubectl, another controller) ----

  /** Create or overwrite an Ingress (its namespace is created too, when missing), keeping the uid it had. */
  putIngress(ingress: Ingress): Ingress {
    return this.writeIngress(ingress, false);
  }

  private writeIngress(ingress: Ingress, deleting: boolean): Ingress {
    const namespace = ingress.metadata.namespace ?? 'default';
    if (!this.namespaces.has(namespace)) this.putNamespace({ metadata: { name: namespace } });
    const existing = this.ingresses.get(`${namespace}/${ingress.metadata.name}`);
    const stored = this.store(
      'Ingress',
      this.ingresses,
      `${namespace}/${ingress.metadata.name}`,
      existing,
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        ...ingress,
        metadata: { ...ingress.metadata, namespace },
        status: ingress.status ?? existing?.status ?? { loadBalancer: {} },
      },
      deleting,
    );
    return structuredClone(stored);
  }

  mutateIngress(namespace: string, name: string, change: (ingress: Ingress) => void): Ingress {
    const current = this.ingresses.get(`${namespace}/${name}`);
    if (!current) throw new Error(`FakeIngresses: no ingress ${namespace}/${name}`);
    const copy = structuredClone(current);
    change(copy);
    return this.putIngress(copy);
  }

  /** kubectl delete: with finalizers the Ingress only gets a deletionTimestamp; without, it is gone at once. */
  deleteIngress(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const ingress = this.ingresses.get(key);
    if (!ingress) throw new Error(`FakeIngresses: no ingress ${key}`);
    if (!ingress.metadata.finalizers?.length) {
      this.remove('Ingress', this.ingresses, key);
      return;
    }
    if (ingress.metadata.deletionTimestamp) return;
    // The API server marks it with a grace period of 0 and moves the generation on (the deletion is a change the
    // controller has to act on).
    const metadata = {
      ...ingress.metadata,
      deletionTimestamp: apiTime(this.clock.now()),
      deletionGracePeriodSeconds: 0,
    };
    this.writeIngress({ ...ingress, metadata }, true);
  }

  putIngressClass(ingressClass: IngressClass): IngressClass {
    const { name } = ingressClass.metadata;
    const stored = this.store('IngressClass', this.classes, name, this.classes.get(name), {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      ...ingressClass,
    });
    return structuredClone(stored);
  }

  deleteIngressClass(name: string): void {
    if (this.classes.has(name)) this.remove('IngressClass', this.classes, name);
  }

  putIngressClassParams(params: IngressClassParams): IngressClassParams {
    if (!this.paramsCrdInstalled) {
      throw new Error('FakeIngresses: the IngressClassParams CRD is not installed (paramsCrdInstalled = false)');
    }
    validateIngressClassParams(params);
    const { name } = params.metadata;
    const stored = this.store('IngressClassParams', this.params, name, this.params.get(name), {
      apiVersion: 'elbv2.k8s.aws/v1beta1',
      kind: 'IngressClassParams',
      ...params,
    });
    return structuredClone(stored);
  }

  deleteIngressClassParams(name: string): void {
    if (this.params.has(name)) this.remove('IngressClassParams', this.params, name);
  }

  /** A Namespace as created (labels included; `kubernetes.io/metadata.name` is added as the API server adds it). */
  putNamespace(namespace: Namespace): Namespace {
    const { name } = namespace.metadata;
    const stored = this.store('Namespace', this.namespaces, name, this.namespaces.get(name), {
      apiVersion: 'v1',
      kind: 'Namespace',
      ...namespace,
      metadata: {
        ...namespace.metadata,
        labels: { ...namespace.metadata.labels, 'kubernetes.io/metadata.name': name },
      },
    });
    return structuredClone(stored);
  }

  /** Changes reported as a watch would: each object as stored, a deletion with its last state. */
  watch(listener: (change: IngressChange) => void): () => void {
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  /** The next calls of `operation` fail with these errors, in turn (a call is counted either way). */
  queueError(operation: IngressOperation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  callCount(operation: IngressOperation): number {
    return this.calls.get(operation) ?? 0;
  }

  /** Writes the controller made through the port. */
  writeCount(): number {
    return this.callCount('setIngressFinalizers') + this.callCount('setIngressStatus');
  }

  resetCalls(): void {
    this.calls.clear();
  }

  // ---- IngressesPort ----

  async listIngresses(): Promise<Ingress[]> {
    this.call('listIngresses');
    return [...this.ingresses.values()].map(listItem);
  }

  async getIngress(namespace: string, name: string): Promise<Ingress | undefined> {
    this.call('getIngress');
    return copyOf(this.ingresses.get(`${namespace}/${name}`));
  }

  async listIngressClasses(): Promise<IngressClass[]> {
    this.call('listIngressClasses');
    return [...this.classes.values()].map(listItem);
  }

  async getIngressClassParams(name: string): Promise<IngressClassParams | undefined> {
    this.call('getIngressClassParams');
    return this.paramsCrdInstalled ? copyOf(this.params.get(name)) : undefined;
  }

  async getNamespace(name: string): Promise<Namespace | undefined> {
    this.call('getNamespace');
    return copyOf(this.namespaces.get(name));
  }

  async setIngressFinalizers(
    namespace: string,
    name: string,
    finalizers: string[],
    guard: WriteGuard,
  ): Promise<Ingress> {
    this.call('setIngressFinalizers');
    return this.patchIngress(namespace, name, { metadata: { finalizers } }, guard, false);
  }

  async setIngressStatus(namespace: string, name: string, ingress: IngressLoadBalancerIngress[]): Promise<Ingress> {
    this.call('setIngressStatus');
    const current = this.ingresses.get(`${namespace}/${name}`);
    const guard = { resourceVersion: current?.metadata.resourceVersion ?? '' };
    return this.patchIngress(namespace, name, { status: { loadBalancer: { ingress } } }, guard, true);
  }

  /**
   * A merge patch of an Ingress or of its status subresource, as the API server applies one; the fake API server
   * (ingresses-server.ts) serves the port's PATCH requests with it.
   */
  patchIngress(namespace: string, name: string, patch: MergePatch<Ingress>, guard: WriteGuard, status: boolean) {
    const key = `${namespace}/${name}`;
    const next = guardedMergePatch('ingresses.networking.k8s.io', name, this.ingresses.get(key), patch, guard, status);
    if (next.metadata.finalizers?.length === 0) delete next.metadata.finalizers;
    if (status) validateStatus(next);
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      this.remove('Ingress', this.ingresses, key);
      return structuredClone(next);
    }
    return this.putIngress(next);
  }

  // ---- internals ----

  /** New resourceVersion, kept uid and creationTimestamp, generation moved on by a change of the spec. */
  private store<T extends Stored>(
    kind: IngressKind,
    table: Map<string, T>,
    key: string,
    existing: T | undefined,
    object: T,
    deleting = false,
  ) {
    const metadata = object.metadata;
    const specChanged = existing && JSON.stringify(existing.spec) !== JSON.stringify(object.spec);
    const stored = structuredClone({
      ...object,
      metadata: {
        ...metadata,
        uid: metadata.uid ?? existing?.metadata.uid ?? `ingress-uid-${++this.uids}`,
        creationTimestamp:
          existing?.metadata.creationTimestamp ?? metadata.creationTimestamp ?? apiTime(this.clock.now()),
        resourceVersion: String(++this.revision),
        ...(kind === 'Namespace'
          ? {}
          : {
              generation: existing
                ? (existing.metadata.generation ?? 1) + (specChanged || deleting ? 1 : 0)
                : (metadata.generation ?? 1),
            }),
      },
    });
    table.set(key, stored);
    this.notify({ kind, type: existing ? 'MODIFIED' : 'ADDED', object: stored as IngressChange['object'] });
    return stored;
  }

  private remove<T extends Stored>(kind: IngressKind, table: Map<string, T>, key: string): void {
    const last = table.get(key)!;
    table.delete(key);
    const object = structuredClone({
      ...last,
      metadata: { ...last.metadata, resourceVersion: String(++this.revision) },
    });
    this.notify({ kind, type: 'DELETED', object: object as IngressChange['object'] });
  }

  private notify(change: IngressChange): void {
    for (const listener of this.watchers) listener(structuredClone(change));
  }

  private call(operation: IngressOperation): void {
    this.calls.set(operation, this.callCount(operation) + 1);
    const queued = this.queuedErrors.get(operation);
    const error = queued?.shift();
    if (error) throw error;
  }
}

function copyOf<T>(object: T | undefined): T | undefined {
  return object === undefined ? undefined : structuredClone(object);
}

/** An item of a list, as the API server sends it: without `kind` and `apiVersion`. */
function listItem<T extends { kind?: string; apiVersion?: string }>(object: T): T {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = structuredClone(object);
  return rest as T;
}

/**
 * What the API server checks in an Ingress's status (as test/k8s-contract/ingress-port.test.ts sees it): an `ip` must
 * be an IP address, a `hostname` a lowercase RFC 1123 subdomain and not an IP address. Ports are not checked; a
 * port without a protocol is stored with an empty one. An empty list is stored as absent.
 */
function validateStatus(ingress: Ingress): void {
  const entries = ingress.status?.loadBalancer?.ingress;
  if (entries && entries.length === 0) delete ingress.status!.loadBalancer!.ingress;
  for (const [i, entry] of (entries ?? []).entries()) {
    const at = `status.loadBalancer.ingress[${i}]`;
    if (entry.ip !== undefined && !isIp(entry.ip)) {
      throw invalid(ingress, `${at}.ip: Invalid value: "${entry.ip}": must be a valid IP address`);
    }
    if (entry.hostname !== undefined) {
      if (isIp(entry.hostname)) {
        throw invalid(
          ingress,
          `${at}.hostname: Invalid value: "${entry.hostname}": must be a DNS name, not an IP address`,
        );
      }
      if (!RFC_1123_SUBDOMAIN.test(entry.hostname) || entry.hostname.length > 253) {
        throw invalid(ingress, `${at}.hostname: Invalid value: "${entry.hostname}": a lowercase RFC 1123 subdomain`);
      }
    }
    for (const port of entry.ports ?? []) port.protocol ??= '' as never;
  }
}

const RFC_1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function isIp(value: string): boolean {
  return isIPv4(value) || isIPv6(value);
}

function invalid(ingress: Ingress, detail: string): KubernetesApiError {
  return new KubernetesApiError(
    422,
    'Invalid',
    `Ingress.networking.k8s.io "${ingress.metadata.name}" is invalid: ${detail}`,
  );
}

/**
 * The Ingress controller's whole Kubernetes side on fakes: the Ingresses from FakeIngresses, Services,
 * EndpointSlices, Nodes and Events from FakeKubernetes (shared/k8s/fakes/fake-kubernetes.ts).
 */
export function fakeIngressControllerKube(
  ingresses: FakeIngresses,
  kube: Pick<ServicesPort, 'getService' | 'listEndpointSlices'> &
    Pick<KubernetesPort, 'listNodes' | 'recordEvent'> &
    LeaseReadPort,
): IngressControllerKube {
  return ingressControllerKube(ingresses, kube, kube, kube);
}
