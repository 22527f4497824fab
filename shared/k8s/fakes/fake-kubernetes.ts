import type { Clock } from '../../clock.ts';
import {
  CORDON_PATCH,
  type DrainPort,
  deleteOutcome,
  type EvictionResult,
  type EvictOptions,
  evictionOutcome,
  type PodDeleteResult,
} from '../drain-port.ts';
import { isNotFound, KubernetesApiError } from '../errors.ts';
import type { ConfigMap, IpamKubernetesPort } from '../ipam-port.ts';
import type { KubernetesPort, WriteGuard } from '../port.ts';
import type { ServicesPort } from '../service-port.ts';
import type { EndpointSlice, EventRecord, MergePatch, Node, Pod, Service } from '../types.ts';
import { FakeConfigMaps } from './config-maps.ts';
import { FakePods, type PodGateOperation } from './pods.ts';
import { FakeServices } from './services.ts';
import { aggregateEvents, apiTime, checkPreconditions, guardedMergePatch } from './writes.ts';

export type KubernetesOperation =
  | 'getNode'
  | 'listNodes'
  | 'patchNode'
  | 'patchNodeStatus'
  | 'deleteNode'
  | 'recordEvent'
  | 'getService'
  | 'listServices'
  | 'patchService'
  | 'patchServiceStatus'
  | 'listEndpointSlices'
  | 'listPodsOnNode'
  | 'evictPod'
  | 'deletePod'
  | 'cordonNode'
  | 'patchPod'
  | 'getConfigMap'
  | PodGateOperation;

const WRITE_OPERATIONS: readonly KubernetesOperation[] = [
  'patchNode',
  'patchNodeStatus',
  'deleteNode',
  'patchService',
  'patchServiceStatus',
  'evictPod',
  'deletePod',
  'cordonNode',
  'patchPod',
  'setPodCondition',
];

/** PodDisruptionBudgets are not reported: nothing here watches them. */
export type WatchedKubernetesKind = 'Node' | 'Service' | 'EndpointSlice' | 'Pod' | 'ConfigMap';

/** One change of a stored object, as a watch reports it; `revision` is the resourceVersion it was written at. */
export interface KubernetesChange {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  kind: WatchedKubernetesKind;
  object: Node | Service | EndpointSlice | Pod | ConfigMap;
  revision: number;
}

/** Identical Events counted as one, as `kubectl describe` shows them ("x5 over 10m"). Times in ms. */
export interface AggregatedEvent extends EventRecord {
  count: number;
  firstTimestamp: number;
  lastTimestamp: number;
}

/**
 * An in-memory API server for the kinds the controllers touch. Like the real one it bumps
 * resourceVersion on every write, answers 409 Conflict to a write guarded by a stale
 * resourceVersion (and to a delete whose preconditions fail), keeps an object with finalizers as
 * "terminating" (deletionTimestamp set) until they are removed, and stores Events. The client-node
 * adapters are tested against this same fake served over HTTPS (`server.ts`).
 * Pods and PodDisruptionBudgets (graceful deletion on the fake's clock, evictions refused by budgets)
 * are `pods.ts`, ConfigMaps `config-maps.ts`, Services and EndpointSlices `services.ts`.
 */
export class FakeKubernetes implements KubernetesPort, ServicesPort, DrainPort, IpamKubernetesPort {
  readonly nodes = new Map<string, Node>();
  /** By `namespace/name` (`services.ts` keeps them). */
  readonly services: Map<string, Service>;
  /** By `namespace/name`. */
  readonly endpointSlices: Map<string, EndpointSlice>;
  readonly events: (EventRecord & { timestamp: number })[] = [];
  readonly calls = new Map<KubernetesOperation, number>();
  private revision = 1000;
  private uidCounter = 0;
  private readonly queuedErrors = new Map<KubernetesOperation, Error[]>();
  private readonly watchers = new Set<(change: KubernetesChange) => void>();
  /** Called after each successful write with the new object (or undefined when deleted). */
  onChange?: (kind: 'Node', name: string, object: Node | undefined) => void;
  /** Pods and PodDisruptionBudgets (`pods.ts`). */
  readonly workloads: FakePods;
  /** ConfigMaps (`config-maps.ts`). */
  readonly configMaps: FakeConfigMaps;
  /** Services and EndpointSlices (`services.ts`). */
  private readonly serviceStore: FakeServices;

  constructor(private readonly clock: Clock) {
    this.workloads = new FakePods({
      clock,
      nextRevision: () => this.nextRevision(),
      nextUid: () => `uid-${++this.uidCounter}`,
      call: (operation) => this.call(operation),
      podWritten: (type, pod) => (type === 'DELETED' ? this.reportDeleted('Pod', pod) : this.changed('Pod', type, pod)),
    });
    this.configMaps = new FakeConfigMaps({
      nextRevision: () => this.nextRevision(),
      nextUid: () => `uid-${++this.uidCounter}`,
      call: (operation) => this.call(operation),
      written: (type, cm) =>
        type === 'DELETED' ? this.reportDeleted('ConfigMap', cm) : this.changed('ConfigMap', type, cm),
    });
    this.serviceStore = new FakeServices({
      nextRevision: () => this.nextRevision(),
      nextUid: () => `uid-${++this.uidCounter}`,
      now: () => this.clock.now(),
      call: (operation) => this.call(operation),
      written: (kind, type, object) => this.changed(kind, type, object),
      deleted: (kind, last) => this.reportDeleted(kind, last),
    });
    this.services = this.serviceStore.services;
    this.endpointSlices = this.serviceStore.endpointSlices;
  }

  /** The resourceVersion of the last write: what a list answers as its own `metadata.resourceVersion`. */
  currentRevision(): number {
    return this.revision;
  }

  /** A new resourceVersion from the same counter, for objects kept outside this class (Events served over HTTP). */
  nextRevision(): number {
    return ++this.revision;
  }

  /** Calls `listener` with every later change of a Node, Service, EndpointSlice, Pod or ConfigMap; returns the unsubscribe. */
  watch(listener: (change: KubernetesChange) => void): () => void {
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  /** Create (as kubelet registering a Node would) or overwrite an object, bumping resourceVersion. */
  putNode(node: Node): Node {
    const existing = this.nodes.get(node.metadata.name);
    const stored: Node = structuredClone({
      apiVersion: 'v1',
      kind: 'Node',
      ...node,
      metadata: {
        ...node.metadata,
        uid: node.metadata.uid ?? existing?.metadata.uid ?? `uid-${++this.uidCounter}`,
        creationTimestamp: node.metadata.creationTimestamp ?? apiTime(this.clock.now()),
        resourceVersion: String(++this.revision),
      },
    });
    this.nodes.set(node.metadata.name, stored);
    this.onChange?.('Node', node.metadata.name, structuredClone(stored));
    this.changed('Node', existing ? 'MODIFIED' : 'ADDED', stored);
    return structuredClone(stored);
  }

  /** Change an object outside any guard (kubelet heartbeats, another controller). */
  mutateNode(name: string, change: (node: Node) => void): Node {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`FakeKubernetes: no node ${name}`);
    const copy = structuredClone(node);
    change(copy);
    return this.putNode(copy);
  }

  queueError(operation: KubernetesOperation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  callCount(operation: KubernetesOperation): number {
    return this.calls.get(operation) ?? 0;
  }

  writeCount(): number {
    return WRITE_OPERATIONS.reduce((n, op) => n + this.callCount(op), 0);
  }

  eventsFor(kind: string, name: string, reason?: string): EventRecord[] {
    return this.events.filter(
      (e) => e.involvedObject.kind === kind && e.involvedObject.name === name && (!reason || e.reason === reason),
    );
  }

  /**
   * `events` as the real adapter leaves them in the cluster: identical Events (same object, type,
   * reason and message) counted on one, with the times of the first and the last. `events` itself
   * keeps one entry per recordEvent call.
   */
  aggregatedEvents(): AggregatedEvent[] {
    return aggregateEvents(this.events);
  }

  resetCalls(): void {
    this.calls.clear();
  }

  async getNode(name: string): Promise<Node | undefined> {
    this.call('getNode');
    const node = this.nodes.get(name);
    return node ? structuredClone(node) : undefined;
  }

  async listNodes(): Promise<Node[]> {
    this.call('listNodes');
    return [...this.nodes.values()].map((n) => structuredClone(n));
  }

  async patchNode(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node> {
    this.call('patchNode');
    return this.patch(name, patch, guard, false);
  }

  async patchNodeStatus(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node> {
    this.call('patchNodeStatus');
    return this.patch(name, patch, guard, true);
  }

  async deleteNode(name: string, preconditions: { uid?: string; resourceVersion?: string }): Promise<void> {
    this.call('deleteNode');
    const node = this.nodes.get(name);
    if (!node) throw new KubernetesApiError(404, 'NotFound', `nodes "${name}" not found`);
    checkPreconditions(node.metadata, preconditions);
    if (node.metadata.finalizers?.length) {
      if (!node.metadata.deletionTimestamp) {
        this.putNode({
          ...node,
          metadata: { ...node.metadata, deletionTimestamp: apiTime(this.clock.now()) },
        });
      }
      return;
    }
    this.removed('Node', this.nodes, name);
  }

  /** Create or overwrite a Service (as `kubectl apply` would), bumping resourceVersion. */
  putService(service: Service): Service {
    return this.serviceStore.put(service);
  }

  /** Change a Service outside any guard (a user editing it). */
  mutateService(namespace: string, name: string, change: (service: Service) => void): Service {
    return this.serviceStore.mutate(namespace, name, change);
  }

  /**
   * `kubectl delete service`: with finalizers the Service only gets a deletionTimestamp and stays until the
   * last finalizer is removed; without, it is gone at once.
   */
  deleteService(namespace: string, name: string): void {
    this.serviceStore.delete(namespace, name);
  }

  putEndpointSlice(slice: EndpointSlice): EndpointSlice {
    return this.serviceStore.putSlice(slice);
  }

  deleteEndpointSlice(namespace: string, name: string): void {
    this.serviceStore.deleteSlice(namespace, name);
  }

  async getService(namespace: string, name: string): Promise<Service | undefined> {
    return this.serviceStore.getRequest(namespace, name);
  }

  async listServices(): Promise<Service[]> {
    return this.serviceStore.listRequest();
  }

  async patchService(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard): Promise<Service> {
    this.call('patchService');
    return this.serviceStore.patch(namespace, name, patch, guard, false);
  }

  async patchServiceStatus(
    namespace: string,
    name: string,
    patch: MergePatch<Service>,
    guard: WriteGuard,
  ): Promise<Service> {
    this.call('patchServiceStatus');
    return this.serviceStore.patch(namespace, name, patch, guard, true);
  }

  async listEndpointSlices(namespace: string, serviceName: string): Promise<EndpointSlice[]> {
    return this.serviceStore.listSlicesRequest(namespace, serviceName);
  }

  /** Create or overwrite a Pod (as the scheduler and kubelet would leave it); budgets: `workloads.putBudget`. */
  putPod(pod: Pod): Pod {
    return this.workloads.put(pod);
  }

  async listPodsOnNode(nodeName: string): Promise<Pod[]> {
    return this.workloads.listOnNode(nodeName);
  }

  async evictPod(namespace: string, name: string, options: EvictOptions = {}): Promise<EvictionResult> {
    return evictionOutcome(namespace, name, options, async () => this.workloads.evictRequest(namespace, name, options));
  }

  async deletePod(namespace: string, name: string, options: { uid?: string } = {}): Promise<PodDeleteResult> {
    return deleteOutcome(namespace, name, options, async () => this.workloads.deleteRequest(namespace, name, options));
  }

  /** A merge patch of the Pod's annotations guarded by resourceVersion and uid (`FakePods.patchRequest`). */
  async patchPodAnnotations(
    namespace: string,
    name: string,
    annotations: Readonly<Record<string, string | null>>,
    guard: WriteGuard & { uid: string },
  ): Promise<Pod | 'gone'> {
    try {
      return this.workloads.patchRequest(namespace, name, { metadata: { annotations } }, guard);
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  /** The leader Leases are kept with the Pods (`workloads.leases`, leases.ts). */
  async getLease(namespace: string, name: string) {
    return this.workloads.leases.getRequest(namespace, name);
  }

  /** Create or overwrite a ConfigMap (as `kubectl apply` would), bumping resourceVersion. */
  putConfigMap(configMap: ConfigMap): ConfigMap {
    return this.configMaps.put(configMap);
  }

  deleteConfigMap(namespace: string, name: string): void {
    this.configMaps.delete(namespace, name);
  }

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    return this.configMaps.getRequest(namespace, name);
  }

  async cordonNode(name: string, guard: WriteGuard): Promise<Node> {
    this.call('cordonNode');
    return this.patch(name, CORDON_PATCH, guard, false);
  }

  async recordEvent(event: EventRecord): Promise<void> {
    this.call('recordEvent');
    this.events.push({ ...structuredClone(event), timestamp: this.clock.now() });
  }

  private patch(name: string, patch: MergePatch<Node>, guard: WriteGuard, status: boolean): Node {
    const next = guardedMergePatch('nodes', name, this.nodes.get(name), patch, guard, status);
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      this.removed('Node', this.nodes, name);
      return next;
    }
    return this.putNode(next);
  }

  private changed(
    kind: WatchedKubernetesKind,
    type: KubernetesChange['type'],
    object: KubernetesChange['object'],
  ): void {
    const revision = Number(object.metadata.resourceVersion);
    for (const watcher of this.watchers) watcher({ type, kind, object: structuredClone(object), revision });
  }

  /** Deletion is a write too: the DELETED event carries a new resourceVersion, as the API server's does. */
  private removed<T extends Node | Service | EndpointSlice>(
    kind: WatchedKubernetesKind,
    table: Map<string, T>,
    key: string,
  ): void {
    const last = table.get(key)!;
    table.delete(key);
    if (kind === 'Node') this.onChange?.('Node', key, undefined);
    this.reportDeleted(kind, last);
  }

  private reportDeleted(kind: WatchedKubernetesKind, last: KubernetesChange['object']): void {
    const revision = ++this.revision;
    const object = { ...last, metadata: { ...last.metadata, resourceVersion: String(revision) } };
    for (const watcher of this.watchers) watcher({ type: 'DELETED', kind, object: structuredClone(object), revision });
  }

  private call(operation: KubernetesOperation): void {
    this.calls.set(operation, (this.calls.get(operation) ?? 0) + 1);
    const queued = this.queuedErrors.get(operation);
    if (queued && queued.length > 0) throw queued.shift()!;
  }
}
