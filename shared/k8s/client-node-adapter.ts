import { createHash } from 'node:crypto';
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
import { isConflict, isNotFound, KubernetesApiError } from './errors.ts';
import type { KubernetesPort, WriteGuard } from './port.ts';
import type { EventRecord, MergePatch, Node } from './types.ts';

/**
 * The KubernetesPort over @kubernetes/client-node 2.x. This file (and `lambda-access.ts`, which
 * builds the KubeConfig) are the only ones that import client-node; everything returned from here is
 * plain JSON in the shape of `types.ts`, and every API error is a `KubernetesApiError`.
 */

/** The component name on Events (`source.component`, `reportingComponent`), as `kubectl describe` shows it. */
export const EVENT_COMPONENT = 'serverless-ccm';

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
  /** What this container last wrote to each Event it recorded, by `namespace/name`; see recordEvent. */
  private readonly knownEvents = new Map<string, KnownEvent>();

  constructor(kubeConfig: KubeConfig, options: ClientNodeKubernetesOptions = {}) {
    this.clock = options.clock ?? systemClock;
    const configuration = apiConfiguration(kubeConfig, options.userAgent);
    this.core = new CoreV1Api(configuration);
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

  /**
   * Records an Event, aggregating identical ones the way client-go's recorder does: an Event with the
   * same object, type, reason, message and component as an existing one is not created again; the
   * existing one gets `count + 1` and a new `lastTimestamp` (`kubectl describe` shows "(x5 over 10m)").
   *
   * client-go's EventCorrelator finds the existing Event in an in-process cache (with a 10-minute
   * aggregation window and a spam filter). A Lambda container lives for an unknown number of
   * invocations and many run side by side, so that cache would miss most repeats. Here the Event name
   * is derived from its content instead (`eventName`), so every container finds the same Event: create
   * it, and on 409 AlreadyExists read it and increment its count with a merge patch guarded by its
   * resourceVersion. `knownEvents` (per container, bounded) only saves the failing create and the read
   * when this container wrote the Event last.
   *
   * Errors are thrown as before (the callers log them and go on: an Event is best effort), except that
   * losing the race to increment the count `EVENT_WRITE_ATTEMPTS` times in a row is given up silently:
   * the Event is there, its count is one short.
   */
  async recordEvent(event: EventRecord): Promise<void> {
    const { involvedObject } = event;
    // An Event lives in its object's namespace; Events about cluster-scoped objects (Nodes) go to
    // `default`, as client-go's recorder does.
    const namespace = involvedObject.namespace || 'default';
    const name = eventName(event);
    const key = `${namespace}/${name}`;
    let known = this.knownEvents.get(key);
    for (let attempt = 1; attempt <= EVENT_WRITE_ATTEMPTS; attempt++) {
      const now = new Date(this.clock.now());
      if (!known) {
        try {
          const created = await this.call(() =>
            this.core.createNamespacedEvent({ namespace, body: newEvent(event, namespace, name, now) }),
          );
          this.rememberEvent(key, created);
          return;
        } catch (err) {
          if (!isConflict(err)) throw err; // 409 AlreadyExists: an identical Event is there
        }
        known = await this.readEvent(namespace, name);
        if (!known) continue; // it expired (--event-ttl) since the create: create it again
      }
      const body = guardedPatch({ count: known.count + 1, lastTimestamp: now.toISOString() }, known);
      try {
        const patched = await this.call(() => this.core.patchNamespacedEvent({ namespace, name, body }, MERGE_PATCH));
        this.rememberEvent(key, patched);
        return;
      } catch (err) {
        this.knownEvents.delete(key);
        if (!isNotFound(err) && !isConflict(err)) throw err;
        // 404: it expired, create it again. 409: someone counted it meanwhile, read the new count.
        known = isConflict(err) && attempt < EVENT_WRITE_ATTEMPTS ? await this.readEvent(namespace, name) : undefined;
      }
    }
  }

  private async readEvent(namespace: string, name: string): Promise<KnownEvent | undefined> {
    try {
      return knownEvent(await this.call(() => this.core.readNamespacedEvent({ namespace, name })));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private rememberEvent(key: string, event: CoreV1Event): void {
    const known = knownEvent(event);
    this.knownEvents.delete(key); // re-inserted last: Map order is least recently written first
    if (!known) return;
    this.knownEvents.set(key, known);
    if (this.knownEvents.size > KNOWN_EVENTS_LIMIT) {
      this.knownEvents.delete(this.knownEvents.keys().next().value!);
    }
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
 * Rounds of recordEvent (a create, or a read and a patch) before it gives up on an Event whose count
 * others keep incrementing first: the first try and three retries.
 */
export const EVENT_WRITE_ATTEMPTS = 4;

/** Events whose count and resourceVersion a container keeps, least recently written dropped first. */
export const KNOWN_EVENTS_LIMIT = 1000;

/** Longest object name (a DNS subdomain, https://kubernetes.io/docs/concepts/overview/working-with-objects/names/). */
const MAX_NAME_LENGTH = 253;

interface KnownEvent {
  count: number;
  resourceVersion: string;
}

function knownEvent(event: CoreV1Event): KnownEvent | undefined {
  const resourceVersion = event.metadata?.resourceVersion;
  return resourceVersion ? { count: event.count ?? 1, resourceVersion } : undefined;
}

/**
 * `<object name>.<16 hex digits>`, like client-go's recorder, but the digits are the start of a
 * sha256 over what makes two Events identical (client-go uses the time, and finds repeats in its
 * cache): every Lambda container names the same Event the same way. The object name is cut so the
 * whole stays a valid name of at most 253 characters (no `-.` or `..` where it was cut).
 */
export function eventName(event: EventRecord): string {
  const { involvedObject: ref } = event;
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        ref.kind,
        ref.namespace ?? '',
        ref.name,
        ref.uid ?? '',
        event.type,
        event.reason,
        event.message,
        EVENT_COMPONENT,
      ]),
    )
    .digest('hex')
    .slice(0, 16);
  const prefix = ref.name.slice(0, MAX_NAME_LENGTH - digest.length - 1).replace(/[-.]+$/, '');
  return `${prefix}.${digest}`;
}

function newEvent(event: EventRecord, namespace: string, name: string, now: Date): CoreV1Event {
  const { involvedObject } = event;
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace },
    involvedObject: definedOnly({
      apiVersion: involvedObject.apiVersion,
      kind: involvedObject.kind,
      name: involvedObject.name,
      namespace: involvedObject.namespace,
      uid: involvedObject.uid,
      resourceVersion: involvedObject.resourceVersion,
    }),
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: EVENT_COMPONENT },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    reportingComponent: EVENT_COMPONENT,
  };
}

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

export const HTTP_REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

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
  const status = parseStatus(err.body);
  const reason = status.reason || HTTP_REASONS[code] || 'Unknown';
  const message = status.message || (typeof err.body === 'string' && err.body.trim()) || `HTTP ${code} ${reason}`;
  return new KubernetesApiError(code, reason, message.slice(0, 1000), { cause: err });
}

function parseStatus(body: unknown): { reason?: string; message?: string } {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return {};
    }
  }
  if (typeof value !== 'object' || value === null) return {};
  const { reason, message } = value as Record<string, unknown>;
  return {
    reason: typeof reason === 'string' ? reason : undefined,
    message: typeof message === 'string' ? message : undefined,
  };
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

function definedOnly<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
