import type { ClientRequest, IncomingMessage } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { HTTP_REASONS, KubernetesApiError, statusOf } from './errors.ts';
import { EVENT_COMPONENT } from './event-recorder.ts';

/**
 * The Kubernetes REST client of the Lambdas: JSON over `node:https`, a bearer token and a CA, one keep-alive
 * connection pool per set of credentials. The Lambdas make a handful of calls (get, list, patch, create,
 * delete of Nodes, Services, EndpointSlices, Pods, ConfigMaps and Events) and never watch, exec or read a
 * kubeconfig, so they need none of @kubernetes/client-node's generated models, YAML, WebSocket or auth
 * plugins, which made up most of every bundle and of its cold import (docs/adr/0010-lambda-cold-start.md).
 * Not global `fetch`: it takes a private CA only through an undici dispatcher, which is the package this
 * module exists to leave out. client-node stays for kubeconfig mode (local runs); the relay's in-cluster list,
 * watch and Leases use this client too (functions/relay/rest-source.ts), for its memory.
 */

/** Server, CA and token: everything of a kubeconfig the Lambdas use (`token` and `eks` modes). */
export interface TokenKubeConfig {
  /** https:// URL of the API server. */
  server: string;
  /** Base64 PEM CA bundle of the API server. */
  caData: string;
  token: string;
  /**
   * Read for every request instead of `token` when given: a token that changes under a long-running
   * process (the relay's projected service-account token, which the kubelet rotates).
   */
  readToken?: () => string;
}

/** Page size for lists (https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks). */
export const LIST_PAGE_SIZE = 500;

/** RFC 7386 JSON merge patch (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/). */
export const MERGE_PATCH_TYPE = 'application/merge-patch+json';

export interface RestRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path with its segments already encoded (`path` below). */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  contentType?: string;
  /** Aborts the request until its response is read (`send`) or its headers arrived (`stream`). */
  signal?: AbortSignal;
}

/** A path from segments, each URI-encoded: `/api/v1/nodes/a%20b`. */
export function path(...segments: string[]): string {
  return `/${segments.map(encodeURIComponent).join('/')}`;
}

export class KubernetesRestClient {
  private readonly base: URL;
  private readonly agent: Agent;

  constructor(
    private readonly kubeConfig: TokenKubeConfig,
    private readonly userAgent = EVENT_COMPONENT,
  ) {
    this.base = new URL(kubeConfig.server.replace(/\/+$/, ''));
    // One pool for the life of these credentials: a warm Lambda reuses its TLS connection.
    this.agent = new Agent({ keepAlive: true, ca: Buffer.from(kubeConfig.caData, 'base64') });
  }

  /**
   * The response body as JSON (undefined when empty). An HTTP error is a `KubernetesApiError` with the
   * reason and message of the API server's Status (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/);
   * anything else (connection refused, TLS failure) is thrown as Node reports it.
   */
  send<T>(req: RestRequest): Promise<T> {
    const { url, headers, body } = this.prepare(req);
    return new Promise<T>((resolve, reject) => {
      const outgoing = httpsRequest(url, { method: req.method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          done();
          const text = Buffer.concat(chunks).toString('utf8');
          const code = res.statusCode ?? 0;
          if (code < 200 || code > 299) {
            reject(apiError(code, text));
            return;
          }
          try {
            resolve((text.trim() === '' ? undefined : JSON.parse(text)) as T);
          } catch (err) {
            reject(
              new Error(`reading the API server's answer to ${req.method} ${req.path}: ${String(err)}`, { cause: err }),
            );
          }
        });
      });
      const done = abortOn(req.signal, outgoing, reject);
      outgoing.on('error', (err) => {
        done();
        reject(err);
      });
      outgoing.end(body);
    });
  }

  /**
   * The response as a stream, once its headers arrived with a 2xx status (a watch: its body is read as
   * it comes). Any other status is a `KubernetesApiError`, as for `send`. From then on the caller ends it:
   * `destroy()` the response.
   */
  stream(req: RestRequest): Promise<IncomingMessage> {
    const { url, headers, body } = this.prepare(req);
    return new Promise<IncomingMessage>((resolve, reject) => {
      const outgoing = httpsRequest(url, { method: req.method, headers, agent: this.agent }, (res) => {
        done();
        const code = res.statusCode ?? 0;
        if (code >= 200 && code <= 299) {
          resolve(res);
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => reject(apiError(code, Buffer.concat(chunks).toString('utf8'))));
      });
      const done = abortOn(req.signal, outgoing, reject);
      outgoing.on('error', (err) => {
        done();
        reject(err);
      });
      outgoing.end(body);
    });
  }

  private prepare(req: RestRequest): { url: URL; headers: Record<string, string>; body?: string } {
    const url = new URL(this.base.pathname.replace(/\/$/, '') + req.path, this.base);
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined && value !== '') query.set(key, String(value));
    }
    query.sort();
    url.search = query.toString();
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers: Record<string, string> = {
      Accept: 'application/json',
      Authorization: `Bearer ${this.kubeConfig.readToken?.() ?? this.kubeConfig.token}`,
      'User-Agent': this.userAgent,
    };
    if (body !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    return { url, headers, body };
  }
}

/**
 * Abort `outgoing` when `signal` fires, until the returned function is called. Not `http.request`'s own
 * `signal` option: an abort after the response was read would destroy the keep-alive socket the request
 * gave back to the pool, where no one listens for its error.
 */
function abortOn(signal: AbortSignal | undefined, outgoing: ClientRequest, reject: (err: unknown) => void): () => void {
  if (!signal) return () => {};
  const abort = () => {
    const reason = signal.reason instanceof Error ? signal.reason : new Error('the request was aborted');
    reject(reason);
    outgoing.destroy(reason);
  };
  if (signal.aborted) {
    queueMicrotask(abort);
    return () => {};
  }
  signal.addEventListener('abort', abort, { once: true });
  return () => signal.removeEventListener('abort', abort);
}

function apiError(code: number, text: string): KubernetesApiError {
  const status = statusOf(text);
  const reason = status.reason || HTTP_REASONS[code] || 'Unknown';
  const message = status.message || text.trim() || `HTTP ${code} ${reason}`;
  return new KubernetesApiError(code, reason, message.slice(0, 1000), { cause: { statusCode: code, body: text } });
}

/**
 * The guard's resourceVersion goes into the patch itself: the API server then applies the patch only
 * to that version and answers 409 Conflict otherwise (optimistic concurrency).
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#concurrency-control-and-consistency
 */
export function guardedPatch<T extends object>(patch: T, guard: { resourceVersion: string }): T {
  const metadata = (patch as { metadata?: object | null }).metadata ?? {};
  return { ...patch, metadata: { ...metadata, resourceVersion: guard.resourceVersion } };
}
