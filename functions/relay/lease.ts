import type { Clock } from '../../shared/clock.ts';
import { errorMessage } from '../../shared/errors.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import type { Log } from '../../shared/observability/log.ts';

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics
 * (k8s.io/client-go/tools/leaderelection), so `kubectl get lease` reads the same as for any controller:
 * https://kubernetes.io/docs/concepts/architecture/leases/#leader-election
 *
 * - A candidate takes the Lease when it does not exist, has no holder, or its holder has not renewed
 *   it for `leaseDuration` as measured on the candidate's own clock since it last saw the Lease
 *   change (never by comparing clocks across machines).
 * - Every write carries the resourceVersion read, so of two candidates racing only one succeeds (409).
 * - The holder renews every `retryPeriod`, and stops leading when it has not renewed for
 *   `renewDeadline` (< leaseDuration): it has stopped forwarding before anyone else may start.
 */

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** metav1.MicroTime: RFC 3339 with exactly six fractional digits. */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion?: 'coordination.k8s.io/v1';
  kind?: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string; uid?: string };
  spec?: LeaseSpec;
}

/** Leases as the relay needs them; errors are `KubernetesApiError` (409 on a lost race). */
export interface LeasePort {
  get(namespace: string, name: string): Promise<Lease | undefined>;
  /** 409 AlreadyExists when another candidate created it first. */
  create(lease: Lease): Promise<Lease>;
  /** Replace, guarded by `metadata.resourceVersion`: 409 Conflict when it changed since read. */
  update(lease: Lease): Promise<Lease>;
}

/**
 * metav1.MicroTime is parsed with Go's RFC3339Micro layout, which wants six fractional digits;
 * JavaScript's toISOString gives three, which the API server refuses.
 * https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/lease-v1/
 */
export function microTime(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface LeaderElectorOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export interface LeaderElectorDeps {
  leases: LeasePort;
  clock: Clock;
  log: Log;
  random?: () => number;
  onStartedLeading(): void;
  onStoppedLeading(): void;
}

/** client-go's defaults for controller managers: 15 s lease, 10 s renew deadline, 2 s retry. */
export const DEFAULT_ELECTION = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** Acquire attempts wait retryPeriod x (1 + up to this), so candidates do not hit the Lease in step. */
const JITTER = 0.2;

export class LeaderElector {
  private leading = false;
  private stopped = false;
  private loop?: Promise<void>;
  /** Local time at which the last successful renew was *sent*: the holder's lease is counted from there. */
  private renewedAt = 0;
  private deadlineTimer?: NodeJS.Timeout;
  private wake?: () => void;
  /** The Lease as last seen, and when (local clock): a holder is live until observedAt + its duration. */
  private observed?: { resourceVersion?: string; holder: string; durationMs: number; at: number };
  /** Last time the API server answered a Lease request at all (readiness). */
  lastContactAt = 0;
  /** Last time the loop made an attempt (liveness). */
  lastAttemptAt = 0;

  constructor(
    private readonly options: LeaderElectorOptions,
    private readonly deps: LeaderElectorDeps,
  ) {
    if (!(options.renewDeadlineMs < options.leaseDurationMs)) {
      throw new Error('leader election: renewDeadline must be shorter than leaseDuration');
    }
    if (!(options.retryPeriodMs < options.renewDeadlineMs)) {
      throw new Error('leader election: retryPeriod must be shorter than renewDeadline');
    }
  }

  /** Who holds the Lease as far as this replica knows. */
  get holder(): string | undefined {
    return this.observed?.holder || undefined;
  }

  /**
   * True while this replica leads and will for at least `marginMs` more: the forwarder asks before
   * every request, so a request never starts when the lease may run out before it is done.
   */
  isLeader(marginMs = 0): boolean {
    return this.leading && this.deps.clock.now() + marginMs < this.renewedAt + this.options.renewDeadlineMs;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stop campaigning; when leading, give the Lease up so another replica takes over at once. */
  async stop(release = true): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    const wasLeading = this.leading;
    this.stepDown('stopping');
    if (release && wasLeading) await this.release();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const attemptAt = this.deps.clock.now();
      this.lastAttemptAt = attemptAt;
      let ok = false;
      try {
        ok = await this.withTimeout(this.tryAcquireOrRenew(attemptAt), this.options.renewDeadlineMs);
      } catch (err) {
        this.deps.log.warn('lease attempt failed', {
          lease: `${this.options.namespace}/${this.options.name}`,
          error: errorMessage(err),
          leading: this.leading,
        });
      }
      if (this.stopped) break;
      if (ok) {
        this.renewedAt = attemptAt;
        this.armDeadline();
        if (!this.leading) {
          this.leading = true;
          this.deps.log.info('started leading', { identity: this.options.identity, lease: this.options.name });
          this.deps.onStartedLeading();
        }
      } else if (this.leading && !this.isLeader()) {
        this.stepDown('lease not renewed within the renew deadline');
      }
      const wait = this.leading
        ? this.options.retryPeriodMs
        : this.options.retryPeriodMs * (1 + JITTER * (this.deps.random ?? Math.random)());
      await this.sleep(wait);
    }
  }

  private async tryAcquireOrRenew(now: number): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const durationSeconds = Math.ceil(this.options.leaseDurationMs / 1000);
    const current = await this.deps.leases.get(namespace, name);
    this.lastContactAt = this.deps.clock.now();
    if (!current) {
      const created = await this.deps.leases.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace },
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      });
      this.observe(created, now);
      return true;
    }
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    if (current.metadata.resourceVersion !== this.observed?.resourceVersion || this.observed === undefined) {
      this.observe(current, this.deps.clock.now());
    }
    const observed = this.observed!;
    if (holder && holder !== identity && this.deps.clock.now() < observed.at + observed.durationMs) return false;
    const mine = holder === identity;
    const updated = await this.deps.leases.update({
      ...current,
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
      },
    });
    this.observe(updated, this.deps.clock.now());
    if (!mine) this.deps.log.info('took over the lease', { from: holder || '(released)', identity });
    return true;
  }

  /** client-go's release: no holder, a 1 s duration, so a standby replica acquires at its next attempt. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    try {
      const current = await this.deps.leases.get(namespace, name);
      if (!current || current.spec?.holderIdentity !== identity) return;
      const now = this.deps.clock.now();
      await this.deps.leases.update({
        ...current,
        spec: {
          holderIdentity: '',
          leaseDurationSeconds: 1,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: current.spec?.leaseTransitions ?? 0,
        },
      });
      this.deps.log.info('released the lease', { identity, lease: name });
    } catch (err) {
      // Not fatal: the other replica takes over when the lease expires instead of at once.
      this.deps.log.warn('releasing the lease failed', { error: errorMessage(err) });
    }
  }

  private observe(lease: Lease, at: number): void {
    const declared = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    this.observed = {
      resourceVersion: lease.metadata.resourceVersion,
      holder: lease.spec?.holderIdentity ?? '',
      // A holder declaring a longer lease than ours is given that long; a released lease (1 s, no
      // holder) is free at once anyway.
      durationMs: Math.max(declared, this.options.leaseDurationMs),
      at,
    };
  }

  /** Stop leading the moment the renew deadline passes, even while a renew request still hangs. */
  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    const remaining = this.renewedAt + this.options.renewDeadlineMs - this.deps.clock.now();
    this.deadlineTimer = setTimeout(() => {
      if (this.leading && !this.isLeader()) this.stepDown('lease not renewed within the renew deadline');
    }, remaining + 1);
    this.deadlineTimer.unref?.();
  }

  private stepDown(why: string): void {
    clearTimeout(this.deadlineTimer);
    if (!this.leading) return;
    this.leading = false;
    const fields = { identity: this.options.identity, why };
    if (why === 'stopping') this.deps.log.info('stopped leading', fields);
    else this.deps.log.warn('stopped leading', fields);
    this.deps.onStoppedLeading();
  }

  private withTimeout<T>(promise: Promise<T>, milliseconds: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${milliseconds} ms`)), milliseconds);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  private sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, milliseconds);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }
}

/** 409: another candidate won the race (AlreadyExists on create, Conflict on update). */
export function isLeaseConflict(err: unknown): boolean {
  return err instanceof KubernetesApiError && err.statusCode === 409;
}
