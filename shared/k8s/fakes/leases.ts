import type { Clock } from '../../clock.ts';
import { LBC_LEASE, type LeaseSnapshot } from '../lbc-lease.ts';
import type { KubernetesOperation } from './fake-kubernetes.ts';
import { apiTime } from './writes.ts';

/**
 * `coordination.k8s.io/v1` Leases of FakeKubernetes, as another controller's leader election leaves them: tests put
 * the AWS Load Balancer Controller's leader Lease as a running instance of it renews it (`holdLbcLease`), as it leaves
 * it on a clean shutdown (`releaseLbcLease`: holder emptied), or remove it (`deleteLease`); the controllers read it
 * through `getLease` (LeaseReadPort, counted as `getLease` on FakeKubernetes). renewTime is a MicroTime.
 * https://kubernetes.io/docs/concepts/architecture/leases/
 */

export interface FakeLeasesHost {
  clock: Clock;
  nextRevision(): number;
  nextUid(): string;
  /** Counts the call and throws the error queued for it, if any (`FakeKubernetes.queueError`). */
  call(operation: KubernetesOperation): void;
}

export interface StoredLease extends LeaseSnapshot {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: LeaseSnapshot['metadata'] & { namespace: string; uid?: string; creationTimestamp?: string };
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000Z');
}

export class FakeLeases {
  /** By `namespace/name`. */
  readonly leases = new Map<string, StoredLease>();

  constructor(private readonly host: FakeLeasesHost) {}

  /** Create or overwrite a Lease as its holder writes it (a new resourceVersion; uid and creation time kept). */
  putLease(lease: LeaseSnapshot): StoredLease {
    const namespace = lease.metadata.namespace ?? 'default';
    const key = `${namespace}/${lease.metadata.name}`;
    const existing = this.leases.get(key);
    const stored: StoredLease = structuredClone({
      apiVersion: 'coordination.k8s.io/v1' as const,
      kind: 'Lease' as const,
      ...lease,
      metadata: {
        ...lease.metadata,
        namespace,
        uid: existing?.metadata.uid ?? this.host.nextUid(),
        creationTimestamp: existing?.metadata.creationTimestamp ?? apiTime(this.host.clock.now()),
        resourceVersion: String(this.host.nextRevision()),
      },
    });
    this.leases.set(key, stored);
    return structuredClone(stored);
  }

  /**
   * The reference's leader Lease (kube-system/aws-load-balancer-controller-leader) as a running instance holds it:
   * acquired (when not yet held by `holder`) and renewed at `renewedAtMs` (default now), for `durationSeconds`
   * (client-go's default 15).
   */
  holdLbcLease(holder: string, options: { durationSeconds?: number; renewedAtMs?: number } = {}): StoredLease {
    const renewed = microTime(options.renewedAtMs ?? this.host.clock.now());
    const current = this.leases.get(`${LBC_LEASE.namespace}/${LBC_LEASE.name}`)?.spec;
    const transitions = current?.holderIdentity === holder ? 0 : 1;
    return this.putLease({
      metadata: { namespace: LBC_LEASE.namespace, name: LBC_LEASE.name },
      spec: {
        ...current,
        holderIdentity: holder,
        leaseDurationSeconds: options.durationSeconds ?? 15,
        acquireTime: transitions ? renewed : (current?.acquireTime ?? renewed),
        renewTime: renewed,
        leaseTransitions: ((current as { leaseTransitions?: number } | undefined)?.leaseTransitions ?? 0) + transitions,
      } as NonNullable<LeaseSnapshot['spec']>,
    });
  }

  /**
   * The reference's leader Lease as client-go leaves it when its holder stops cleanly (ReleaseOnCancel): the
   * holder emptied, a duration of one second, renewed now.
   */
  releaseLbcLease(): StoredLease {
    const now = microTime(this.host.clock.now());
    const current = this.leases.get(`${LBC_LEASE.namespace}/${LBC_LEASE.name}`)?.spec;
    return this.putLease({
      metadata: { namespace: LBC_LEASE.namespace, name: LBC_LEASE.name },
      spec: { ...current, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now },
    });
  }

  deleteLease(namespace: string, name: string): void {
    this.leases.delete(`${namespace}/${name}`);
  }

  /** GET .../namespaces/<ns>/leases/<name>, counted as `getLease`; undefined when there is none. */
  getRequest(namespace: string, name: string): StoredLease | undefined {
    this.host.call('getLease');
    const lease = this.leases.get(`${namespace}/${name}`);
    return lease && structuredClone(lease);
  }
}
