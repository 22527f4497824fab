import { type KubeObject, tableKey, WATCHED_KINDS, type WatchedKind } from '../kinds.ts';
import { FakeLeaseStore } from './fake-leases.ts';

/**
 * The cluster behind the relay's fake API server (fake-kube-api.ts): the objects of every watched kind, one
 * resourceVersion counter for the cluster bumped by every write (as etcd's revision), the history watches replay,
 * and the Leases. Tests and the benchmark write through it; the server reads it.
 */

export interface HistoryEvent {
  revision: number;
  kind: WatchedKind;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
  previous?: KubeObject;
}

export interface FakeClusterOptions {
  /** Keep at most this many events of history (older ones are compacted); default unlimited. */
  historyLimit?: number;
}

/** Anything with object metadata: KubeObject, or the shared `Node` type. */
type Storable = { metadata?: KubeObject['metadata'] };

/** The cluster's objects and their history. Objects are stored as given: never mutate one after `apply`. */
export class FakeCluster {
  private readonly objects = new Map<WatchedKind, Map<string, KubeObject>>(
    WATCHED_KINDS.map((kind) => [kind, new Map()]),
  );
  private history: HistoryEvent[] = [];
  private readonly listeners = new Set<(event: HistoryEvent) => void>();
  private readonly lastChange = new Map<WatchedKind, number>();
  private uidCounter = 0;
  /** The current revision. */
  revision = 1000;
  /** Watches and continue tokens older than this answer 410. */
  oldestRevision = 1000;
  readonly leases = new FakeLeaseStore();

  constructor(private readonly options: FakeClusterOptions = {}) {}

  /** Create or replace an object (metadata.resourceVersion, uid and creationTimestamp are filled in). */
  apply<T extends Storable>(kind: WatchedKind, object: T): T {
    const key = tableKey(kind, object as KubeObject);
    if (!key) throw new Error('FakeCluster: object without a name');
    const table = this.objects.get(kind)!;
    const previous = table.get(key);
    const revision = ++this.revision;
    const stored = {
      ...object,
      metadata: {
        ...object.metadata,
        uid: object.metadata?.uid ?? previous?.metadata?.uid ?? `uid-${kind.toLowerCase()}-${++this.uidCounter}`,
        resourceVersion: String(revision),
      },
    } as T;
    table.set(key, stored as KubeObject);
    this.record({ revision, kind, type: previous ? 'MODIFIED' : 'ADDED', object: stored as KubeObject, previous });
    return stored;
  }

  /** Change an object as some other client would (a copy is changed, then applied). */
  mutate<T extends Storable = KubeObject>(kind: WatchedKind, key: string, change: (object: T) => void): T {
    const current = this.get(kind, key);
    if (!current) throw new Error(`FakeCluster: no ${kind} ${key}`);
    const copy = structuredClone(current) as T;
    change(copy);
    return this.apply(kind, copy);
  }

  remove(kind: WatchedKind, key: string): void {
    const table = this.objects.get(kind)!;
    const previous = table.get(key);
    if (!previous) throw new Error(`FakeCluster: no ${kind} ${key}`);
    table.delete(key);
    const revision = ++this.revision;
    const object = { ...previous, metadata: { ...previous.metadata, resourceVersion: String(revision) } };
    this.record({ revision, kind, type: 'DELETED', object, previous });
  }

  /** The revision of the last change of `kind` (0 when none). */
  lastRevision(kind: WatchedKind): number {
    return this.lastChange.get(kind) ?? 0;
  }

  get(kind: WatchedKind, key: string): KubeObject | undefined {
    return this.objects.get(kind)!.get(key);
  }

  list(kind: WatchedKind): KubeObject[] {
    return [...this.objects.get(kind)!.values()];
  }

  /** Forget all history: a watch from any revision before now answers 410 Gone. */
  compact(): void {
    this.history = [];
    this.oldestRevision = this.revision;
  }

  /** Events of `kind` after `revision`, for a watch to replay. */
  since(kind: WatchedKind, revision: number): HistoryEvent[] {
    return this.history.filter((e) => e.kind === kind && e.revision > revision);
  }

  subscribe(listener: (event: HistoryEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private record(event: HistoryEvent): void {
    this.lastChange.set(event.kind, event.revision);
    this.history.push(event);
    const limit = this.options.historyLimit;
    if (limit !== undefined && this.history.length > limit * 2) {
      this.history = this.history.slice(-limit);
      this.oldestRevision = this.history[0]!.revision - 1;
    }
    for (const listener of this.listeners) listener(event);
  }
}
