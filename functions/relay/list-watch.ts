import { isNotFound, KubernetesApiError } from '../../shared/k8s/errors.ts';
import { KIND_INFO, type KubeObject, type WatchedKind } from './kinds.ts';
import { isGone, type ListWatchSource, type WatchHandle, WatchInactivityError } from './kube-source.ts';

/**
 * List + watch of one kind, kept alive for as long as the relay leads, in the manner of client-go's
 * reflector (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes):
 *
 * - a paged list (`limit`/`continue`), then a watch from the list's resourceVersion;
 * - bookmarks move the resourceVersion on even when nothing of this kind changes, so a reconnect
 *   starts where the last watch ended instead of replaying history or falling out of it;
 * - the server ends each watch after `timeoutSeconds` (random between the minimum and twice it, so
 *   kinds do not reconnect in step); the next one starts from the last resourceVersion;
 * - `410 Gone` (the revision is compacted away) -> list again, comparing with what was known, so a
 *   change or deletion made meanwhile is found;
 * - a watch silent for longer than the inactivity limit is abandoned and started again;
 * - errors -> reconnect after capped exponential backoff with jitter;
 * - an optional periodic relist (jittered) catches anything a watch could ever have missed.
 */

/** What happened to a list or a watch: the relay's metrics and logs, and tests, read these. */
export const WatchHealth = {
  ListStarted: 'list-started',
  ListFinished: 'list-finished',
  ListFailed: 'list-failed',
  WatchStarted: 'watch-started',
  WatchEnded: 'watch-ended',
} as const;

/** Why a list started (`absent`: an optional kind the API did not serve, listed again). */
export type ListReason = 'initial' | 'expired' | 'periodic' | 'absent';

/** Why a watch ended: the server's timeout, 410 Gone, inactivity, an error, or a periodic relist. */
export type WatchEndReason = 'closed' | 'expired' | 'silent' | 'error' | 'relist';

export type WatchHealthEvent =
  | { type: typeof WatchHealth.ListStarted; kind: WatchedKind; reason: ListReason }
  | {
      type: typeof WatchHealth.ListFinished;
      kind: WatchedKind;
      reason: ListReason;
      objects: number;
      pages: number;
      durationMs: number;
      resourceVersion: string;
    }
  | { type: typeof WatchHealth.ListFailed; kind: WatchedKind; reason: ListReason; error: unknown; retryInMs: number }
  | { type: typeof WatchHealth.WatchStarted; kind: WatchedKind; resourceVersion: string; timeoutSeconds: number }
  | {
      type: typeof WatchHealth.WatchEnded;
      kind: WatchedKind;
      reason: WatchEndReason;
      events: number;
      error?: unknown;
      retryInMs: number;
    };

export interface ListWatchHandler {
  /** A full list begins; objects it does not include are gone when it finishes. */
  listStarted(kind: WatchedKind): void;
  listed(kind: WatchedKind, object: KubeObject): void;
  listFinished(kind: WatchedKind, resourceVersion: string): void;
  event(kind: WatchedKind, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject): void;
  health(event: WatchHealthEvent): void;
}

export interface ListWatchOptions {
  /** Objects per list page (client-go's default is 500). */
  pageSize: number;
  /** Minimum server-side watch timeout; each watch asks for a random value in [min, 2 x min). */
  watchTimeoutSeconds: number;
  /** A watch that receives nothing (not even a bookmark) for this long is restarted. */
  inactivityMs: number;
  /** Relist this often (x 0.8 to 1.2, random); 0 never. */
  relistIntervalMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** An optional kind (KindInfo.optional) the API does not serve is listed again after this long. */
  absentRelistMs?: number;
}

export const DEFAULT_LIST_WATCH_OPTIONS: ListWatchOptions = {
  pageSize: 500,
  // client-go's reflector: minWatchTimeout 5 minutes.
  watchTimeoutSeconds: 300,
  // The API server sends a bookmark about once a minute to watchers that ask for them; three missed is silence.
  inactivityMs: 180_000,
  relistIntervalMs: 30 * 60_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 30_000,
  absentRelistMs: 5 * 60_000,
};

/** An optional kind's list answered 404 (no CustomResourceDefinition): taken as empty, listed again later. */
export class KindNotServedError extends Error {
  constructor(kind: WatchedKind, retryInMs: number, options?: ErrorOptions) {
    super(
      `${kind} is not served by the API server (its CustomResourceDefinition is not installed?): taken as empty, listed again in ${Math.round(retryInMs / 1000)} s`,
      options,
    );
    this.name = 'KindNotServedError';
  }
}

/** A list whose continue token expires this many times in a row is retried after a backoff instead. */
const MAX_LIST_RESTARTS = 3;
/** A watch the server ends this fast without a single event counts as a failure (no reconnect spin). */
const QUICK_CLOSE_MS = 1_000;

interface WatchEnd {
  reason: WatchEndReason | 'stopped';
  events: number;
  error?: unknown;
}

export class ListWatcher {
  private stopped = false;
  private loop?: Promise<void>;
  private handle?: WatchHandle;
  /** Ends the current sleep or watch early (stop, periodic relist). */
  private wake?: () => void;
  private relistDue = false;
  private relistTimer?: NodeJS.Timeout;
  private lastResourceVersion = '';
  private listedOnce = false;

  constructor(
    readonly kind: WatchedKind,
    private readonly source: ListWatchSource,
    private readonly handler: ListWatchHandler,
    private readonly options: ListWatchOptions = DEFAULT_LIST_WATCH_OPTIONS,
    private readonly random: () => number = Math.random,
  ) {}

  /** The last revision seen (list, event or bookmark). */
  get resourceVersion(): string {
    return this.lastResourceVersion;
  }

  /** Listed at least once since start: every object of the kind has been seen. */
  get synced(): boolean {
    return this.listedOnce;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.relistTimer);
    this.handle?.stop();
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let needList = true;
    let reason: ListReason = 'initial';
    let failures = 0;
    while (!this.stopped) {
      if (this.relistDue) {
        this.relistDue = false;
        needList = true;
        reason = 'periodic';
      }
      if (needList) {
        try {
          await this.list(reason);
          needList = false;
          failures = 0;
          this.scheduleRelist();
        } catch (error) {
          if (this.stopped) break;
          if (this.notServed(error)) {
            reason = 'absent';
            await this.sleep(this.absent(error));
            continue;
          }
          failures++;
          const retryInMs = this.backoff(failures);
          this.handler.health({ type: WatchHealth.ListFailed, kind: this.kind, reason, error, retryInMs });
          await this.sleep(retryInMs);
          continue;
        }
      }

      const started = Date.now();
      const end = await this.watchOnce();
      if (end.reason === 'stopped' || this.stopped) break;
      let retryInMs = 0;
      switch (end.reason) {
        case 'closed':
          if (end.events === 0 && Date.now() - started < QUICK_CLOSE_MS) retryInMs = this.backoff(++failures);
          else failures = 0;
          break;
        case 'expired':
          needList = true;
          reason = 'expired';
          failures = 0;
          break;
        case 'relist':
          this.relistDue = true;
          break;
        case 'silent':
          // The watch sat idle for the whole inactivity limit already: reconnecting now cannot spin.
          failures = 0;
          break;
        case 'error':
          // An optional kind that stopped being served (its CustomResourceDefinition deleted): list it again.
          if (this.notServed(end.error)) {
            needList = true;
            reason = 'absent';
            break;
          }
          retryInMs = this.backoff(++failures);
          break;
      }
      this.handler.health({
        type: WatchHealth.WatchEnded,
        kind: this.kind,
        reason: end.reason,
        events: end.events,
        error: end.error,
        retryInMs,
      });
      if (retryInMs > 0) await this.sleep(retryInMs);
    }
  }

  private async list(reason: ListReason): Promise<void> {
    const started = Date.now();
    this.handler.health({ type: WatchHealth.ListStarted, kind: this.kind, reason });
    let restarts = 0;
    for (;;) {
      this.handler.listStarted(this.kind);
      let token: string | undefined;
      let resourceVersion = '';
      let objects = 0;
      let pages = 0;
      try {
        do {
          if (this.stopped) throw new Error('stopped');
          const page = await this.source.list(this.kind, { limit: this.options.pageSize, continueToken: token });
          if (this.stopped) throw new Error('stopped');
          for (const object of page.items) this.handler.listed(this.kind, object);
          objects += page.items.length;
          pages++;
          token = page.continueToken;
          resourceVersion = page.resourceVersion;
        } while (token);
      } catch (error) {
        // A continue token names a snapshot that etcd compacts after a few minutes; the documented
        // remedy is a fresh list. What the partial list saw stays; the fresh one decides what is gone.
        // https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
        if (token !== undefined && isGone(error) && ++restarts <= MAX_LIST_RESTARTS) continue;
        throw error;
      }
      this.handler.listFinished(this.kind, resourceVersion);
      this.lastResourceVersion = resourceVersion;
      this.listedOnce = true;
      this.handler.health({
        type: WatchHealth.ListFinished,
        kind: this.kind,
        reason,
        objects,
        pages,
        durationMs: Date.now() - started,
        resourceVersion,
      });
      return;
    }
  }

  private watchOnce(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve) => {
      let settled = false;
      let events = 0;
      const finish = (end: WatchEnd) => {
        if (settled) return;
        settled = true;
        this.wake = undefined;
        this.handle?.stop();
        this.handle = undefined;
        resolve({ ...end, events });
      };
      this.wake = () => finish({ reason: this.relistDue ? 'relist' : 'stopped', events });
      const timeoutSeconds = Math.floor(this.options.watchTimeoutSeconds * (1 + this.random()));
      const resourceVersion = this.lastResourceVersion;
      this.source
        .watch(
          this.kind,
          { resourceVersion, timeoutSeconds, inactivityMs: this.options.inactivityMs },
          (event) => {
            if (settled) return;
            events++;
            const revision = event.object?.metadata?.resourceVersion;
            switch (event.type) {
              case 'ADDED':
              case 'MODIFIED':
              case 'DELETED':
                this.handler.event(this.kind, event.type, event.object);
                if (revision) this.lastResourceVersion = revision;
                return;
              case 'BOOKMARK':
                if (revision) this.lastResourceVersion = revision;
                return;
              case 'ERROR': {
                // A Status object: 410 Expired/Gone when the revision asked for is compacted away.
                const { code, reason, message } = event.object;
                const error = new KubernetesApiError(
                  typeof code === 'number' ? code : 500,
                  reason ?? 'Unknown',
                  message ?? `watch error event for ${this.kind}`,
                );
                finish({ reason: isGone(error) ? 'expired' : 'error', error, events });
                return;
              }
              default:
                return;
            }
          },
          (error) => {
            if (error === undefined) finish({ reason: 'closed', events });
            else if (error instanceof WatchInactivityError) finish({ reason: 'silent', error, events });
            else if (isGone(error)) finish({ reason: 'expired', error, events });
            else finish({ reason: 'error', error, events });
          },
        )
        .then(
          (handle) => {
            if (settled) {
              handle.stop();
              return;
            }
            this.handle = handle;
            this.handler.health({ type: WatchHealth.WatchStarted, kind: this.kind, resourceVersion, timeoutSeconds });
          },
          (error: unknown) => finish({ reason: 'error', error, events }),
        );
    });
  }

  /** A 404 for an optional kind (KindInfo.optional): the API does not serve it. */
  private notServed(error: unknown): boolean {
    return Boolean(KIND_INFO[this.kind]?.optional) && isNotFound(error);
  }

  /**
   * The list of an optional kind found it not served: it ends as an empty list (whatever was known of the kind is
   * gone) and counts as synced (no alert on `relay_watch_synced`), and says why; returns when to list again.
   */
  private absent(error: unknown): number {
    const retryInMs = this.options.absentRelistMs ?? DEFAULT_LIST_WATCH_OPTIONS.absentRelistMs!;
    this.handler.listFinished(this.kind, '');
    this.listedOnce = true;
    const finished = { kind: this.kind, reason: 'absent' as const, objects: 0, pages: 0, durationMs: 0 };
    this.handler.health({ type: WatchHealth.ListFinished, ...finished, resourceVersion: '' });
    this.handler.health({
      type: WatchHealth.ListFailed,
      kind: this.kind,
      reason: 'absent',
      error: new KindNotServedError(this.kind, retryInMs, { cause: error }),
      retryInMs,
    });
    return retryInMs;
  }

  private scheduleRelist(): void {
    clearTimeout(this.relistTimer);
    if (this.options.relistIntervalMs <= 0 || this.stopped) return;
    const delay = this.options.relistIntervalMs * (0.8 + 0.4 * this.random());
    this.relistTimer = setTimeout(() => {
      this.relistDue = true;
      this.wake?.();
    }, delay);
    this.relistTimer.unref?.();
  }

  /** Capped exponential backoff with equal jitter: half the step fixed, half random. */
  private backoff(failures: number): number {
    const step = Math.min(this.options.backoffMaxMs, this.options.backoffBaseMs * 2 ** (failures - 1));
    return Math.round(step / 2 + (this.random() * step) / 2);
  }

  private sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const timer = setTimeout(done, milliseconds);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = undefined;
        done();
      };
    });
  }
}
