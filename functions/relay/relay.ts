import type { Clock } from '../../shared/clock.ts';
import { errorMessage } from '../../shared/errors.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { SqsPort } from '../../shared/queue/sqs-port.ts';
import { type ChangeOutcome, ChangeRouter } from './change-router.ts';
import { RECONCILERS, type Reconciler } from './controllers/index.ts';
import { DEFAULT_FORWARDER_OPTIONS, Forwarder, type ForwarderOptions } from './forwarder.ts';
import { kindsFor } from './forwarding.ts';
import { type KubeObject, WATCHED_KINDS, type WatchedKind } from './kinds.ts';
import type { ListWatchSource } from './kube-source.ts';
import { DEFAULT_ELECTION, LeaderElector, type LeasePort } from './lease.ts';
import {
  DEFAULT_LIST_WATCH_OPTIONS,
  ListWatcher,
  type ListWatchHandler,
  type ListWatchOptions,
  WatchHealth,
  type WatchHealthEvent,
} from './list-watch.ts';
import { RelayMetrics } from './metrics.ts';
import { type LeaderMigrationConfiguration, MigrationGate } from './migration-gate.ts';

/**
 * The relay: while this replica holds the Lease, list and watch the kinds the configured reconcilers
 * read, turn changes into keys (change-router.ts) and send them (forwarder.ts). A replica that does
 * not lead watches nothing; when it takes over it lists everything and sends every key again, which
 * is how nothing the previous leader had not yet sent is lost (SQS drops the repeats).
 */

export interface RelayOptions {
  /** This replica's name in the Lease (`holderIdentity`). */
  identity: string;
  /** Namespace and name of the Lease. */
  namespace: string;
  leaseName: string;
  /** Lease timings; false leads at once (a single replica, or a local run). */
  election: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number } | false;
  /** Queue URL per reconciler; reconcilers without one get no keys, and kinds only they read are not watched. */
  queues: Partial<Record<Reconciler, string>>;
  /** Kinds allowed to be watched (default all); a kind is watched only if a configured reconciler reads it. */
  kinds?: readonly WatchedKind[];
  listWatch?: ListWatchOptions;
  forwarder?: ForwarderOptions;
  /** Node changes within this window become one key per LoadBalancer Service. */
  nodeSetDebounceMs?: number;
  /** A request to SQS starts only while the lease has at least this long left. */
  sendBudgetMs?: number;
  migration?: { config: LeaderMigrationConfiguration; component: string; pollMs: number };
}

export interface RelayDeps {
  source: ListWatchSource;
  leases: LeasePort;
  sqs: SqsPort;
  clock: Clock;
  log: Log;
  metrics?: RelayMetrics;
  random?: () => number;
}

export interface RelayStatus {
  leader: boolean;
  /** Every watched kind listed since this replica started leading. */
  synced: boolean;
  /** For /readyz: able to take over (the Lease answers) and, when leading, synced. */
  ready: boolean;
  /** For /healthz: the election loop is turning. */
  live: boolean;
  /** Keys not yet accepted by SQS (a node-set change about to become Service keys counts as one). */
  pending: number;
  holder?: string;
}

export class Relay {
  readonly metrics: RelayMetrics;
  readonly kinds: readonly WatchedKind[];
  readonly reconcilers: readonly Reconciler[];
  private readonly forwarder: Forwarder;
  private readonly elector?: LeaderElector;
  private readonly gate?: MigrationGate;
  private readonly listWatch: ListWatchOptions;
  private router?: ChangeRouter;
  private watchers: ListWatcher[] = [];
  private stoppingWatchers: Promise<unknown> = Promise.resolve();
  /** Incremented on every start and stop of leading; callbacks of an older term are ignored. */
  private term = 0;
  private leading = false;
  private stopping = false;
  private started = false;
  private nodeSetTimer?: NodeJS.Timeout;

  constructor(
    private readonly options: RelayOptions,
    private readonly deps: RelayDeps,
  ) {
    this.metrics = deps.metrics ?? new RelayMetrics();
    this.listWatch = options.listWatch ?? DEFAULT_LIST_WATCH_OPTIONS;
    const queueUrls = new Map<Reconciler, string>();
    for (const reconciler of RECONCILERS) {
      const url = options.queues[reconciler];
      if (url) queueUrls.set(reconciler, url);
    }
    if (queueUrls.size === 0) throw new Error('relay: no reconciler queue configured');
    this.reconcilers = [...queueUrls.keys()];
    const allowed = new Set(options.kinds ?? WATCHED_KINDS);
    this.kinds = kindsFor(this.reconcilers).filter((kind) => allowed.has(kind));

    this.forwarder = new Forwarder(
      {
        sqs: deps.sqs,
        queueUrls,
        canSend: () => this.canSend(),
        metrics: this.metrics,
        log: deps.log,
        random: deps.random,
      },
      options.forwarder ?? DEFAULT_FORWARDER_OPTIONS,
    );
    if (options.migration) {
      this.gate = new MigrationGate(
        { ...options.migration, reconcilers: this.reconcilers },
        {
          leases: deps.leases,
          clock: deps.clock,
          log: deps.log,
          metrics: this.metrics,
          onOpened: (reconciler) => this.migrationLockFreed(reconciler),
        },
      );
    }
    if (options.election) {
      this.elector = new LeaderElector(
        { namespace: options.namespace, name: options.leaseName, identity: options.identity, ...options.election },
        {
          leases: deps.leases,
          clock: deps.clock,
          log: deps.log,
          random: deps.random,
          onStartedLeading: () => this.startLeading(),
          onStoppedLeading: () => this.stopLeading(),
        },
      );
    }
    this.metrics.leader.set({}, 0);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.deps.log.info('relay starting', {
      identity: this.options.identity,
      reconcilers: this.reconcilers,
      kinds: this.kinds,
      lease: this.elector ? `${this.options.namespace}/${this.options.leaseName}` : '(leader election off)',
    });
    this.gate?.start();
    if (this.elector) this.elector.start();
    else this.startLeading();
  }

  /**
   * Graceful stop (SIGTERM): stop watching, send what is waiting (while the lease is still renewed),
   * then give the lease up so the other replica takes over at once. Returns whether every key was sent.
   */
  async stop(flushTimeoutMs = 20_000): Promise<{ flushed: boolean; pending: number }> {
    this.stopping = true;
    this.gate?.stop();
    clearTimeout(this.nodeSetTimer);
    const watchers = this.watchers;
    this.watchers = [];
    await Promise.all([...watchers.map((w) => w.stop()), this.stoppingWatchers]);
    const flushed = this.leading ? await this.forwarder.flush(flushTimeoutMs) : true;
    const pending = this.forwarder.pending();
    this.forwarder.stop();
    if (this.elector) await this.elector.stop(true);
    else this.stopLeading();
    this.deps.log.info('relay stopped', { flushed, pending });
    return { flushed, pending };
  }

  status(): RelayStatus {
    const now = this.deps.clock.now();
    const synced = this.leading && this.watchers.length > 0 && this.watchers.every((w) => w.synced);
    const election = this.options.election;
    const reachable = !this.elector || !election || now - this.elector.lastContactAt < 2 * election.leaseDurationMs;
    const live =
      !this.elector || !election || !this.started || now - this.elector.lastAttemptAt < 3 * election.leaseDurationMs;
    return {
      leader: this.leading,
      synced,
      ready: this.started && !this.stopping && reachable && (!this.leading || synced),
      live,
      pending: this.forwarder.pending() + (this.nodeSetTimer ? 1 : 0),
      holder: this.elector ? this.elector.holder : this.options.identity,
    };
  }

  /**
   * Whether keys for `reconciler` may flow now: this replica leads and no other component holds the
   * controller's migration lock. The local runner (bin/real.ts) acts for a reconciler only then.
   */
  allows(reconciler: Reconciler): boolean {
    return this.leading && (this.gate?.allows(reconciler) ?? true);
  }

  /** The last resourceVersion seen per watched kind (benchmarks wait for a revision to arrive). */
  resourceVersions(): Partial<Record<WatchedKind, string>> {
    return Object.fromEntries(this.watchers.map((w) => [w.kind, w.resourceVersion]));
  }

  private canSend(): boolean {
    if (!this.leading) return false;
    if (!this.elector) return true;
    return this.elector.isLeader(this.options.sendBudgetMs ?? DEFAULT_ELECTION.retryPeriodMs);
  }

  private startLeading(): void {
    if (this.leading || this.stopping) return;
    this.leading = true;
    const term = ++this.term;
    this.metrics.leader.set({}, 1);
    this.metrics.leaderTransitions.inc();
    const router = new ChangeRouter({
      reconcilers: new Set(this.reconcilers),
      allows: (reconciler) => this.gate?.allows(reconciler) ?? true,
      emit: ({ reconciler, message }) => this.forwarder.enqueue(reconciler, message),
      nodeSetChanged: () => this.nodeSetChanged(term),
      now: () => this.deps.clock.now(),
      invalid: ({ kind, name, reason }) => {
        this.metrics.invalidObjects.inc({ kind });
        this.deps.log.warn('object not forwarded', { kind, name, reason });
      },
    });
    this.router = router;
    const handler = this.handler(term, router);
    this.watchers = this.kinds.map(
      (kind) => new ListWatcher(kind, this.deps.source, handler, this.listWatch, this.deps.random),
    );
    for (const watcher of this.watchers) watcher.start();
  }

  private stopLeading(): void {
    if (!this.leading) return;
    this.leading = false;
    this.term++;
    this.metrics.leader.set({}, 0);
    this.metrics.leaderTransitions.inc();
    const watchers = this.watchers;
    this.watchers = [];
    this.stoppingWatchers = Promise.all(watchers.map((w) => w.stop()));
    clearTimeout(this.nodeSetTimer);
    this.nodeSetTimer = undefined;
    // The next leader lists everything and sends every key: nothing waiting here is lost by dropping it.
    this.forwarder.clear();
    this.router?.clear();
    this.router = undefined;
    for (const kind of this.kinds) {
      this.metrics.synced.set({ kind }, 0);
      this.metrics.objects.set({ kind }, 0);
    }
  }

  /** Node changes in a short window become one key per LoadBalancer Service, with the newest Node revision. */
  private nodeSetChanged(term: number): void {
    if (this.nodeSetTimer) return;
    this.nodeSetTimer = setTimeout(() => {
      this.nodeSetTimer = undefined;
      // A round whose controller's migration lock another component holds stays in the router (takeNodeSetRound).
      if (term !== this.term || !this.router) return;
      for (const { reconciler, message } of this.router.takeNodeSetRound()) this.forwarder.enqueue(reconciler, message);
    }, this.options.nodeSetDebounceMs ?? 1_000);
  }

  private migrationLockFreed(reconciler: Reconciler): void {
    if (!this.leading || !this.router) return;
    const sent = this.router.resendAll(reconciler, {
      eventType: 'RESYNC',
      eventId: `leader-migration-${this.deps.clock.now()}`,
      source: 'relay',
    });
    this.deps.log.info('sent every key again after the migration lock was freed', { reconciler, keys: sent });
  }

  private handler(term: number, router: ChangeRouter): ListWatchHandler {
    const current = () => term === this.term;
    const count = (kind: WatchedKind, outcome: ChangeOutcome) => {
      this.metrics.changesSeen.inc({ kind });
      if (outcome === 'forwarded') this.metrics.changesForwarded.inc({ kind });
      else this.metrics.changesFiltered.inc({ kind, reason: outcome });
    };
    return {
      listStarted: (kind) => {
        if (current()) router.listStarted(kind);
      },
      listed: (kind, object: KubeObject) => {
        if (current()) count(kind, router.observe(kind, object));
      },
      listFinished: (kind, resourceVersion) => {
        if (!current()) return;
        for (const outcome of router.listFinished(kind, resourceVersion)) count(kind, outcome);
        this.metrics.objects.set({ kind }, router.size(kind));
      },
      event: (kind, type, object) => {
        if (!current()) return;
        try {
          count(kind, type === 'DELETED' ? router.remove(kind, object) : router.observe(kind, object));
        } catch (err) {
          // One malformed object must not end the watch; the resync reconciles it regardless.
          this.deps.log.error('could not route a watch event', { kind, type, error: errorMessage(err) });
        }
        if (type !== 'MODIFIED') this.metrics.objects.set({ kind }, router.size(kind));
      },
      health: (event) => {
        if (current()) this.health(event);
      },
    };
  }

  private health(event: WatchHealthEvent): void {
    const { log, metrics } = { log: this.deps.log, metrics: this.metrics };
    switch (event.type) {
      case WatchHealth.ListStarted:
        metrics.relists.inc({ kind: event.kind, reason: event.reason });
        log.info('listing', { kind: event.kind, reason: event.reason });
        return;
      case WatchHealth.ListFinished:
        metrics.synced.set({ kind: event.kind }, 1);
        log.info('listed', {
          kind: event.kind,
          reason: event.reason,
          objects: event.objects,
          pages: event.pages,
          durationMs: event.durationMs,
          resourceVersion: event.resourceVersion,
        });
        return;
      case WatchHealth.ListFailed:
        log.warn('list failed', {
          kind: event.kind,
          reason: event.reason,
          error: errorMessage(event.error),
          retryInMs: event.retryInMs,
        });
        return;
      case WatchHealth.WatchStarted:
        log.debug('watching', {
          kind: event.kind,
          resourceVersion: event.resourceVersion,
          timeoutSeconds: event.timeoutSeconds,
        });
        return;
      case WatchHealth.WatchEnded: {
        metrics.watchRestarts.inc({ kind: event.kind, reason: event.reason });
        const fields = {
          kind: event.kind,
          reason: event.reason,
          events: event.events,
          retryInMs: event.retryInMs,
          ...(event.error ? { error: errorMessage(event.error) } : {}),
        };
        if (event.reason === 'closed' || event.reason === 'relist') log.debug('watch ended', fields);
        else if (event.reason === 'error') log.warn('watch failed', fields);
        else log.info('watch ended', fields);
        return;
      }
    }
  }
}
