import {
  ApiException,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
  Watch,
} from '@kubernetes/client-node';
import { ReusedDispatcherAuth, translateError } from '../../shared/k8s/client-node-adapter.ts';
import { HTTP_REASONS, KubernetesApiError } from '../../shared/k8s/errors.ts';
import { KIND_INFO, type KubeObject, type WatchedKind } from './kinds.ts';
import {
  type ListPage,
  type ListWatchSource,
  RELAY_USER_AGENT,
  type WatchEvent,
  type WatchEventType,
  type WatchHandle,
  WatchInactivityError,
  type WatchOptions,
} from './kube-source.ts';

export interface ClientNodeListWatchOptions {
  userAgent?: string;
  /** A list page that takes longer than this is abandoned (and the list retried). */
  listPageTimeoutMs?: number;
}

/**
 * The relay's list and watch over @kubernetes/client-node 2.x, from a kubeconfig (local runs, tools). A
 * relay in a Pod uses rest-source.ts instead: the same protocol without loading client-node (memory).
 *
 * Watches use client-node's `Watch`. Lists do not use the generated typed methods
 * (`CoreV1Api.listPodForAllNamespaces` and friends): those turn every object into model classes
 * (Dates, renamed fields, unknown fields dropped), which for a 100,000-Pod list costs seconds of CPU
 * and gigabytes of garbage only to hash a few fields, and makes a listed object look different from
 * the same object arriving on a watch (plain JSON). Instead each page is requested through client-node's
 * own request context, authentication (the KubeConfig: token file, exec plugin, client certificate)
 * and HTTP library, and the JSON is parsed as is. `ListWatch`/`makeInformer` are not used either:
 * they keep every object in memory, list in one request (no `limit`/`continue`), ask for no
 * bookmarks and no server-side timeout, and stop for good after an error other than 410.
 */
export class ClientNodeListWatch implements ListWatchSource {
  private readonly server: string;
  private readonly auth: ReusedDispatcherAuth;
  private readonly http = new IsomorphicFetchHttpLibrary();
  private readonly userAgent: string;
  private readonly listPageTimeoutMs: number;

  constructor(
    private readonly kubeConfig: KubeConfig,
    options: ClientNodeListWatchOptions = {},
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('building the Kubernetes client: the kubeconfig has no current cluster');
    this.server = cluster.server.replace(/\/+$/, '');
    // Pages of one list share one connection pool instead of a TLS handshake each.
    this.auth = new ReusedDispatcherAuth(kubeConfig);
    this.userAgent = options.userAgent ?? RELAY_USER_AGENT;
    this.listPageTimeoutMs = options.listPageTimeoutMs ?? 60_000;
  }

  async list(kind: WatchedKind, options: { limit: number; continueToken?: string }): Promise<ListPage> {
    const info = KIND_INFO[kind];
    const url = new URL(this.server + info.path);
    url.searchParams.set('limit', String(options.limit));
    if (options.continueToken) url.searchParams.set('continue', options.continueToken);
    if (info.fieldSelector) url.searchParams.set('fieldSelector', info.fieldSelector);
    const context = new RequestContext(url.toString(), HttpMethod.GET);
    context.setHeaderParam('Accept', 'application/json');
    context.setHeaderParam('User-Agent', this.userAgent);
    context.setSignal(AbortSignal.timeout(this.listPageTimeoutMs));
    await this.auth.applySecurityAuthentication(context);
    const response = await this.http.send(context).toPromise();
    const body = await response.body.text();
    if (response.httpStatusCode !== 200) {
      throw translateError(new ApiException(response.httpStatusCode, `listing ${kind}`, body, response.headers));
    }
    const list = JSON.parse(body) as {
      items?: KubeObject[] | null;
      metadata?: { resourceVersion?: string; continue?: string };
    };
    return {
      items: list.items ?? [],
      resourceVersion: list.metadata?.resourceVersion ?? '',
      continueToken: list.metadata?.continue || undefined,
    };
  }

  async watch(
    kind: WatchedKind,
    options: WatchOptions,
    onEvent: (event: WatchEvent) => void,
    onEnd: (error?: unknown) => void,
  ): Promise<WatchHandle> {
    const info = KIND_INFO[kind];
    const watch = new Watch(this.kubeConfig);
    // client-node 2.x aborts a watch that receives nothing for `requestTimeoutMs` (30 s, connecting
    // included) and reports a TimeoutError: the silent-watch detector we want, but with a limit
    // shorter than the API server's bookmark interval (about a minute), and private in the typings.
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = options.inactivityMs;
    let stopped = false;
    // `watch()` resolves once the response headers arrive; only then is there a controller to abort.
    // A connection attempt that hangs is ended by the inactivity limit above.
    const controller = await watch.watch(
      info.path,
      {
        resourceVersion: options.resourceVersion,
        timeoutSeconds: options.timeoutSeconds,
        // https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks
        allowWatchBookmarks: true,
        fieldSelector: info.fieldSelector,
      },
      (type: string, object: WatchEvent['object']) => {
        // client-node swallows whatever the callback throws; the relay's handler never throws.
        if (!stopped) onEvent({ type: type as WatchEventType, object });
      },
      (error: unknown) => {
        // Aborting our own watch ends it with an AbortError: that end is not news.
        if (stopped) return;
        stopped = true;
        onEnd(translateWatchEnd(kind, options, error));
      },
    );
    return {
      stop: () => {
        stopped = true;
        controller.abort();
      },
    };
  }
}

/** client-node ends a watch with null (server closed it), a TimeoutError, or an Error carrying `statusCode`. */
function translateWatchEnd(kind: WatchedKind, options: WatchOptions, error: unknown): unknown {
  if (error === null || error === undefined) return undefined;
  if ((error as { name?: string }).name === 'TimeoutError') return new WatchInactivityError(kind, options.inactivityMs);
  const statusCode = (error as { statusCode?: unknown }).statusCode;
  if (typeof statusCode === 'number') {
    const reason = HTTP_REASONS[statusCode] ?? 'Unknown';
    return new KubernetesApiError(statusCode, reason, `watching ${kind}: HTTP ${statusCode} ${reason}`, {
      cause: error,
    });
  }
  return error;
}
