import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import { KubernetesApiError } from './errors.ts';
import type { TokenKubeConfig } from './rest-client.ts';

/*
 * The credential refresh every Kubernetes port of a Lambda goes through in `token` and `eks` modes
 * (lambda-access.ts builds the ports and their credential sources).
 */

/**
 * Credentials for one stretch of time: a kubeconfig (the REST client's server, CA and token, or
 * client-node's KubeConfig), and when to stop using it (Infinity: until a 401).
 */
export interface Credentials<K = TokenKubeConfig> {
  kubeConfig: K;
  refreshAt: number;
}

export type CredentialSource<K = TokenKubeConfig> = () => Promise<Credentials<K>>;

interface Generation<P> {
  port: P;
  refreshAt: number;
}

/**
 * A port whose credentials are rebuilt when they are due (EKS tokens) or rejected. A 401 means the
 * request was not authenticated and so had no effect, which makes a single retry safe for writes
 * too: the credentials are fetched again once, the request is retried once, and a second 401 is the
 * caller's. Concurrent requests that fail with the same credentials share one refresh.
 * Every method of the port goes through this (a Proxy), so one mechanism serves every port shape.
 */
export function refreshingPort<P extends object, K = KubeConfig>(
  source: CredentialSource<K>,
  clock: Clock,
  portFor: (kubeConfig: K) => P,
): P {
  const holder = new CredentialHolder(source, clock, portFor);
  return new Proxy({} as P, {
    get: (_target, method) =>
      function callWithFreshCredentials(...args: unknown[]) {
        return holder.run((port) =>
          (port as Record<PropertyKey, (...a: unknown[]) => Promise<unknown>>)[method]!(...args),
        );
      },
  });
}

class CredentialHolder<P, K> {
  private pending: Promise<Generation<P>> | undefined;

  constructor(
    private readonly source: CredentialSource<K>,
    private readonly clock: Clock,
    private readonly portFor: (kubeConfig: K) => P,
  ) {}

  async run<T>(operation: (port: P) => Promise<T>): Promise<T> {
    const first = await this.acquire();
    try {
      return await operation(first.generation.port);
    } catch (err) {
      if (!(err instanceof KubernetesApiError && err.statusCode === 401)) throw err;
      const second = await this.acquire(first.pending);
      return operation(second.generation.port);
    }
  }

  /** The current credentials; new ones when there are none, they are due, or they are `rejected`. */
  private async acquire(
    rejected?: Promise<Generation<P>>,
  ): Promise<{ pending: Promise<Generation<P>>; generation: Generation<P> }> {
    if (this.pending === undefined || this.pending === rejected) this.pending = this.load();
    let pending = this.pending;
    let generation = await pending;
    if (this.clock.now() >= generation.refreshAt) {
      if (this.pending === pending) this.pending = this.load();
      pending = this.pending;
      generation = await pending;
    }
    return { pending, generation };
  }

  private load(): Promise<Generation<P>> {
    const loading = this.source().then(({ kubeConfig, refreshAt }) => ({ port: this.portFor(kubeConfig), refreshAt }));
    // A failed fetch is not kept: the next request tries again.
    loading.catch(() => {
      if (this.pending === loading) this.pending = undefined;
    });
    return loading;
  }
}
