import type { Clock } from '../../clock.ts';
import { isFinishedPod, podGracePeriodSeconds } from '../drain.ts';
import { KubernetesApiError } from '../errors.ts';
import type { Namespace } from '../ingress-types.ts';
import { applyMergePatch } from '../merge-patch.ts';
import { podConditionPatch } from '../pod-conditions.ts';
import type { PodConditionWrite } from '../tgb-port.ts';
import type { ObjectMeta, OwnerReference, Pod, PodDisruptionBudget } from '../types.ts';
import { admitEviction, admitInNamespace, budgetStatus, budgetsFor } from './disruption.ts';
import type { KubernetesOperation } from './fake-kubernetes.ts';
import { FakeLeases } from './leases.ts';
import { apiTime, guardedMergePatch } from './writes.ts';

/**
 * Pods and PodDisruptionBudgets of FakeKubernetes, with the API server's semantics for what a drain
 * does to them:
 * - a delete is graceful: the Pod gets `deletionTimestamp` (now + its grace period) and stays,
 *   terminating, until the fake's clock passes it (as when the kubelet has stopped it); a Pod that is
 *   finished or was never scheduled goes at once, and a second delete can shorten the grace period
 *   but never lengthen it;
 * - an eviction is that delete after the PodDisruptionBudget check (`disruption.ts`); in a namespace that is being
 *   deleted (`terminateNamespace`) it is refused with 403 whatever the budgets say, as the NamespaceLifecycle
 *   admission plugin refuses every create there, the eviction subresource included;
 * - a uid precondition that does not hold is 409, an unknown Pod 404;
 * - a merge patch is guarded by resourceVersion and uid (409 when either differs), as `patchRequest` says.
 * https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination
 */

export interface FakePodsHost {
  clock: Clock;
  nextRevision(): number;
  nextUid(): string;
  /** Counts the call and throws the error queued for it, if any (`FakeKubernetes.queueError`). */
  call(operation: KubernetesOperation): void;
  /** A Pod written or removed (with the object as last stored), for watches; budgets are not reported. */
  podWritten(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Pod): void;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  uid?: string;
}

/** The readiness gate's reads and writes (pod-gates.ts) and the Lease read (leases.ts), counted by FakeKubernetes. */
export type PodGateOperation = 'listPods' | 'setPodCondition' | 'getNamespace' | 'getLease';

/** Namespaces every cluster has, answered by `getNamespaceRequest` without being put. */
const BUILT_IN_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

const key = (meta: ObjectMeta) => `${meta.namespace ?? 'default'}/${meta.name}`;

export class FakePods {
  /** By `namespace/name`. Read them through `list()`, which first lets terminated Pods go. */
  readonly pods = new Map<string, Pod>();
  /** By `namespace/name`, as written (their status is computed when read: see `budget`). */
  readonly budgets = new Map<string, PodDisruptionBudget>();
  /** Replicas of workload controllers, by `namespace/Kind/name`. */
  readonly scales = new Map<string, number>();
  /** Namespaces being deleted (`status.phase: Terminating`): evictions there are refused. */
  readonly terminatingNamespaces = new Set<string>();
  /** Namespaces put with their labels (the readiness gate's injection label), by name. */
  readonly namespaces = new Map<string, Namespace>();

  /** Leases (leases.ts): the reference controller's leader Lease the binding, Service and Ingress controllers read. */
  readonly leases: FakeLeases;

  constructor(private readonly host: FakePodsHost) {
    this.leases = new FakeLeases(host);
  }

  /** The replicas of a workload controller (what a percentage or maxUnavailable budget counts). */
  setScale(namespace: string, kind: string, name: string, replicas: number): void {
    this.scales.set(`${namespace}/${kind}/${name}`, replicas);
  }

  /**
   * The namespace is being deleted (`kubectl delete namespace`): from now on an eviction there answers 403. The
   * namespace controller's deletion of its Pods is left to the test (it can be slow, or stuck on a finalizer).
   */
  terminateNamespace(namespace: string): void {
    this.terminatingNamespaces.add(namespace);
  }

  /** The port's read (counted as `listPodsOnNode`). */
  listOnNode(nodeName: string): Pod[] {
    this.host.call('listPodsOnNode');
    this.expire();
    // Filtered before copied: a drain lists one Node's Pods among thousands.
    return [...this.pods.values()].filter((p) => p.spec?.nodeName === nodeName).map((p) => structuredClone(p));
  }

  /** The eviction request as the API server answers it (throws its refusals); counted as `evictPod`. */
  evictRequest(namespace: string, name: string, options: DeleteOptions): void {
    this.host.call('evictPod');
    this.evict(namespace, name, options);
  }

  /** The delete request as the API server answers it: the Pod, terminating or as it went; counted as `deletePod`. */
  deleteRequest(namespace: string, name: string, options: DeleteOptions): Pod {
    this.host.call('deletePod');
    return this.delete(namespace, name, options);
  }

  /**
   * PATCH .../pods/<name> with a JSON merge patch, counted as `patchPod`: 404 for an unknown Pod, 409 when
   * the guard's resourceVersion is stale (as it is for a Pod re-created under the same name). A merge patch
   * that carries `metadata.uid` cannot change it (uid is immutable), so the API server refuses the write
   * (422) when the resourceVersion holds but the uid is another; the guard's uid plays that part here. Identity fields and `status` in the patch are ignored, as for the other kinds.
   * https://kubernetes.io/docs/reference/using-api/api-concepts/#concurrency-control-and-consistency
   */
  patchRequest(namespace: string, name: string, patch: unknown, guard: { resourceVersion: string; uid?: string }): Pod {
    this.host.call('patchPod');
    const current = this.existing(namespace, name, undefined);
    // The resourceVersion is checked first (409); a uid that differs with a current resourceVersion is a
    // change of an immutable field (422), as the API server answers (test/k8s-contract/pods.contract.test.ts).
    const next = guardedMergePatch('pods', name, current, patch, guard, false);
    if (guard.uid !== undefined && guard.uid !== current.metadata.uid) {
      throw new KubernetesApiError(
        422,
        'Invalid',
        `Pod "${name}" is invalid: metadata.uid: Invalid value: "${guard.uid}": field is immutable`,
      );
    }
    return this.store(this.pods, next, {});
  }

  /**
   * The Pods of a namespace whose labels hold every `selector` entry (a Service's selector, as `labelSelector`
   * sends it; `{}` selects every Pod of the namespace, as an empty labelSelector does); counted as `listPods`.
   */
  listMatching(namespace: string, selector: Readonly<Record<string, string>>): Pod[] {
    this.host.call('listPods');
    this.expire();
    const matches = (pod: Pod) => Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v);
    return [...this.pods.values()]
      .filter((p) => p.metadata.namespace === namespace && matches(p))
      .map((p) => structuredClone(p));
  }

  /**
   * PATCH .../pods/<name>/status with a strategic merge patch, counted as `setPodCondition`: `status.conditions`
   * merged by `type` (an element's fields merged into the one of its type, null removing a field, `$patch: delete`
   * removing the element), the rest of `status` as a merge patch; the spec and metadata are left. A
   * `metadata.resourceVersion` in the patch is a precondition (409). A patch that changes nothing writes nothing.
   * 404 for an unknown Pod.
   */
  patchStatusRequest(namespace: string, name: string, patch: unknown): Pod {
    this.host.call('setPodCondition');
    const current = this.existing(namespace, name, undefined);
    const { metadata, status } = (patch ?? {}) as { metadata?: { resourceVersion?: string }; status?: unknown };
    const guard = { resourceVersion: metadata?.resourceVersion ?? current.metadata.resourceVersion ?? '' };
    const { conditions, ...rest } = (status ?? {}) as { conditions?: Record<string, unknown>[] };
    const next = guardedMergePatch('pods', name, current, { status: rest }, guard, true);
    if (conditions !== undefined) {
      next.status = { ...next.status, conditions: mergeByType(current.status?.conditions ?? [], conditions) };
    }
    if (JSON.stringify(next) === JSON.stringify(current)) return current;
    return this.store(this.pods, next, {});
  }

  /**
   * The port's `setPodCondition` (pod-gates.ts): the patch the adapters send (pod-conditions.ts), an empty one when
   * the Pod already has the condition as asked (counted, nothing written). 404 for an unknown Pod.
   */
  setConditionRequest(namespace: string, name: string, condition: PodConditionWrite): Pod {
    const current = this.get(namespace, name);
    const patch = current && podConditionPatch(current, condition, this.host.clock.now());
    return this.patchStatusRequest(namespace, name, patch ?? {});
  }

  /** A Namespace as created (`kubernetes.io/metadata.name` is added as the API server adds it). */
  putNamespace(namespace: Namespace): Namespace {
    const { name } = namespace.metadata;
    const existing = this.namespaces.get(name);
    const stored = structuredClone({
      apiVersion: 'v1' as const,
      kind: 'Namespace' as const,
      ...namespace,
      metadata: {
        ...namespace.metadata,
        labels: { ...namespace.metadata.labels, 'kubernetes.io/metadata.name': name },
        uid: namespace.metadata.uid ?? existing?.metadata.uid ?? this.host.nextUid(),
        creationTimestamp: existing?.metadata.creationTimestamp ?? apiTime(this.host.clock.now()),
        resourceVersion: String(this.host.nextRevision()),
      },
    });
    this.namespaces.set(name, stored);
    return structuredClone(stored);
  }

  /**
   * GET /api/v1/namespaces/<name>, counted as `getNamespace`: one put, or else one every cluster has or a Pod lives
   * in (a Pod cannot be created in a namespace that does not exist), with no labels but its name's.
   */
  getNamespaceRequest(name: string): Namespace | undefined {
    this.host.call('getNamespace');
    const stored = this.namespaces.get(name);
    if (stored) return structuredClone(stored);
    const implied =
      BUILT_IN_NAMESPACES.includes(name) || [...this.pods.values()].some((p) => p.metadata.namespace === name);
    if (!implied) return undefined;
    return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } };
  }

  put(pod: Pod): Pod {
    this.expire();
    return this.store(this.pods, pod, { apiVersion: 'v1', kind: 'Pod' });
  }

  putBudget(budget: PodDisruptionBudget): PodDisruptionBudget {
    const existing = this.budgets.get(key(budget.metadata));
    const specChanged = existing && JSON.stringify(existing.spec) !== JSON.stringify(budget.spec);
    const generation = (existing?.metadata.generation ?? 0) + (existing && !specChanged ? 0 : 1);
    const { status: _computed, ...rest } = budget;
    this.store(this.budgets, { ...rest, metadata: { ...rest.metadata, generation } } as PodDisruptionBudget, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
    });
    return this.budget(budget.metadata.namespace ?? 'default', budget.metadata.name)!;
  }

  deleteBudget(namespace: string, name: string): void {
    this.remove(this.budgets, `${namespace}/${name}`);
  }

  /** The budget with the status the disruption controller would give it now. */
  budget(namespace: string, name: string): PodDisruptionBudget | undefined {
    const stored = this.budgets.get(`${namespace}/${name}`);
    return stored && this.withStatus(stored);
  }

  listBudgets(): PodDisruptionBudget[] {
    return [...this.budgets.values()].map((b) => this.withStatus(b));
  }

  list(): Pod[] {
    this.expire();
    return [...this.pods.values()].map((p) => structuredClone(p));
  }

  get(namespace: string, name: string): Pod | undefined {
    this.expire();
    const pod = this.pods.get(`${namespace}/${name}`);
    return pod && structuredClone(pod);
  }

  /** POST .../pods/<name>/eviction: the namespace's lifecycle, the budget check, then the delete. */
  evict(namespace: string, name: string, options: DeleteOptions): Pod | undefined {
    admitInNamespace(namespace, name, this.terminatingNamespaces);
    const pod = this.existing(namespace, name, options.uid);
    // Only the Pod's own budgets get a status, computed from the stored Pods uncopied (it only reads them):
    // an eviction among thousands of Pods and hundreds of budgets stays cheap.
    const stored = [...this.pods.values()];
    admitEviction(
      pod,
      budgetsFor(pod, this.budgets.values()).map((b) => this.withStatus(b, stored)),
    );
    // Admitted: the API server marks the Pod with the DisruptionTarget condition (a write of its own), then
    // deletes it. https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-conditions
    const conditions = (pod.status?.conditions ?? []).filter((c) => c.type !== 'DisruptionTarget');
    const target = { type: 'DisruptionTarget', status: 'True' as const, reason: 'EvictionByEvictionAPI' };
    const condition = {
      ...target,
      message: 'Eviction API: evicting',
      lastTransitionTime: apiTime(this.host.clock.now()),
    };
    this.store(this.pods, { ...pod, status: { ...pod.status, conditions: [...conditions, condition] } }, {});
    return this.delete(namespace, name, options);
  }

  /** DELETE .../pods/<name>: the Pod as it now is (terminating), or as it was when it went at once. */
  delete(namespace: string, name: string, options: DeleteOptions): Pod {
    const pod = this.existing(namespace, name, options.uid);
    // A Pod that never ran on a Node, or has finished, has nothing to stop: it goes at once.
    const immediate = !pod.spec?.nodeName || isFinishedPod(pod);
    const grace = immediate ? 0 : (options.gracePeriodSeconds ?? podGracePeriodSeconds(pod));
    const now = this.host.clock.now();
    const until = now + grace * 1000;
    const current = Date.parse(pod.metadata.deletionTimestamp ?? '');
    if (Number.isFinite(current) && current <= until) return pod; // only shortened, never lengthened
    if (grace === 0) {
      this.remove(this.pods, key(pod.metadata));
      return pod;
    }
    const metadata = { ...pod.metadata, deletionTimestamp: apiTime(until), deletionGracePeriodSeconds: grace };
    return this.store(this.pods, { ...pod, metadata }, {});
  }

  /** Pods whose deletionTimestamp has passed are gone: the kubelet stopped them, or killed them at the deadline. */
  expire(): void {
    const now = this.host.clock.now();
    for (const [at, pod] of this.pods) {
      const deadline = Date.parse(pod.metadata.deletionTimestamp ?? '');
      if (Number.isFinite(deadline) && deadline <= now) this.remove(this.pods, at);
    }
  }

  private existing(namespace: string, name: string, uid: string | undefined): Pod {
    const pod = this.get(namespace, name);
    if (!pod) throw new KubernetesApiError(404, 'NotFound', `pods "${name}" not found`);
    if (uid !== undefined && uid !== pod.metadata.uid) {
      throw new KubernetesApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata.uid}`,
      );
    }
    return pod;
  }

  private withStatus(budget: PodDisruptionBudget, pods: readonly Pod[] = this.list()): PodDisruptionBudget {
    const scaleOf = (namespace: string, owner: OwnerReference) =>
      this.scales.get(`${namespace}/${owner.kind}/${owner.name}`);
    return { ...structuredClone(budget), status: budgetStatus(budget, pods, scaleOf) };
  }

  private store<T extends Pod | PodDisruptionBudget>(table: Map<string, T>, object: T, kind: Partial<T>): T {
    const at = key(object.metadata);
    const existing = table.get(at);
    const stored = structuredClone({
      ...kind,
      ...object,
      metadata: {
        ...object.metadata,
        namespace: object.metadata.namespace ?? 'default',
        uid: object.metadata.uid ?? existing?.metadata.uid ?? this.host.nextUid(),
        creationTimestamp: object.metadata.creationTimestamp ?? apiTime(this.host.clock.now()),
        resourceVersion: String(this.host.nextRevision()),
      },
    }) as T;
    table.set(at, stored);
    if (stored.kind === 'Pod') this.host.podWritten(existing ? 'MODIFIED' : 'ADDED', stored as Pod);
    return structuredClone(stored);
  }

  private remove<T extends Pod | PodDisruptionBudget>(table: Map<string, T>, at: string): void {
    const last = table.get(at);
    if (!last) return;
    table.delete(at);
    if (last.kind === 'Pod') this.host.podWritten('DELETED', last as Pod);
  }
}

/**
 * A strategic merge of a list whose patchMergeKey is `type` (Pod conditions): the elements the patch names come
 * first, in its order (each merged into the one of its type, null removing a field; `$patch: delete` removing it),
 * then the others as they were: the order the API server gives without a `$setElementOrder`
 * (test/k8s-contract/tgb-port.test.ts).
 */
function mergeByType<T extends { type: string }>(
  current: readonly T[],
  patch: readonly Record<string, unknown>[],
): T[] {
  const named: T[] = [];
  for (const element of patch) {
    if (typeof element.type !== 'string') {
      throw new KubernetesApiError(
        422,
        'Invalid',
        'status.conditions: the merge key "type" is missing in a patch element',
      );
    }
    const { $patch: directive, ...fields } = element;
    if (directive === 'delete') continue;
    const existing = current.find((c) => c.type === element.type);
    named.push(applyMergePatch(existing ? structuredClone(existing) : {}, fields) as T);
  }
  const types = new Set(patch.map((e) => e.type));
  return [...named, ...current.filter((c) => !types.has(c.type)).map((c) => structuredClone(c))];
}
