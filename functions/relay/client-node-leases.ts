import { CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { apiConfiguration, toPlainJson, translateError } from '../../shared/k8s/client-node-adapter.ts';
import { isNotFound } from '../../shared/k8s/errors.ts';
import { RELAY_USER_AGENT } from './kube-source.ts';
import type { Lease, LeasePort } from './lease.ts';

/**
 * Leases over client-node's typed CoordinationV1Api. Its model has no class for MicroTime, so the
 * `acquireTime`/`renewTime` strings pass through both ways untouched (see `microTime` in lease.ts).
 * Every call goes through one connection pool (see ReusedDispatcherAuth): a renew every 2 s would
 * otherwise open a new TLS connection each time.
 */
export class ClientNodeLeases implements LeasePort {
  private readonly api: CoordinationV1Api;

  constructor(kubeConfig: KubeConfig, userAgent = RELAY_USER_AGENT) {
    this.api = new CoordinationV1Api(apiConfiguration(kubeConfig, userAgent));
  }

  async get(namespace: string, name: string): Promise<Lease | undefined> {
    try {
      return toLease(await this.api.readNamespacedLease({ namespace, name }));
    } catch (err) {
      const translated = translateError(err);
      if (isNotFound(translated)) return undefined;
      throw translated;
    }
  }

  async create(lease: Lease): Promise<Lease> {
    try {
      return toLease(
        await this.api.createNamespacedLease({ namespace: lease.metadata.namespace, body: lease as V1Lease }),
      );
    } catch (err) {
      throw translateError(err);
    }
  }

  async update(lease: Lease): Promise<Lease> {
    try {
      return toLease(
        await this.api.replaceNamespacedLease({
          namespace: lease.metadata.namespace,
          name: lease.metadata.name,
          body: lease as V1Lease,
        }),
      );
    } catch (err) {
      throw translateError(err);
    }
  }
}

function toLease(value: V1Lease): Lease {
  return toPlainJson(value) as Lease;
}
