import type { ListWatchSource } from '../functions/relay/kube-source.ts';
import type { LeaderMigrationConfiguration } from '../functions/relay/leader-migration.ts';
import type { LeasePort } from '../functions/relay/lease.ts';
import { RelayMetrics } from '../functions/relay/metrics.ts';
import { Relay, type RelayOptions } from '../functions/relay/relay.ts';
import { ResyncError } from '../functions/resync/resync.ts';
import type { Clock } from '../shared/clock.ts';
import { type ControllerName, feeds } from '../shared/controllers.ts';
import { errorMessage } from '../shared/errors.ts';
import type { Log } from '../shared/observability/log.ts';
import { CONTROLLER_QUEUES, createEngine, type Engine, type EngineOptions, type EngineReconciler } from './engine.ts';

/**
 * Real mode, assembled: the engine's reconcilers fed the way the deployed control plane feeds the
 * Lambdas. The relay (functions/relay/relay.ts, the deployed relay's class) lists and watches the cluster
 * in this process and sends its keys to the engine's in-process queues, with the deployed relay's change
 * filtering, key routing, Lease and leader migration; functions/resync's round runs every period; EC2
 * events arrive through `ec2Events` when a queue is given. The process acts (resync, reconcile, EC2
 * events) only while its relay holds the Lease, so two local processes, or one and the deployed relay,
 * never both act; a reconcile already running when the Lease is lost still finishes (the relay stops
 * sending renewDeadline before the Lease can pass on, 5 s with client-go's timings).
 */

/**
 * Starts delivering raw EventBridge event bodies until `signal` aborts: bin/ec2-events-poller.ts over the
 * queue `npm run events:create` makes. `done` settles when it stopped (rejects when it cannot go on).
 */
export type Ec2EventsSource = (hook: { deliver: (body: string) => Promise<void>; signal: AbortSignal }) => {
  done: Promise<void>;
  stats(): { delivered: number; failed: number };
};

export interface RealModeOptions {
  engine: EngineOptions;
  relay: {
    /** holderIdentity in the Lease. */
    identity: string;
    lease: { namespace: string; name: string };
    /** Lease timings; false acts at once without a Lease (a dry run, which must write nothing). */
    election: RelayOptions['election'];
    migration?: { config: LeaderMigrationConfiguration; component: string; pollMs: number };
  } & Pick<RelayOptions, 'listWatch' | 'forwarder' | 'nodeSetDebounceMs' | 'sendBudgetMs'>;
  /**
   * Seconds between resync rounds, per controller (shared/controllers.ts resyncSeconds: as deployed, or
   * `--resync-seconds` for all); a controller without one is never resynced (the interruption controller).
   */
  resyncSeconds: Partial<Record<ControllerName, number>>;
  /** One resync round, then exit once the relay has sent its list and every queue is empty. */
  once: boolean;
  ec2Events?: Ec2EventsSource;
}

export interface RealModeDeps {
  /** The relay's list/watch (functions/relay/client-node-source.ts over the kubeconfig). */
  source: ListWatchSource;
  /** The relay's Leases (functions/relay/client-node-leases.ts). */
  leases: LeasePort;
}

/** The longest an idle loop sleeps: leadership and the resync are looked at this often. */
const IDLE_POLL_MS = 500;
/** How long a stopping relay may take to send what it holds. */
const STOP_FLUSH_MS = 5_000;

/** The relay's reconcilers by queue: those a LeaderMigrationConfiguration can give another component. */
const QUEUE_RECONCILER = new Map<string, EngineReconciler>(
  (Object.entries(CONTROLLER_QUEUES) as [ControllerName, string][])
    .filter(([r]) => feeds(r, 'relay'))
    .map(([r, q]) => [q, r as EngineReconciler]),
);

/**
 * EC2 events are taken off their queue only while this process acts: a standby that took them would keep
 * them from the process that acts. Without a source, one line at start says EC2 changes wait for the resync.
 */
function ec2EventsControl(source: Ec2EventsSource | undefined, deliver: (body: string) => Promise<void>, log: Log) {
  if (!source) {
    log.info('EC2 events: none configured (--ec2-events-queue-url); EC2 changes are seen at the next resync only');
    return { follow: async (_leading: boolean) => {}, describe: () => 'resync only (no --ec2-events-queue-url)' };
  }
  let running: { stop: AbortController; done: Promise<void>; stats: () => { delivered: number; failed: number } };
  let active = false;
  let failure: string | undefined;
  const totals = { delivered: 0, failed: 0 };
  return {
    /** Start polling when this process starts acting, stop when it stops. */
    async follow(leading: boolean): Promise<void> {
      if (failure !== undefined || leading === active) return;
      active = leading;
      if (leading) {
        const stop = new AbortController();
        const started = source({ deliver, signal: stop.signal });
        const done = started.done.catch((err: unknown) => {
          failure = errorMessage(err);
          log.error('EC2 events stopped; EC2 changes are seen at the next resync only', { error: failure });
        });
        running = { stop, done, stats: started.stats };
        return;
      }
      running.stop.abort();
      await running.done;
      totals.delivered += running.stats().delivered;
      totals.failed += running.stats().failed;
    },
    describe(): string {
      const now = active ? running.stats() : { delivered: 0, failed: 0 };
      const [delivered, failed] = [totals.delivered + now.delivered, totals.failed + now.failed];
      const how = failure ? `stopped (${failure})` : active ? 'polling' : 'not polling (standing by)';
      return `${how}: ${delivered} delivered${failed ? `, ${failed} failed` : ''}`;
    },
  };
}

export class RealMode {
  readonly engine: Engine;
  readonly relay: Relay;
  readonly relayMetrics = new RelayMetrics();
  readonly state = {
    rounds: 0,
    /** Whether this process acted when last looked at (kept after the relay stopped, for the summary). */
    leading: false,
    /** Who else holds the Lease, while standing by. */
    holder: undefined as string | undefined,
    /** `namespace/name`, or undefined when acting without one (a dry run). */
    lease: undefined as string | undefined,
    /** How EC2 events arrive, for the summary. */
    ec2Events: (): string => 'not started',
  };
  private readonly log: Log;
  private readonly clock: Clock;

  constructor(
    private readonly options: RealModeOptions,
    deps: RealModeDeps,
  ) {
    ({ log: this.log, clock: this.clock } = options.engine);
    this.engine = createEngine(options.engine);
    const { identity, lease, election, migration, ...tuning } = options.relay;
    this.state.lease = election ? `${lease.namespace}/${lease.name}` : undefined;
    this.relay = new Relay(
      {
        identity,
        namespace: lease.namespace,
        leaseName: lease.name,
        election,
        queues: this.engine.queueUrls,
        ...tuning,
        ...(migration ? { migration } : {}),
      },
      {
        source: deps.source,
        leases: deps.leases,
        sqs: this.engine.keys,
        clock: this.clock,
        log: this.log,
        metrics: this.relayMetrics,
      },
    );
  }

  /** Run until `signal` aborts (or, with `once`, until one full pass is done). */
  async run(signal: AbortSignal): Promise<void> {
    const wake = () => this.engine.wake();
    signal.addEventListener('abort', wake);
    this.relay.start();
    const ec2Events = ec2EventsControl(this.options.ec2Events, this.engine.enqueueEc2Event, this.log);
    this.state.ec2Events = ec2Events.describe;
    /** When each controller's next resync is due. */
    const due = new Map<ControllerName, number>();
    try {
      while (!signal.aborted) {
        const wasLeading = this.state.leading;
        const leading = this.noteLeadership();
        await ec2Events.follow(leading);
        if (!leading) {
          await this.engine.idle(IDLE_POLL_MS);
          continue;
        }
        // Taking over: everything is looked at again at once, as a new relay leader lists everything.
        if (!wasLeading) due.clear();
        if (!(this.options.once && this.state.rounds > 0)) await this.resyncDue(due);
        const nextResync = Math.min(...due.values());
        const handled = await this.engine.pumpOnce((queue) => this.queueAllowed(queue));
        if (this.options.once && handled === 0 && this.settled()) break;
        if (handled > 0) continue;
        const untilResync = this.options.once ? IDLE_POLL_MS : nextResync - this.clock.now();
        await this.engine.idle(Math.min(IDLE_POLL_MS, this.engine.nextVisibleInMs() ?? IDLE_POLL_MS, untilResync));
      }
    } finally {
      signal.removeEventListener('abort', wake);
      await ec2Events.follow(false);
      await this.relay.stop(STOP_FLUSH_MS);
    }
  }

  /** A queue is worked while this process leads and no other component holds its controller's migration lock. */
  private queueAllowed(queue: string): boolean {
    const reconciler = QUEUE_RECONCILER.get(queue);
    return reconciler ? this.relay.allows(reconciler) : this.relay.status().leader;
  }

  private settled(): boolean {
    const status = this.relay.status();
    return status.synced && status.pending === 0 && this.engine.depth() === 0;
  }

  /** One resync round for the controllers whose period is up, if any; each one's next round is then due a period on. */
  private async resyncDue(due: Map<ControllerName, number>): Promise<void> {
    const now = this.clock.now();
    const periods = this.options.resyncSeconds;
    const up = this.engine.reconcilers.filter((r) => periods[r] !== undefined && (due.get(r) ?? 0) <= now);
    if (up.length === 0) return;
    await this.resyncRound(new Set(up));
    for (const r of up) due.set(r, this.clock.now() + periods[r]! * 1000);
  }

  private async resyncRound(controllers: ReadonlySet<ControllerName>): Promise<void> {
    const round = ++this.state.rounds;
    try {
      const id = `local-resync-${this.clock.now()}-${round}`;
      const allows = (r: ControllerName) => controllers.has(r) && this.relay.allows(r as EngineReconciler);
      const { sent } = await this.engine.resync(id, allows);
      this.log.info(`resync ${round}: ${sent} keys sent (${[...controllers].join(', ')})`);
    } catch (err) {
      // The round sent what it could; the next one tries again, as EventBridge retries the Lambda's.
      if (!(err instanceof ResyncError)) throw err;
      this.log.warn(`resync ${round} incomplete`, { error: err.message });
    }
  }

  /** Leadership as the operator needs to hear it: once per change, naming who holds the Lease. */
  private noteLeadership(): boolean {
    const { state } = this;
    const status = this.relay.status();
    const holder = status.holder && status.holder !== this.options.relay.identity ? status.holder : undefined;
    if (status.leader === state.leading && (status.leader || holder === state.holder)) return status.leader;
    if (status.leader) {
      this.log.info(`acting: this process reconciles${state.lease ? ` (it holds the Lease ${state.lease})` : ''}`);
    } else if (holder) {
      this.log.info(
        `standing by: the Lease ${state.lease} is held by ${holder}; nothing is reconciled here until it is free`,
      );
    }
    state.leading = status.leader;
    state.holder = holder;
    return status.leader;
  }
}

export function createRealMode(options: RealModeOptions, deps: RealModeDeps): RealMode {
  return new RealMode(options, deps);
}
