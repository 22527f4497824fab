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
  type ListOptions,
  type ListPage,
  type ListWatchSource,
  type WatchEvent,
  type WatchEventType,
  type WatchHandle,
  WatchInactivityError,
  type WatchOptions,
} from './kube-source.ts';

export const RELAY_USER_AGENT = 'serverless-ccm-relay';

export interface ClientNodeListWatchOptions {
  userAgent?: string;
  /** A list page that takes longer than this is abandoned (and the list retried). */
  listPageTimeoutMs?: number;
}

/**
 * The relay's list and watch over @kubernetes/client-node 2.x.
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

  async list(kind: WatchedKind, options: ListOptions): Promise<ListPage> {
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
    if (response.httpStatusCode !== 200) {
      const body = await response.body.text();
      throw translateError(new ApiException(response.httpStatusCode, `listing ${kind}`, body, response.headers));
    }
    // client-node's fetch library also hands out the body as a stream (not in its typings).
    const stream = options.onItem && (response.body as { stream?: () => ReadableStream<Uint8Array> | null }).stream?.();
    let list: ListBody;
    if (stream && options.onItem) {
      // Each item parsed and handled as its bytes arrive: nothing of a page outlives its item (relay README, "Memory").
      const scanner = new ListBodyScanner(options.onItem);
      for await (const chunk of stream) scanner.push(chunk);
      list = scanner.finish();
    } else {
      list = JSON.parse(await response.body.text()) as ListBody;
    }
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

interface ListBody {
  items?: KubeObject[] | null;
  metadata?: { resourceVersion?: string; continue?: string };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const ITEMS_KEY = '"items":';

/**
 * A list response (`{"kind":"PodList","metadata":{...},"items":[{...},{...}]}`) split into its items as the bytes
 * arrive: each item is parsed alone and handed to `onItem`, so it is garbage before the next one is read, rather
 * than a page's text and every object of it living until the page is done. The rest (kind, metadata) is parsed at
 * the end, with `items` empty. Only JSON's structure is tracked: strings (and their escapes) and nesting.
 */
export class ListBodyScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Inside the top-level `items` array; `inItem`: inside one of its elements. */
  private inItems = false;
  private inItem = false;
  /** The bytes of an item that began in an earlier chunk. */
  private itemParts: Uint8Array[] = [];
  /** Everything outside the items array. */
  private readonly skeleton: Uint8Array[] = [];
  /** The last few bytes at the top level, whitespace left out: is the array that opens the `items`? */
  private recent = '';

  constructor(private readonly onItem: (object: KubeObject) => void) {}

  push(chunk: Uint8Array): void {
    let skeletonFrom = this.inItems ? -1 : 0;
    let itemFrom = this.inItem ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (this.depth === 1 && c > 0x20) this.recent = (this.recent + String.fromCharCode(c)).slice(-ITEMS_KEY.length);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
        continue;
      }
      if (c === QUOTE) {
        this.inString = true;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (this.inItems && this.depth === 2) {
          this.inItem = true;
          itemFrom = i;
        } else if (!this.inItems && this.depth === 1 && c === OPEN_BRACKET && this.recent === `${ITEMS_KEY}[`) {
          this.skeleton.push(chunk.slice(skeletonFrom, i + 1));
          skeletonFrom = -1;
          this.inItems = true;
        }
        this.depth++;
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        this.depth--;
        if (this.inItem && this.depth === 2) {
          this.inItem = false;
          this.item(chunk.subarray(itemFrom, i + 1));
          itemFrom = -1;
        } else if (this.inItems && this.depth === 1) {
          this.inItems = false;
          skeletonFrom = i;
        }
      }
    }
    if (skeletonFrom >= 0) this.skeleton.push(chunk.slice(skeletonFrom));
    if (this.inItem && itemFrom >= 0) this.itemParts.push(chunk.slice(itemFrom));
  }

  /** The list without its items; throws when the body ended early. */
  finish(): ListBody {
    if (this.depth !== 0 || this.inString) throw new Error('list response ended in the middle of the JSON');
    const list = JSON.parse(Buffer.concat(this.skeleton).toString('utf8')) as ListBody;
    return { metadata: list.metadata, items: [] };
  }

  private item(last: Uint8Array): void {
    let bytes = last;
    if (this.itemParts.length > 0) {
      this.itemParts.push(last);
      bytes = Buffer.concat(this.itemParts);
      this.itemParts = [];
    }
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    this.onItem(JSON.parse(text) as KubeObject);
  }
}
