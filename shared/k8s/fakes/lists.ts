import type { ObjectMeta } from '../types.ts';
import type { FakeResponse } from './api-server.ts';
import { status } from './api-server.ts';
import type { FakeKubernetes, KubernetesChange, WatchedKubernetesKind } from './fake-kubernetes.ts';

/**
 * Lists and watches of the fake API server, with the resourceVersion rules of the real one
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions):
 * - a list is served from one snapshot, paged with `limit` and an opaque `continue` token;
 * - `compact()` plays etcd compaction: a continue token, an `Exact` list or a watch from a resourceVersion
 *   older than the compaction answers 410 Gone (a watch as an ERROR event, as kube-apiserver does);
 * - a list with `resourceVersion` (NotOlderThan) newer than the server's answers 504 Timeout;
 * - a watch replays the changes after its resourceVersion (or every object as ADDED without one) and
 *   ends, as a watch whose timeout ran out at once: clients watch again. Streaming watches are the relay's
 *   fake-kube-api.ts.
 */

type Stored = { metadata: ObjectMeta };

export interface ListRequest {
  /** PodDisruptionBudgets are listed but not watched (the fake reports no changes of them). */
  kind: WatchedKubernetesKind | 'PodDisruptionBudget';
  /** `NodeList`, `ServiceList`, ... and the apiVersion of the list. */
  listKind: string;
  apiVersion: string;
  /** Namespace of a namespaced path; undefined: every namespace. */
  namespace?: string;
  query: URLSearchParams;
  /** The objects now (read through the fake's port method when there is one, so queued errors apply). */
  current: () => Promise<Stored[]>;
}

interface Snapshot {
  revision: number;
  items: Stored[];
}

const gone = (message: string): FakeResponse => ({ status: 410, body: status(410, 'Expired', message) });

export class ListsAndWatches {
  private history: KubernetesChange[] = [];
  /** Lists and watches from before this revision answer 410. History starts when the server does. */
  private compactedRevision: number;
  private readonly snapshots = new Map<string, Snapshot>();
  private snapshotCounter = 0;
  private readonly unsubscribe: () => void;

  constructor(private readonly fake: FakeKubernetes) {
    this.compactedRevision = fake.currentRevision();
    this.unsubscribe = fake.watch((change) => this.history.push(change));
  }

  /** Forget history, as etcd compaction does: older continue tokens and resourceVersions answer 410 Gone. */
  compact(): void {
    this.history = [];
    this.compactedRevision = this.fake.currentRevision();
  }

  close(): void {
    this.unsubscribe();
  }

  async serve(request: ListRequest): Promise<FakeResponse> {
    const { query } = request;
    if (query.get('watch') === 'true' || query.get('watch') === '1') return this.watch(request);
    const token = query.get('continue');
    let snapshot: Snapshot;
    let offset = 0;
    let id: string;
    if (token) {
      const [tokenId = '', start = '0'] = Buffer.from(token, 'base64url').toString().split(':');
      const found = this.snapshots.get(tokenId);
      if (!found || found.revision < this.compactedRevision) {
        return gone(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      }
      [snapshot, offset, id] = [found, Number(start), tokenId];
    } else {
      const refused = this.checkListVersion(query);
      if (refused) return refused;
      const matches = selector(query);
      const items = (await request.current()).filter(
        (o) => (request.namespace === undefined || o.metadata.namespace === request.namespace) && matches(o),
      );
      items.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
      snapshot = { revision: this.fake.currentRevision(), items };
      id = String(++this.snapshotCounter);
    }
    const limit = Number(query.get('limit') ?? 0);
    const end = limit > 0 ? Math.min(snapshot.items.length, offset + limit) : snapshot.items.length;
    const metadata: Record<string, unknown> = { resourceVersion: String(snapshot.revision) };
    if (end < snapshot.items.length) {
      this.snapshots.set(id, snapshot);
      metadata.continue = Buffer.from(`${id}:${end}`).toString('base64url');
      metadata.remainingItemCount = snapshot.items.length - end;
    } else {
      this.snapshots.delete(id);
    }
    const body = {
      kind: request.listKind,
      apiVersion: request.apiVersion,
      metadata,
      items: snapshot.items.slice(offset, end),
    };
    return { status: 200, body };
  }

  private checkListVersion(query: URLSearchParams): FakeResponse | undefined {
    const asked = query.get('resourceVersion');
    if (!asked || asked === '0') return undefined;
    const revision = Number(asked);
    if (query.get('resourceVersionMatch') === 'Exact') {
      if (revision < this.compactedRevision) {
        return gone(`too old resource version: ${revision} (${this.compactedRevision})`);
      }
      // Older snapshots than the current one are not kept; refuse rather than answer the wrong state.
      if (revision !== this.fake.currentRevision()) {
        return { status: 500, body: status(500, 'InternalError', 'the fake API server keeps no older snapshots') };
      }
    }
    if (revision > this.fake.currentRevision()) {
      return {
        status: 504,
        body: status(
          504,
          'Timeout',
          `Too large resource version: ${revision}, current: ${this.fake.currentRevision()}`,
        ),
      };
    }
    return undefined;
  }

  private async watch(request: ListRequest): Promise<FakeResponse> {
    const asked = request.query.get('resourceVersion');
    const matches = selector(request.query);
    const inScope = (o: Stored) =>
      (request.namespace === undefined || o.metadata.namespace === request.namespace) && matches(o);
    const lines: string[] = [];
    if (!asked || asked === '0') {
      for (const object of await request.current()) if (inScope(object)) lines.push(event('ADDED', object));
    } else if (Number(asked) < this.compactedRevision) {
      const expired = status(410, 'Expired', `too old resource version: ${asked} (${this.compactedRevision})`);
      lines.push(JSON.stringify({ type: 'ERROR', object: expired }));
    } else {
      for (const change of this.history) {
        if (change.kind === request.kind && change.revision > Number(asked) && inScope(change.object)) {
          lines.push(event(change.type, change.object));
        }
      }
    }
    return { status: 200, body: lines.map((line) => `${line}\n`).join('') };
  }
}

function event(type: string, object: unknown): string {
  return JSON.stringify({ type, object });
}

function keyOf(object: Stored): string {
  return `${object.metadata.namespace ?? ''}/${object.metadata.name}`;
}

/**
 * `labelSelector` (`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated, all must hold) and `fieldSelector`
 * (`a.b=v`, `a.b!=v`).
 */
function selector(query: URLSearchParams): (object: Stored) => boolean {
  const labels = (query.get('labelSelector') ?? '').split(',').filter(Boolean).map(labelTerm);
  const fields = (query.get('fieldSelector') ?? '').split(',').filter(Boolean).map(fieldTerm);
  return (object) => labels.every((t) => t(object.metadata.labels ?? {})) && fields.every((t) => t(object));
}

function labelTerm(term: string): (labels: Record<string, string>) => boolean {
  const [, key = '', op, value = ''] = term.trim().match(/^([^!=]+?)\s*(==|!=|=)?\s*([^=]*)$/) ?? [];
  if (term.trim().startsWith('!')) return (labels) => !(term.trim().slice(1) in labels);
  if (!op) return (labels) => key in labels;
  return op === '!=' ? (labels) => labels[key] !== value : (labels) => labels[key] === value;
}

function fieldTerm(term: string): (object: Stored) => boolean {
  const negated = term.includes('!=');
  const [path = '', value = ''] = term.split(negated ? '!=' : /==?/);
  return (object) => {
    let current: unknown = object;
    for (const part of path.trim().split('.')) current = (current as Record<string, unknown> | undefined)?.[part];
    const actual = current === undefined || current === null ? '' : String(current);
    return negated ? actual !== value : actual === value;
  };
}
