import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubernetesApiError } from '../../../shared/k8s/errors.ts';
import { FAKE_API_SERVER_CA_DATA, FAKE_API_SERVER_TLS, status } from '../../../shared/k8s/fakes/api-server.ts';
import { tokenKubeConfig } from '../../../shared/k8s/lambda-access.ts';
import type { TokenKubeConfig } from '../../../shared/k8s/rest-client.ts';
import { KIND_INFO, type KubeObject, tableKey, WATCHED_KINDS, type WatchedKind } from '../kinds.ts';
import type { Lease } from '../lease.ts';
import type { FakeCluster, HistoryEvent } from './fake-cluster.ts';

export { FakeCluster, type FakeClusterOptions } from './fake-cluster.ts';

/**
 * A Kubernetes API server for the relay's tests and benchmark: HTTPS on 127.0.0.1 speaking the real
 * list and watch protocol for the watched kinds, plus Leases.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/
 *
 * - resourceVersion is one counter for the cluster, bumped by every write (as etcd's revision);
 * - paged lists (`limit`, `continue`) serve a snapshot; a continue token older than the compacted
 *   revision answers 410 Expired;
 * - watches replay history after the given resourceVersion, then stream; a resourceVersion older than
 *   the compacted revision answers 410 (as an ERROR event, or as the HTTP status);
 * - field selectors `a.b=v` / `a.b!=v`, with ADDED/DELETED when an object starts or stops matching;
 * - bookmarks (`allowWatchBookmarks`), and `timeoutSeconds` (scaled for tests);
 * - Leases over a FakeLeaseStore, 409 on conflicts.
 * Controls let a test end, drop or silence watches, compact history and cut a client off.
 */

export interface FakeKubeApiOptions {
  /** Send a bookmark this often to watches that allow them; 0 never (default 0). */
  bookmarkIntervalMs?: number;
  /** Milliseconds per second of `timeoutSeconds` (tests shrink the server-side watch timeout). */
  timeoutScaleMs?: number;
  /** How a watch from a compacted revision is refused: an ERROR event (what kube-apiserver does) or HTTP 410. */
  expiredAs?: 'event' | 'status';
}

export interface ApiRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  token?: string;
  watch: boolean;
  kind?: WatchedKind;
}

interface OpenWatch {
  kind: WatchedKind;
  response: ServerResponse;
  silent: boolean;
  close(): void;
}

export interface FakeKubeApi {
  url: string;
  caData: string;
  requests: ApiRequest[];
  /** Open watches (of one kind). */
  openWatches(kind?: WatchedKind): number;
  /** End open watches normally, as the server's timeout does. */
  endWatches(kind?: WatchedKind): void;
  /** Break open watches' connections. */
  dropWatches(kind?: WatchedKind): void;
  /** Open watches stay connected but receive nothing more, not even bookmarks. */
  silenceWatches(kind?: WatchedKind): void;
  /** Bytes written to watches and not yet taken by the client (benchmarks pace themselves on it). */
  backlog(): number;
  /** Break every request made with this bearer token to `pathPrefix` (a partition), until healed. */
  cut(token: string, pathPrefix?: string): void;
  heal(token: string): void;
  /** Answer the next `times` requests matching `match` with this status. */
  failNext(match: (request: ApiRequest) => boolean, code: number, times?: number): void;
  close(): Promise<void>;
}

const LEASES = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/;

export async function startFakeKubeApi(cluster: FakeCluster, options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const requests: ApiRequest[] = [];
  const watches = new Set<OpenWatch>();
  const cuts = new Map<string, string>();
  const failures: { match: (request: ApiRequest) => boolean; code: number; times: number }[] = [];
  const snapshots = new Map<string, { revision: number; items: KubeObject[] }>();
  let snapshotCounter = 0;
  const scale = options.timeoutScaleMs ?? 1000;

  const server = createServer(FAKE_API_SERVER_TLS, (req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, status(500, 'InternalError', String(err)));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const kind = WATCHED_KINDS.find((k) => KIND_INFO[k].path === url.pathname);
    const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const auth = req.headers.authorization;
    const request: ApiRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      token: auth?.startsWith('Bearer ') ? auth.slice(7) : undefined,
      watch,
      kind,
    };
    requests.push(request);
    const body = await readBody(req);

    const cutPrefix = request.token === undefined ? undefined : cuts.get(request.token);
    if (cutPrefix !== undefined && request.path.startsWith(cutPrefix)) {
      req.socket.destroy();
      return;
    }
    const failure = failures.find((f) => f.times > 0 && f.match(request));
    if (failure) {
      failure.times--;
      send(res, failure.code, status(failure.code, reasonFor(failure.code), `injected ${failure.code}`));
      return;
    }
    const lease = url.pathname.match(LEASES);
    if (lease) return leases(req.method ?? 'GET', decodeURIComponent(lease[1]!), lease[2], body, res);
    if (!kind || req.method !== 'GET') {
      send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
      return;
    }
    if (watch) startWatch(kind, url.searchParams, res);
    else list(kind, url.searchParams, res);
  }

  function list(kind: WatchedKind, query: URLSearchParams, res: ServerResponse): void {
    const limit = Number(query.get('limit') ?? 0);
    const token = query.get('continue');
    let snapshot: { revision: number; items: KubeObject[] };
    let offset = 0;
    if (token) {
      const [id, start] = Buffer.from(token, 'base64url').toString().split(':');
      const found = snapshots.get(id ?? '');
      if (!found || found.revision < cluster.oldestRevision) {
        send(
          res,
          410,
          status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.'),
        );
        return;
      }
      snapshot = found;
      offset = Number(start);
    } else {
      const selector = parseSelector(query.get('fieldSelector'), KIND_INFO[kind].fieldSelector);
      const items = cluster.list(kind).filter((o) => selector(o));
      items.sort((a, b) => (tableKey(kind, a)! < tableKey(kind, b)! ? -1 : 1));
      snapshot = { revision: cluster.revision, items };
    }
    const end = limit > 0 ? Math.min(snapshot.items.length, offset + limit) : snapshot.items.length;
    const metadata: Record<string, unknown> = { resourceVersion: String(snapshot.revision) };
    const id = token ? Buffer.from(token, 'base64url').toString().split(':')[0]! : String(++snapshotCounter);
    if (end >= snapshot.items.length) snapshots.delete(id);
    else {
      snapshots.set(id, snapshot);
      metadata.continue = Buffer.from(`${id}:${end}`).toString('base64url');
      metadata.remainingItemCount = snapshot.items.length - end;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    // Written item by item: one JSON.stringify of a 500-object page would double the peak memory.
    res.write(`{"kind":"${kind}List","apiVersion":"v1","metadata":${JSON.stringify(metadata)},"items":[`);
    for (let i = offset; i < end; i++) res.write(`${i > offset ? ',' : ''}${JSON.stringify(snapshot.items[i])}`);
    res.end(']}');
  }

  function startWatch(kind: WatchedKind, query: URLSearchParams, res: ServerResponse): void {
    const from = query.get('resourceVersion') ?? '';
    const selector = parseSelector(query.get('fieldSelector'), KIND_INFO[kind].fieldSelector);
    const revision = from === '' || from === '0' ? undefined : Number(from);
    if (revision !== undefined && revision < cluster.oldestRevision) {
      const gone = status(410, 'Expired', `too old resource version: ${revision} (${cluster.oldestRevision})`);
      if (options.expiredAs === 'status') {
        send(res, 410, gone);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // kube-apiserver flushes the headers at once; a client's request resolves before the first event.
    res.flushHeaders();
    const open: OpenWatch = {
      kind,
      response: res,
      silent: false,
      close: () => undefined,
    };
    // Not after the watch's own timeout ended it: its 'close' (which stops the timers) comes a tick later.
    const write = (type: string, object: unknown) => {
      if (!open.silent && !res.destroyed && !res.writableEnded) res.write(`${JSON.stringify({ type, object })}\n`);
    };
    const deliver = (event: HistoryEvent) => {
      if (event.kind !== kind) return;
      const now = selector(event.object);
      const before = event.previous !== undefined && selector(event.previous);
      if (event.type === 'DELETED') {
        if (before) write('DELETED', event.object);
      } else if (now && before) write('MODIFIED', event.object);
      else if (now) write('ADDED', event.object);
      else if (before) write('DELETED', event.object);
    };
    if (revision === undefined) {
      for (const object of cluster.list(kind)) if (selector(object)) write('ADDED', object);
    } else {
      for (const event of cluster.since(kind, revision)) deliver(event);
    }
    const unsubscribe = cluster.subscribe(deliver);
    const timers: NodeJS.Timeout[] = [];
    const timeoutSeconds = Number(query.get('timeoutSeconds') ?? 0);
    if (timeoutSeconds > 0) timers.push(setTimeout(() => res.end(), timeoutSeconds * scale));
    if (query.get('allowWatchBookmarks') === 'true' && (options.bookmarkIntervalMs ?? 0) > 0) {
      const bookmark = () =>
        write('BOOKMARK', {
          kind,
          apiVersion: apiVersionOf(kind),
          metadata: { resourceVersion: String(cluster.revision) },
        });
      timers.push(setInterval(bookmark, options.bookmarkIntervalMs));
    }
    open.close = () => {
      unsubscribe();
      for (const timer of timers) clearTimeout(timer);
      watches.delete(open);
    };
    watches.add(open);
    res.on('close', open.close);
  }

  async function leases(
    method: string,
    namespace: string,
    name: string | undefined,
    body: string,
    res: ServerResponse,
  ): Promise<void> {
    try {
      if (method === 'GET' && name) {
        const lease = await cluster.leases.get(namespace, decodeURIComponent(name));
        if (!lease) send(res, 404, status(404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`));
        else send(res, 200, lease);
      } else if (method === 'POST' && !name) {
        const lease = JSON.parse(body) as Lease;
        send(res, 201, await cluster.leases.create({ ...lease, metadata: { ...lease.metadata, namespace } }));
      } else if (method === 'PUT' && name) {
        const lease = JSON.parse(body) as Lease;
        send(res, 200, await cluster.leases.update({ ...lease, metadata: { ...lease.metadata, namespace } }));
      } else {
        send(res, 405, status(405, 'MethodNotAllowed', `${method} is not supported here`));
      }
    } catch (err) {
      if (err instanceof KubernetesApiError) send(res, err.statusCode, status(err.statusCode, err.reason, err.message));
      else throw err;
    }
  }

  const matching = (kind?: WatchedKind) => [...watches].filter((w) => kind === undefined || w.kind === kind);

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    caData: FAKE_API_SERVER_CA_DATA,
    requests,
    openWatches: (kind) => matching(kind).length,
    endWatches: (kind) => {
      for (const w of matching(kind)) w.response.end();
    },
    dropWatches: (kind) => {
      for (const w of matching(kind)) w.response.destroy();
    },
    silenceWatches: (kind) => {
      for (const w of matching(kind)) w.silent = true;
    },
    backlog: () => [...watches].reduce((sum, w) => sum + w.response.writableLength, 0),
    cut: (token, pathPrefix = '/') => {
      cuts.set(token, pathPrefix);
    },
    heal: (token) => {
      cuts.delete(token);
    },
    failNext: (match, code, times = 1) => {
      failures.push({ match, code, times });
    },
    close: async () => {
      for (const w of watches) w.response.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** The fake server for the REST client (what the relay uses in a Pod), with a bearer token. */
export function restConfigFor(api: Pick<FakeKubeApi, 'url' | 'caData'>, token = 'relay-token'): TokenKubeConfig {
  return { server: api.url, caData: api.caData, token };
}

/** A KubeConfig for the fake server, authenticating with a bearer token (tests tell clients apart by it). */
export function kubeConfigFor(api: Pick<FakeKubeApi, 'url' | 'caData'>, token = 'relay-token'): KubeConfig {
  return tokenKubeConfig({ endpoint: api.url, caData: api.caData }, token);
}

/** The group/version of a kind, from its collection path: `/api/v1/...` is the core group (`v1`). */
function apiVersionOf(kind: WatchedKind): string {
  const [, api, group, version] = KIND_INFO[kind].path.split('/');
  return api === 'api' ? (group ?? 'v1') : `${group}/${version}`;
}

/** `a.b=v,c!=w` (what the relay uses); missing fields read as empty strings. */
function parseSelector(text: string | null, fallback?: string): (object: KubeObject) => boolean {
  const source = text ?? fallback;
  if (!source) return () => true;
  const terms = source.split(',').map((term) => {
    const negated = term.includes('!=');
    const [path, value = ''] = term.split(negated ? '!=' : '=');
    return { path: (path ?? '').split('.'), value, negated };
  });
  return (object) =>
    terms.every(({ path, value, negated }) => {
      let current: unknown = object;
      for (const part of path) current = (current as Record<string, unknown> | undefined)?.[part];
      const actual = current === undefined || current === null ? '' : String(current);
      return negated ? actual !== value : actual === value;
    });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function reasonFor(code: number): string {
  return (
    { 403: 'Forbidden', 410: 'Expired', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable' }[
      code
    ] ?? 'Unknown'
  );
}
