import type { Clock } from '../../shared/clock.ts';
import { errorMessage } from '../../shared/errors.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { Reconciler } from './controllers/index.ts';
import { MIGRATION_CONTROLLER_NAMES } from './forwarding.ts';
import type { LeasePort } from './lease.ts';
import type { RelayMetrics } from './metrics.ts';

/**
 * Leader migration (moving controllers from kube-controller-manager to a cloud controller without
 * two of them acting at once): controllers listed in a `LeaderMigrationConfiguration` run only in the
 * component the file assigns them to, and only while that component holds the migration lock, a
 * Lease in kube-system named `leaderName`.
 * https://kubernetes.io/docs/tasks/administer-cluster/controller-manager-leader-migration/
 *
 * The relay takes part without ever taking the lock (it may only read it): for a controller assigned
 * to the relay's component (or `*`), keys are sent only while nobody else holds the lock; for a
 * controller assigned to another component, never. Controllers not listed are not affected.
 *
 * The file is read by leader-migration.ts, which the relay process imports only when it is given one
 * (its YAML parser comes with @kubernetes/client-node, which a relay in a Pod otherwise never loads).
 */

export const DEFAULT_LEADER_NAME = 'cloud-provider-extraction-migration';
export const MIGRATION_LOCK_NAMESPACE = 'kube-system';
export const DEFAULT_COMPONENT = 'cloud-controller-manager';

/** A LeaderMigrationConfiguration as leader-migration.ts validates it (defaults applied). */
export interface LeaderMigrationConfiguration {
  apiVersion:
    | 'controllermanager.config.k8s.io/v1'
    | 'controllermanager.config.k8s.io/v1beta1'
    | 'controllermanager.config.k8s.io/v1alpha1';
  kind: 'LeaderMigrationConfiguration';
  leaderName: string;
  resourceLock?: 'leases';
  controllerLeaders: { name: string; component: string }[];
}

/** How the configuration treats one reconciler. */
export type MigrationRole =
  /** Not listed: not part of the migration. */
  | { role: 'unlisted' }
  /** Listed for our component (or `*`): only while no other component holds the lock. */
  | { role: 'ours'; controller: string }
  /** Listed for another component: never. */
  | { role: 'theirs'; controller: string; component: string };

export function migrationRole(
  config: LeaderMigrationConfiguration,
  reconciler: Reconciler,
  component: string,
): MigrationRole {
  const names = MIGRATION_CONTROLLER_NAMES[reconciler];
  const entry = config.controllerLeaders.find((c) => names.includes(c.name));
  if (!entry) return { role: 'unlisted' };
  if (entry.component === component || entry.component === '*') return { role: 'ours', controller: entry.name };
  return { role: 'theirs', controller: entry.name, component: entry.component };
}

export interface MigrationGateOptions {
  config: LeaderMigrationConfiguration;
  /** The component name the relay answers to in `controllerLeaders`. */
  component: string;
  reconcilers: readonly Reconciler[];
  pollMs: number;
}

export interface MigrationGateDeps {
  leases: LeasePort;
  clock: Clock;
  log: Log;
  metrics: RelayMetrics;
  /** A reconciler's keys may flow again: what changed meanwhile was never sent. */
  onOpened(reconciler: Reconciler): void;
}

/** After this many failed reads in a row, the last answer is too old to trust and gated keys stop. */
const STALE_AFTER_FAILURES = 3;

export class MigrationGate {
  private readonly roles = new Map<Reconciler, MigrationRole>();
  /** Unknown until the first read; then whether another component holds the lock. */
  private heldByOther: boolean | undefined;
  private observed?: { resourceVersion?: string; at: number };
  private failures = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly options: MigrationGateOptions,
    private readonly deps: MigrationGateDeps,
  ) {
    for (const reconciler of options.reconcilers) {
      const role = migrationRole(options.config, reconciler, options.component);
      this.roles.set(reconciler, role);
      if (role.role === 'theirs') {
        deps.log.warn('leader migration assigns this controller to another component: its keys are never sent', {
          reconciler,
          controller: role.controller,
          component: role.component,
        });
      }
    }
    this.publish();
  }

  /** Whether keys for `reconciler` may be sent now. */
  allows(reconciler: Reconciler): boolean {
    const role = this.roles.get(reconciler) ?? { role: 'unlisted' };
    if (role.role === 'unlisted') return true;
    if (role.role === 'theirs') return false;
    return this.heldByOther === false;
  }

  /** Whether any reconciler depends on the lock at all (else there is nothing to poll). */
  get needed(): boolean {
    return [...this.roles.values()].some((r) => r.role === 'ours');
  }

  start(): void {
    if (!this.needed || this.stopped) return;
    const tick = async () => {
      await this.poll();
      if (!this.stopped) this.timer = setTimeout(tick, this.options.pollMs);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Read the lock once and open or close the gate. */
  async poll(): Promise<void> {
    const before = new Map([...this.roles.keys()].map((r) => [r, this.allows(r)]));
    try {
      const lease = await this.deps.leases.get(MIGRATION_LOCK_NAMESPACE, this.options.config.leaderName);
      this.failures = 0;
      const now = this.deps.clock.now();
      if (!lease) {
        this.heldByOther = false;
      } else {
        if (lease.metadata.resourceVersion !== this.observed?.resourceVersion) {
          this.observed = { resourceVersion: lease.metadata.resourceVersion, at: now };
        }
        // Live = renewed (its resourceVersion moved) within its duration, by our clock; never by comparing
        // timestamps written on another machine.
        const durationMs = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
        this.heldByOther = Boolean(lease.spec?.holderIdentity) && now < this.observed!.at + durationMs;
      }
    } catch (err) {
      this.failures++;
      this.deps.log.warn('reading the leader migration lock failed', {
        lease: `${MIGRATION_LOCK_NAMESPACE}/${this.options.config.leaderName}`,
        error: errorMessage(err),
        failures: this.failures,
      });
      if (this.failures >= STALE_AFTER_FAILURES) this.heldByOther = undefined;
    }
    this.publish();
    for (const [reconciler, allowed] of before) {
      const now = this.allows(reconciler);
      if (now === allowed) continue;
      this.deps.log.info(now ? 'migration lock free: sending keys' : 'migration lock held elsewhere: holding keys', {
        reconciler,
        lock: this.options.config.leaderName,
      });
      if (now) this.deps.onOpened(reconciler);
    }
  }

  private publish(): void {
    for (const reconciler of this.roles.keys()) {
      this.deps.metrics.migrationHeld.set({ reconciler }, this.allows(reconciler) ? 0 : 1);
    }
  }
}
