import { KubernetesApiError } from '../../../shared/k8s/errors.ts';
import type { Lease, LeasePort } from '../lease.ts';

/** metav1.MicroTime as the API server parses it (RFC3339Micro). */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

/**
 * An in-memory Lease store with the API server's rules: resourceVersion bumps on every write,
 * create of an existing Lease is 409 AlreadyExists, an update with a stale resourceVersion is 409
 * Conflict, a MicroTime without six fractional digits is 422 Invalid. `connect()` hands out views
 * that can be cut off, as a partitioned replica is.
 */
export class FakeLeaseStore implements LeasePort {
  private readonly leases = new Map<string, Lease>();
  private revision = 500;
  readonly calls = { get: 0, create: 0, update: 0 };

  async get(namespace: string, name: string): Promise<Lease | undefined> {
    this.calls.get++;
    const lease = this.leases.get(`${namespace}/${name}`);
    return lease ? structuredClone(lease) : undefined;
  }

  async create(lease: Lease): Promise<Lease> {
    this.calls.create++;
    const key = `${lease.metadata.namespace}/${lease.metadata.name}`;
    if (this.leases.has(key)) {
      throw new KubernetesApiError(
        409,
        'AlreadyExists',
        `leases.coordination.k8s.io "${lease.metadata.name}" already exists`,
      );
    }
    validate(lease);
    return this.store(key, { ...lease, metadata: { ...lease.metadata, uid: `lease-uid-${this.revision}` } });
  }

  async update(lease: Lease): Promise<Lease> {
    this.calls.update++;
    const key = `${lease.metadata.namespace}/${lease.metadata.name}`;
    const current = this.leases.get(key);
    if (!current)
      throw new KubernetesApiError(404, 'NotFound', `leases.coordination.k8s.io "${lease.metadata.name}" not found`);
    if (lease.metadata.resourceVersion !== current.metadata.resourceVersion) {
      throw new KubernetesApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on leases.coordination.k8s.io "${lease.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    validate(lease);
    return this.store(key, { ...lease, metadata: { ...lease.metadata, uid: current.metadata.uid } });
  }

  /** The stored Lease, for assertions. */
  peek(namespace: string, name: string): Lease | undefined {
    const lease = this.leases.get(`${namespace}/${name}`);
    return lease ? structuredClone(lease) : undefined;
  }

  /** Put a Lease as another component would (e.g. the migration lock held by kube-controller-manager). */
  put(lease: Lease): Lease {
    return this.store(`${lease.metadata.namespace}/${lease.metadata.name}`, lease);
  }

  /** A client of this store that fails like an unreachable API server while `cut`. */
  connect(): { port: LeasePort; cut(): void; heal(): void } {
    let reachable = true;
    const guard = <T>(call: () => Promise<T>) => {
      if (!reachable) return Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      return call();
    };
    return {
      port: {
        get: (namespace, name) => guard(() => this.get(namespace, name)),
        create: (lease) => guard(() => this.create(lease)),
        update: (lease) => guard(() => this.update(lease)),
      },
      cut: () => {
        reachable = false;
      },
      heal: () => {
        reachable = true;
      },
    };
  }

  private store(key: string, lease: Lease): Lease {
    const stored: Lease = structuredClone({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(++this.revision) },
    });
    this.leases.set(key, stored);
    return structuredClone(stored);
  }
}

function validate(lease: Lease): void {
  for (const field of ['acquireTime', 'renewTime'] as const) {
    const value = lease.spec?.[field];
    if (value !== undefined && !MICRO_TIME.test(value)) {
      throw new KubernetesApiError(
        422,
        'Invalid',
        `Lease.coordination.k8s.io "${lease.metadata.name}" is invalid: spec.${field}: ${value} is not RFC3339Micro`,
      );
    }
  }
}
