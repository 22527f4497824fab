import type { IncomingMessage } from 'node:http';
import { isNotFound } from '../../shared/k8s/errors.ts';
import { type KubernetesRestClient, path } from '../../shared/k8s/rest-client.ts';
import { KIND_INFO, type KubeObject, type WatchedKind } from './kinds.ts';
import {
  type ListPage,
  type ListWatchSource,
  type WatchEvent,
  type WatchHandle,
  WatchInactivityError,
  type WatchOptions,
} from './kube-source.ts';
import type { Lease, LeasePort } from './lease.ts';

/**
 * The relay's list, watch and Leases over the project's small JSON-over-`node:https` client
 * (shared/k8s/rest-client.ts), which the relay uses in a Pod (service-account token and CA).
 *
 * Not @kubernetes/client-node: loading it (its generated models, undici, ws, js-yaml, jsonpath-plus,
 * openid-client...) made up about a fifth of the relay's resident memory before it listed anything
 * (deploy/relay/README.md, "Memory and throughput"), and of it the relay used a request context, an
 * HTTP library and `Watch`. client-node's `Watch` in particular is not needed for what it does: read
 * a chunked response line by line, one JSON event per line, and abort when nothing arrives for a while;
 * that is the `watch` below. client-node stays for kubeconfig mode (local runs: exec plugins, client
 * certificates), loaded on demand (kube-clients.ts), with the same behaviour (client-node-source.ts).
 */
export class RestListWatch implements ListWatchSource {
  private readonly listPageTimeoutMs: number;

  constructor(
    private readonly client: KubernetesRestClient,
    options: { listPageTimeoutMs?: number } = {},
  ) {
    this.listPageTimeoutMs = options.listPageTimeoutMs ?? 60_000;
  }

  async list(kind: WatchedKind, options: { limit: number; continueToken?: string }): Promise<ListPage> {
    const info = KIND_INFO[kind];
    const list = await this.client.send<{
      items?: KubeObject[] | null;
      metadata?: { resourceVersion?: string; continue?: string };
    }>({
      method: 'GET',
      path: info.path,
      query: { limit: options.limit, continue: options.continueToken, fieldSelector: info.fieldSelector },
      signal: AbortSignal.timeout(this.listPageTimeoutMs),
    });
    return {
      items: list?.items ?? [],
      resourceVersion: list?.metadata?.resourceVersion ?? '',
      continueToken: list?.metadata?.continue || undefined,
    };
  }

  /**
   * One watch request (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes).
   * Resolves once the response headers arrived, or the watch ended before (refused, unreachable,
   * silent): every end, an HTTP error included (410 Gone as a `KubernetesApiError`), reaches `onEnd`.
   */
  async watch(
    kind: WatchedKind,
    options: WatchOptions,
    onEvent: (event: WatchEvent) => void,
    onEnd: (error?: unknown) => void,
  ): Promise<WatchHandle> {
    const info = KIND_INFO[kind];
    // Aborts the request until the headers arrive; then the response is destroyed instead.
    const controller = new AbortController();
    let response: IncomingMessage | undefined;
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const close = () => {
      clearTimeout(timer);
      if (response) response.destroy();
      else controller.abort();
    };
    const end = (error?: unknown) => {
      if (ended) return;
      ended = true;
      close();
      onEnd(error);
    };
    // Connecting included: a half-open connection would otherwise look like a quiet kind for ever.
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => end(new WatchInactivityError(kind, options.inactivityMs)), options.inactivityMs);
      timer.unref();
    };
    const handle: WatchHandle = {
      stop: () => {
        // Closed by the relay: not an end to report.
        ended = true;
        close();
      },
    };
    arm();
    try {
      const answer = await this.client.stream({
        method: 'GET',
        path: info.path,
        query: {
          watch: 'true',
          resourceVersion: options.resourceVersion,
          timeoutSeconds: options.timeoutSeconds,
          // https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks
          allowWatchBookmarks: 'true',
          fieldSelector: info.fieldSelector,
        },
        signal: controller.signal,
      });
      if (ended) {
        answer.destroy();
        return handle;
      }
      response = answer;
    } catch (err) {
      end(err);
      return handle;
    }
    arm();
    readEvents(response, kind, {
      active: () => !ended,
      onData: arm,
      onEvent,
      onEnd: end,
    });
    return handle;
  }
}

/**
 * The watch body: one JSON event per line (newline-delimited), read as it arrives. A line that is not
 * JSON ends the watch with an error (the relay watches again from the last revision it saw) rather
 * than dropping an event unseen. The server ending the response is a normal end (its timeout); the
 * connection breaking before that is an error.
 */
function readEvents(
  response: IncomingMessage,
  kind: WatchedKind,
  on: {
    active: () => boolean;
    onData: () => void;
    onEvent: (event: WatchEvent) => void;
    onEnd: (error?: unknown) => void;
  },
): void {
  let pending = '';
  const handleLine = (line: string) => {
    if (line.trim() === '') return;
    let event: WatchEvent;
    try {
      event = JSON.parse(line) as WatchEvent;
    } catch (err) {
      on.onEnd(new Error(`${kind} watch: an event that is not JSON: ${line.slice(0, 200)}`, { cause: err }));
      return;
    }
    on.onEvent({ type: event.type, object: event.object });
  };
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    on.onData();
    const text = pending + chunk;
    let start = 0;
    for (let newline = text.indexOf('\n'); newline !== -1 && on.active(); newline = text.indexOf('\n', start)) {
      handleLine(text.slice(start, newline));
      start = newline + 1;
    }
    pending = text.slice(start);
  });
  response.on('end', () => {
    if (on.active()) handleLine(pending);
    pending = '';
    on.onEnd();
  });
  response.on('error', (err) => on.onEnd(err));
  response.on('close', () => {
    // Closed without `end`: the connection broke mid-stream.
    if (!response.complete) on.onEnd(new Error(`${kind} watch: the connection closed before the response ended`));
  });
}

/** Leases as plain JSON; `acquireTime`/`renewTime` strings go both ways untouched (lease.ts `microTime`). */
export class RestLeases implements LeasePort {
  constructor(private readonly client: KubernetesRestClient) {}

  async get(namespace: string, name: string): Promise<Lease | undefined> {
    try {
      return await this.client.send<Lease>({ method: 'GET', path: leasePath(namespace, name) });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  create(lease: Lease): Promise<Lease> {
    return this.client.send<Lease>({
      method: 'POST',
      path: path('apis', 'coordination.k8s.io', 'v1', 'namespaces', lease.metadata.namespace, 'leases'),
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease },
    });
  }

  update(lease: Lease): Promise<Lease> {
    return this.client.send<Lease>({
      method: 'PUT',
      path: leasePath(lease.metadata.namespace, lease.metadata.name),
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...lease },
    });
  }
}

const leasePath = (namespace: string, name: string) =>
  path('apis', 'coordination.k8s.io', 'v1', 'namespaces', namespace, 'leases', name);
