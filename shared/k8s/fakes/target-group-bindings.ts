import type { Clock } from '../../clock.ts';
import { KubernetesApiError } from '../errors.ts';
import type { LeaseReadPort } from '../lbc-lease.ts';
import type { KubernetesPort, WriteGuard } from '../port.ts';
import type { ServicesPort } from '../service-port.ts';
import { type StackBindingsPort, type StackBindingWrites, stackBindingsPort } from '../stack-bindings.ts';
import { annotationsPatch, finalizersPatch, specFillPatch, statusPatch } from '../tgb-patches.ts';
import {
  type PodGatesPort,
  type TargetGroupBindingsPort,
  type TgbControllerKube,
  tgbControllerKube,
} from '../tgb-port.ts';
import {
  type TargetGroupBinding,
  type TargetGroupBindingStatus,
  TGB_API_VERSION,
  type TgbInferredFields,
} from '../tgb-types.ts';
import type { MergePatch } from '../types.ts';
import type { FakeKubernetes } from './fake-kubernetes.ts';
import { fakePodGates } from './pod-gates.ts';
import { pruneTargetGroupBinding, validateTargetGroupBinding } from './target-group-bindings-schema.ts';
import { apiTime, guardedMergePatch } from './writes.ts';

/**
 * TargetGroupBindings (`elbv2.k8s.aws/v1beta1`) as the API server keeps them with deploy/crds/targetgroupbindings.yaml
 * installed, behind the binding controller's port. Tests write bindings as kubectl would (`putBinding`,
 * `deleteBinding`); the controller reads and writes through `TargetGroupBindingsPort`. As FakeIngresses:
 * - every write takes a new resourceVersion; a write guarded by a stale one is 409 Conflict, of a missing binding
 *   404 (writes.ts `guardedMergePatch`); a write that changes nothing is no write (same resourceVersion);
 * - `metadata.generation` starts at 1 and moves when the spec changes, and once when the binding is marked deleted;
 * - a binding with finalizers is only marked for deletion (deletionTimestamp) and goes when its last finalizer does;
 *   no finalizer can be added to it once marked (422);
 * - the status subresource takes the status only (a custom resource's takes no metadata either); the main resource
 *   never the status;
 * - fields the CRD's schema does not know are dropped, and what it refuses is refused (422), as
 *   target-group-bindings-schema.ts says;
 * - with the CRD not installed (`crdInstalled = false`) a list is [] and a read undefined, as the port's adapters
 *   answer the API server's 404, and a write is that 404;
 * - list items carry their `kind` and `apiVersion`, as a custom resource's list does (unlike a built-in kind's).
 * test/k8s-contract/tgb-port.test.ts runs the same scenarios on this fake and on a real API server.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/targetgroupbinding/
 */

export type TgbOperation = keyof TargetGroupBindingsPort | keyof StackBindingWrites;

const WRITES: readonly TgbOperation[] = [
  'setTargetGroupBindingFinalizers',
  'setTargetGroupBindingAnnotations',
  'fillTargetGroupBindingSpec',
  'setTargetGroupBindingStatus',
  'createTargetGroupBinding',
  'deleteTargetGroupBinding',
];

const RESOURCE = 'targetgroupbindings.elbv2.k8s.aws';

type Patch = MergePatch<TargetGroupBinding>;

export interface TgbChange {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: TargetGroupBinding;
}

export class FakeTargetGroupBindings implements TargetGroupBindingsPort, StackBindingWrites {
  /** By `namespace/name`. */
  readonly bindings = new Map<string, TargetGroupBinding>();
  /** Whether the TargetGroupBinding CRD (deploy/crds/targetgroupbindings.yaml) is installed. */
  crdInstalled = true;
  readonly calls = new Map<TgbOperation, number>();
  private readonly queuedErrors = new Map<TgbOperation, Error[]>();
  private readonly watchers = new Set<(change: TgbChange) => void>();
  private revision = 0;
  private uids = 0;

  constructor(private readonly clock: Clock) {}

  // ---- what tests do (kubectl, another controller) ----

  /** Create or overwrite a binding (kubectl apply), keeping the uid, creation time and status it had. */
  putBinding(binding: TargetGroupBinding): TargetGroupBinding {
    if (!this.crdInstalled) {
      throw new Error('FakeTargetGroupBindings: the TargetGroupBinding CRD is not installed (crdInstalled = false)');
    }
    const namespace = binding.metadata.namespace ?? 'default';
    const existing = this.bindings.get(`${namespace}/${binding.metadata.name}`);
    return this.store({ ...binding, status: binding.status ?? existing?.status }, false);
  }

  /** Change a binding outside any guard (a user editing it). */
  mutateBinding(namespace: string, name: string, change: (binding: TargetGroupBinding) => void): TargetGroupBinding {
    const current = this.bindings.get(`${namespace}/${name}`);
    if (!current) throw new Error(`FakeTargetGroupBindings: no binding ${namespace}/${name}`);
    const copy = structuredClone(current);
    change(copy);
    return this.putBinding(copy);
  }

  /** kubectl delete: with finalizers the binding only gets a deletionTimestamp; without, it is gone at once. */
  deleteBinding(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const binding = this.bindings.get(key);
    if (!binding) throw new Error(`FakeTargetGroupBindings: no binding ${key}`);
    if (!binding.metadata.finalizers?.length) {
      this.remove(key);
      return;
    }
    if (binding.metadata.deletionTimestamp) return;
    const metadata = {
      ...binding.metadata,
      deletionTimestamp: apiTime(this.clock.now()),
      deletionGracePeriodSeconds: 0,
    };
    this.store({ ...binding, metadata }, true);
  }

  /** Changes reported as a watch would: each binding as stored, a deletion with its last state. */
  watch(listener: (change: TgbChange) => void): () => void {
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  /** The next calls of `operation` fail with these errors, in turn (a call is counted either way). */
  queueError(operation: TgbOperation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  callCount(operation: TgbOperation): number {
    return this.calls.get(operation) ?? 0;
  }

  /** Writes the controller made through the port. */
  writeCount(): number {
    return WRITES.reduce((n, operation) => n + this.callCount(operation), 0);
  }

  resetCalls(): void {
    this.calls.clear();
  }

  /** The resourceVersion of the last write: what a list answers as its own (tgb-server.ts). */
  currentRevision(): number {
    return this.revision;
  }

  // ---- TargetGroupBindingsPort ----

  async listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]> {
    this.call('listTargetGroupBindings');
    if (!this.crdInstalled) return [];
    return [...this.bindings.values()]
      .filter((b) => namespace === undefined || b.metadata.namespace === namespace)
      .map((b) => structuredClone(b));
  }

  async getTargetGroupBinding(namespace: string, name: string): Promise<TargetGroupBinding | undefined> {
    this.call('getTargetGroupBinding');
    if (!this.crdInstalled) return undefined;
    const binding = this.bindings.get(`${namespace}/${name}`);
    return binding && structuredClone(binding);
  }

  async setTargetGroupBindingFinalizers(
    namespace: string,
    name: string,
    finalizers: string[],
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    this.call('setTargetGroupBindingFinalizers');
    return this.patchBinding(namespace, name, finalizersPatch(finalizers) as Patch, guard, false);
  }

  async setTargetGroupBindingAnnotations(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    this.call('setTargetGroupBindingAnnotations');
    return this.patchBinding(namespace, name, annotationsPatch(annotations) as Patch, guard, false);
  }

  async fillTargetGroupBindingSpec(
    namespace: string,
    name: string,
    fields: TgbInferredFields,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    this.call('fillTargetGroupBindingSpec');
    return this.patchBinding(namespace, name, specFillPatch(fields) as Patch, guard, false);
  }

  async setTargetGroupBindingStatus(
    namespace: string,
    name: string,
    status: TargetGroupBindingStatus,
  ): Promise<TargetGroupBinding> {
    this.call('setTargetGroupBindingStatus');
    const current = this.bindings.get(`${namespace}/${name}`);
    const guard = { resourceVersion: current?.metadata.resourceVersion ?? '' };
    // The whole status replaced: the fields it leaves out are removed (null in a merge patch).
    return this.patchBinding(namespace, name, statusPatch(status) as Patch, guard, true);
  }

  // ---- StackBindingsPort (the Ingress and service controllers' own bindings) ----

  /** A POST: 409 AlreadyExists when the name is taken, 404 without the CRD; the server's own fields are set. */
  async createTargetGroupBinding(binding: TargetGroupBinding): Promise<TargetGroupBinding> {
    this.call('createTargetGroupBinding');
    if (!this.crdInstalled) throw notServed();
    const namespace = binding.metadata.namespace ?? 'default';
    if (this.bindings.has(`${namespace}/${binding.metadata.name}`)) {
      throw new KubernetesApiError(409, 'AlreadyExists', `${RESOURCE} "${binding.metadata.name}" already exists`);
    }
    const {
      uid: _uid,
      resourceVersion: _rv,
      creationTimestamp: _ct,
      deletionTimestamp: _dt,
      ...metadata
    } = binding.metadata;
    return this.store({ ...binding, metadata: { ...metadata, namespace }, status: undefined }, false);
  }

  /**
   * A DELETE, with the uid precondition when given (409 when another object holds the name); 'gone' without the CRD
   * too, as the adapters read the API server's 404.
   */
  async deleteTargetGroupBinding(namespace: string, name: string, uid?: string): Promise<'deleted' | 'gone'> {
    this.call('deleteTargetGroupBinding');
    if (!this.crdInstalled) return 'gone';
    const current = this.bindings.get(`${namespace}/${name}`);
    if (!current) return 'gone';
    if (uid !== undefined && current.metadata.uid !== uid) {
      throw new KubernetesApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${RESOURCE} "${name}": Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    this.deleteBinding(namespace, name);
    return 'deleted';
  }

  /**
   * A PATCH request (tgb-server.ts), counted as the port's write it stands for (so its queued error answers it): a
   * status one as `setTargetGroupBindingStatus`, else by what it changes (finalizers, annotations, the spec).
   */
  patchRequest(namespace: string, name: string, patch: Patch, guard: WriteGuard, status: boolean): TargetGroupBinding {
    const metadata = (patch.metadata ?? {}) as Record<string, unknown>;
    this.call(
      status
        ? 'setTargetGroupBindingStatus'
        : 'finalizers' in metadata
          ? 'setTargetGroupBindingFinalizers'
          : 'annotations' in metadata
            ? 'setTargetGroupBindingAnnotations'
            : 'fillTargetGroupBindingSpec',
    );
    return this.patchBinding(namespace, name, patch, guard, status);
  }

  /** A merge patch of a binding or of its status subresource, as the API server applies one. */
  patchBinding(
    namespace: string,
    name: string,
    patch: MergePatch<TargetGroupBinding>,
    guard: WriteGuard,
    status: boolean,
  ): TargetGroupBinding {
    if (!this.crdInstalled) throw notServed();
    const key = `${namespace}/${name}`;
    const current = this.bindings.get(key);
    // A custom resource's status subresource takes the status only, its metadata not either (unlike core kinds').
    const effective = status ? { status: patch.status ?? null } : patch;
    const next = guardedMergePatch(RESOURCE, name, current, effective, guard, status);
    if (next.metadata.finalizers?.length === 0) delete next.metadata.finalizers;
    if (next.metadata.annotations && Object.keys(next.metadata.annotations).length === 0) {
      delete next.metadata.annotations;
    }
    if (next.status?.conditions?.length === 0) delete next.status.conditions;
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      this.remove(key);
      return structuredClone(next);
    }
    // The API server writes nothing (no new resourceVersion) for a patch that changes nothing.
    if (JSON.stringify(next) === JSON.stringify(current)) return structuredClone(current!);
    return this.store(next, false);
  }

  // ---- internals ----

  /** New resourceVersion, kept uid and creationTimestamp, generation moved on by a change of the spec. */
  private store(binding: TargetGroupBinding, deleting: boolean): TargetGroupBinding {
    const namespace = binding.metadata.namespace ?? 'default';
    const key = `${namespace}/${binding.metadata.name}`;
    const existing = this.bindings.get(key);
    const object = pruneTargetGroupBinding({
      apiVersion: TGB_API_VERSION,
      kind: 'TargetGroupBinding',
      ...binding,
      metadata: { ...binding.metadata, namespace },
    });
    if (object.status === undefined) delete object.status;
    validateTargetGroupBinding(object);
    const specChanged = existing && JSON.stringify(existing.spec) !== JSON.stringify(object.spec);
    const metadata = object.metadata;
    const stored = structuredClone({
      ...object,
      metadata: {
        ...metadata,
        uid: metadata.uid ?? existing?.metadata.uid ?? `tgb-uid-${++this.uids}`,
        creationTimestamp:
          existing?.metadata.creationTimestamp ?? metadata.creationTimestamp ?? apiTime(this.clock.now()),
        resourceVersion: String(++this.revision),
        generation: existing
          ? (existing.metadata.generation ?? 1) + (specChanged || deleting ? 1 : 0)
          : (metadata.generation ?? 1),
      },
    });
    this.bindings.set(key, stored);
    this.notify({ type: existing ? 'MODIFIED' : 'ADDED', object: stored });
    return structuredClone(stored);
  }

  private remove(key: string): void {
    const last = this.bindings.get(key)!;
    this.bindings.delete(key);
    const object = { ...last, metadata: { ...last.metadata, resourceVersion: String(++this.revision) } };
    this.notify({ type: 'DELETED', object });
  }

  private notify(change: TgbChange): void {
    for (const listener of this.watchers) listener(structuredClone(change));
  }

  private call(operation: TgbOperation): void {
    this.calls.set(operation, this.callCount(operation) + 1);
    const error = this.queuedErrors.get(operation)?.shift();
    if (error) throw error;
  }
}

/** The API server's answer for a resource whose CRD is not installed. */
export function notServed(): KubernetesApiError {
  return new KubernetesApiError(404, 'NotFound', 'the server could not find the requested resource');
}

/**
 * The binding controller's whole Kubernetes side on fakes: the bindings from FakeTargetGroupBindings; Pods and their
 * readiness gate conditions, Namespaces and the reference's leader Lease from FakeKubernetes (pod-gates.ts,
 * leases.ts); Services, EndpointSlices, Nodes and Events from FakeKubernetes too.
 */
export function fakeTgbControllerKube(bindings: FakeTargetGroupBindings, kube: FakeKubernetes): TgbControllerKube {
  const gates: PodGatesPort = fakePodGates(kube);
  const lease: LeaseReadPort = { getLease: (namespace, name) => kube.getLease(namespace, name) };
  const others: Pick<ServicesPort, 'getService' | 'listEndpointSlices'> &
    Pick<KubernetesPort, 'listNodes' | 'recordEvent'> = kube;
  return tgbControllerKube(bindings, gates, lease, others, others);
}

/** The Ingress and service controllers' stack bindings on fakes: bindings from FakeTargetGroupBindings, Pods from FakeKubernetes. */
export function fakeStackBindings(bindings: FakeTargetGroupBindings, kube: FakeKubernetes): StackBindingsPort {
  return stackBindingsPort(bindings, fakePodGates(kube));
}
