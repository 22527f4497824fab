import { CoreV1Api, DiscoveryV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  apiConfiguration,
  guardedPatch,
  LIST_PAGE_SIZE,
  listAllPages,
  MERGE_PATCH,
  relistOnExpired,
  toPlainJson,
  translated,
} from './client-node-adapter.ts';
import { KubernetesApiError } from './errors.ts';
import type { WriteGuard } from './port.ts';
import { LABEL_SERVICE_NAME, type ServicesPort } from './service-port.ts';
import type { EndpointSlice, MergePatch, Service } from './types.ts';

/**
 * The ServicesPort over @kubernetes/client-node 2.x, beside `client-node-adapter.ts` (Nodes and Events) and
 * built the same way: one connection pool per KubeConfig, a single static middleware, JSON merge patches
 * guarded by resourceVersion, plain API JSON out and `KubernetesApiError` for every API error.
 */

export class ClientNodeServices implements ServicesPort {
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string } = {}) {
    const configuration = apiConfiguration(kubeConfig, options.userAgent);
    this.core = new CoreV1Api(configuration);
    this.discovery = new DiscoveryV1Api(configuration);
  }

  async getService(namespace: string, name: string): Promise<Service | undefined> {
    try {
      return toPlainJson(await this.call(() => this.core.readNamespacedService({ name, namespace }))) as Service;
    } catch (err) {
      if (err instanceof KubernetesApiError && err.statusCode === 404) return undefined;
      throw err;
    }
  }

  async listServices(): Promise<Service[]> {
    return relistOnExpired(() =>
      listAllPages<Service>((token) =>
        this.core.listServiceForAllNamespaces({ limit: LIST_PAGE_SIZE, _continue: token }),
      ),
    );
  }

  async patchService(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard): Promise<Service> {
    const body = guardedPatch(patch, guard);
    return this.call(
      async () =>
        toPlainJson(await this.core.patchNamespacedService({ name, namespace, body }, MERGE_PATCH)) as Service,
    );
  }

  async patchServiceStatus(
    namespace: string,
    name: string,
    patch: MergePatch<Service>,
    guard: WriteGuard,
  ): Promise<Service> {
    const body = guardedPatch(patch, guard);
    return this.call(
      async () =>
        toPlainJson(await this.core.patchNamespacedServiceStatus({ name, namespace, body }, MERGE_PATCH)) as Service,
    );
  }

  async listEndpointSlices(namespace: string, serviceName: string): Promise<EndpointSlice[]> {
    return listAllPages<EndpointSlice>((token) =>
      this.discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: `${LABEL_SERVICE_NAME}=${serviceName}`,
        limit: LIST_PAGE_SIZE,
        _continue: token,
      }),
    );
  }

  private call<T>(request: () => Promise<T>): Promise<T> {
    return translated(request);
  }
}
