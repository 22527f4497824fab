import {
  ApiException,
  CoreV1Api,
  type CoreV1Event,
  createConfiguration,
  type KubeConfig,
  PatchStrategy,
  type RequestContext,
  type SecurityAuthentication,
  ServerConfiguration,
  setHeaderMiddleware,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { type Clock, systemClock } from '../clock.ts';
import { HTTP_REASONS, KubernetesApiError, statusOf } from './errors.ts';
import { definedOnly, EVENT_COMPONENT, EventRecorder } from './event-recorder.ts';
import type { KubernetesPort, WriteGuard } from './port.ts';
import type { EventRecord, MergePatch, Node } from './types.ts';

/**
 * The KubernetesPort over @kubernetes/client-node 2.x. This file (and `lambda-access.ts`, which
 * builds the KubeConfig) are the only ones that import client-node; everything returned from here is
 * plain JSON in the shape of `types.ts`, and every API error is a `KubernetesApiError`.
 */

/** Event names and aggregation live in event-recorder.ts, shared with the Lambdas' REST client. */
export { EVENT_COMPONENT, EVENT_WRITE_ATTEMPTS, eventName, KNOWN_EVENTS_LIMIT } from './event-recorder.ts';

/** Page size for lists (https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks). */
export const LIST_PAGE_SIZE = 500;

export interface ClientNodeKubernetesOptions {
  /** Time source for Event timestamps. */
  clock?: Clock;
  /** Sent as User-Agent on every request, so API server audit logs name the controller. */
  userAgent?: string;
}

/**
 * The client-node configuration every adapter builds its API classes from.
 * Not `kubeConfig.makeApiClient(...)`: that is the same configuration but with the KubeConfig itself
 * as the auth method, which builds a new undici Agent (a new TCP+TLS connection) on every request
 * whenever a CA, client certificate or skipTLSVerify is set. See ReusedDispatcherAuth.
 */
export function apiConfiguration(kubeConfig: KubeConfig, userAgent = EVENT_COMPONENT) {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('building the Kubernetes client: the kubeconfig has no current cluster');
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server.replace(/\/+$/, ''), {}),
    authMethods: { default: new ReusedDispatcherAuth(kubeConfig) },
    // Keep a single static middleware: client-node 2.x reverses the static middleware array in place
    // on every call that passes no per-call options, so the order of two or more would flip-flop.
    middleware: [setHeaderMiddleware('User-Agent', userAgent)],
  });
}

export class ClientNodeKubernetes implements KubernetesPort {
  private readonly core: CoreV1Api;
  private readonly clock: Clock;
  private events?: EventRecorder;

  constructor(kubeConfig: KubeConfig, options: ClientNodeKubernetesOptions = {}) {
    this.core = new CoreV1Api(apiConfiguration(kubeConfig, options.userAgent));
    this.clock = options.clock ?? systemClock;
  }

  async getNode(name: string): Promise<Node | undefined> {
    try {
      return toNode(await this.core.readNode({ name }));
    } catch (err) {
      const translated = translateError(err);
      if (translated instanceof KubernetesApiError && translated.statusCode === 404) return undefined;
      throw translated;
    }
  }

  async listNodes(): Promise<Node[]> {
    // A continue token expires (410 Gone) when the list takes longer than etcd keeps the revision;
    // the documented recovery is to start the list again, which we do once.
    // https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
    try {
      return await this.listAllNodes();
    } catch (err) {
      if (err instanceof KubernetesApiError && err.statusCode === 410) return this.listAllNodes();
      throw err;
    }
  }

  async patchNode(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node> {
    return this.call(async () =>
      toNode(await this.core.patchNode({ name, body: guardedPatch(patch, guard) }, MERGE_PATCH)),
    );
  }

  async patchNodeStatus(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node> {
    return this.call(async () =>
      toNode(await this.core.patchNodeStatus({ name, body: guardedPatch(patch, guard) }, MERGE_PATCH)),
    );
  }

  async deleteNode(name: string, preconditions: { uid?: string; resourceVersion?: string }): Promise<void> {
    // Preconditions make the API server answer 409 instead of deleting a different incarnation of the
    // Node (same name, new uid) or one changed since it was read.
    // https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/
    const body = {
      preconditions: definedOnly({ uid: preconditions.uid, resourceVersion: preconditions.resourceVersion }),
    };
    await this.call(() => this.core.deleteNode({ name, body }));
  }

  /** An Event, aggregated with identical ones (`EventRecorder` in event-recorder.ts explains how). */
  recordEvent(event: EventRecord): Promise<void> {
    // Built on first use, so the Event requests belong to recordEvent alone (stacks/iam-usage.test.ts derives each
    // function's RBAC from the methods it calls).
    this.events ??= new EventRecorder(
      {
        create: (namespace, body) =>
          this.call(() => this.core.createNamespacedEvent({ namespace, body: body as CoreV1Event })),
        read: (namespace, name) => this.call(() => this.core.readNamespacedEvent({ namespace, name })),
        patch: (namespace, name, body) =>
          this.call(() => this.core.patchNamespacedEvent({ namespace, name, body }, MERGE_PATCH)),
      },
      this.clock,
    );
    return this.events.record(event);
  }

  private listAllNodes(): Promise<Node[]> {
    return listAllPages(
      (token) => this.core.listNode({ limit: LIST_PAGE_SIZE, _continue: token }),
      (item) => toNode(item),
    );
  }

  private call<T>(request: () => Promise<T>): Promise<T> {
    return translated(request);
  }
}

/**
 * client-node's generated PATCH methods default the Content-Type to `application/json-patch+json`
 * (the first type in the OpenAPI list), which would make the API server read our object as a JSON
 * Patch. The per-call option swaps the header for a JSON merge patch (RFC 7386); the body is
 * JSON-serialized either way.
 * https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
 */
export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * The guard's resourceVersion goes into the patch itself: the API server then applies the patch only
 * to that version and answers 409 Conflict otherwise (optimistic concurrency).
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#concurrency-control-and-consistency
 */
export function guardedPatch<T extends object>(patch: T, guard: WriteGuard): T {
  const metadata = (patch as { metadata?: object | null }).metadata ?? {};
  return { ...patch, metadata: { ...metadata, resourceVersion: guard.resourceVersion } };
}

/**
 * Authenticates each request through the KubeConfig (bearer token, exec plugin, client certificate,
 * CA), but sends every request over the first undici dispatcher it built. KubeConfig creates a fresh
 * Agent per request, so without this a warm Lambda would redo the TCP and TLS handshakes on every
 * call. The TLS settings of one KubeConfig do not change, so one dispatcher serves them all.
 */
export class ReusedDispatcherAuth implements SecurityAuthentication {
  private dispatcher: ReturnType<RequestContext['getDispatcher']>;

  constructor(private readonly kubeConfig: KubeConfig) {}

  getName(): string {
    return 'kubeconfig authentication, one connection pool';
  }

  async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.kubeConfig.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (fresh === undefined || fresh === this.dispatcher) return;
    if (this.dispatcher === undefined) {
      this.dispatcher = fresh;
      return;
    }
    context.setDispatcher(this.dispatcher);
    // The spare Agent never opened a connection; closing it just releases it.
    void fresh.close().catch(() => undefined);
  }
}

/**
 * client-node throws `ApiException` with the HTTP code and the raw response text as `body` (the
 * API server's `Status` object as JSON; `undefined` for 401). We keep the Status `reason` and
 * `message` (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/).
 * Anything else (connection refused, TLS failure, a timeout) is passed through unchanged.
 */
/** A client-node request, its failure translated (`translateError`). */
export async function translated<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    throw translateError(err);
  }
}

/**
 * Every item of a list the API server pages with limit/continue, as plain JSON. client-node names the
 * field `_continue` (`continue` is a reserved word in its generator).
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
 */
export async function listAllPages<T>(
  fetchPage: (token: string | undefined) => Promise<{ items: object[]; metadata?: { _continue?: string } }>,
  toItem: (item: object) => T = (item) => toPlainJson(item) as T,
): Promise<T[]> {
  const out: T[] = [];
  let token: string | undefined;
  do {
    const page = await translated(() => fetchPage(token));
    for (const item of page.items) out.push(toItem(item));
    token = page.metadata?._continue || undefined;
  } while (token);
  return out;
}

/** A list whose continue token expired (410 Gone) is started again, once. */
/**
 * The Pods bound to a Node, of every namespace: filtered by the API server (spec.nodeName is a field selector every
 * Pod list supports), paged, and listed again once when a continue token expires (410).
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
 */
export function listPodsBoundTo<T>(core: CoreV1Api, nodeName: string): Promise<T[]> {
  const fieldSelector = `spec.nodeName=${nodeName}`;
  return relistOnExpired(() =>
    listAllPages<T>((token) =>
      core.listPodForAllNamespaces({ fieldSelector, limit: LIST_PAGE_SIZE, _continue: token }),
    ),
  );
}

export async function relistOnExpired<T>(list: () => Promise<T>): Promise<T> {
  try {
    return await list();
  } catch (err) {
    if (err instanceof KubernetesApiError && err.statusCode === 410) return list();
    throw err;
  }
}

export function translateError(err: unknown): unknown {
  if (!(err instanceof ApiException)) return err;
  const code = typeof err.code === 'number' ? err.code : 0;
  const status = statusOf(err.body);
  const reason = status.reason || HTTP_REASONS[code] || 'Unknown';
  const message = status.message || (typeof err.body === 'string' && err.body.trim()) || `HTTP ${code} ${reason}`;
  return new KubernetesApiError(code, reason, message.slice(0, 1000), { cause: err });
}

/**
 * client-node deserializes responses into model classes with `Date` objects for timestamps (and
 * drops fields its models do not know). The port hands out plain API JSON, so timestamps go back to
 * the API's RFC 3339 form: metav1.Time has whole seconds, so `.000` is dropped to give back the exact
 * string the server sent.
 */
function toNode(value: unknown): Node {
  return toPlainJson(value) as Node;
}

export function toPlainJson(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString().replace(/\.000Z$/, 'Z');
  if (Array.isArray(value)) return value.map(toPlainJson);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) out[key] = toPlainJson(item);
    }
    return out;
  }
  return value;
}
