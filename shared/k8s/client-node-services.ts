import {
  CoreV1Api,
  createConfiguration,
  DiscoveryV1Api,
  KubeConfig,
  PatchStrategy,
  ServerConfiguration,
  setHeaderMiddleware,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import {
  EVENT_COMPONENT,
  guardedPatch,
  LIST_PAGE_SIZE,
  ReusedDispatcherAuth,
  toPlainJson,
  translateError,
} from './client-node-adapter.ts';
import { KubernetesApiError } from './errors.ts';
import {
  type ClusterAccess,
  EKS_TOKEN_REFRESH_MS,
  eksToken,
  type KubernetesAccessDeps,
  KubernetesAccessError,
  tokenKubeConfig,
} from './lambda-access.ts';
import type { WriteGuard } from './port.ts';
import { LABEL_SERVICE_NAME, type ServicesPort } from './service-port.ts';
import type { EndpointSlice, MergePatch, Node, Service } from './types.ts';

/**
 * The ServicesPort over @kubernetes/client-node 2.x, beside `client-node-adapter.ts` (Nodes and Events) and
 * built the same way: one connection pool per KubeConfig, a single static middleware, JSON merge patches
 * guarded by resourceVersion, plain API JSON out and `KubernetesApiError` for every API error.
 */

/**
 * The generated PATCH methods default to `application/json-patch+json`; the per-call option makes it a JSON
 * merge patch (RFC 7386). https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
 */
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export class ClientNodeServices implements ServicesPort {
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string } = {}) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('building the Kubernetes client: the kubeconfig has no current cluster');
    const configuration = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server.replace(/\/+$/, ''), {}),
      authMethods: { default: new ReusedDispatcherAuth(kubeConfig) },
      // One static middleware only: client-node 2.x reverses the static middleware array in place on calls
      // without per-call options (see client-node-adapter.ts).
      middleware: [setHeaderMiddleware('User-Agent', options.userAgent ?? EVENT_COMPONENT)],
    });
    this.core = new CoreV1Api(configuration);
    this.discovery = new DiscoveryV1Api(configuration);
  }

  async getService(namespace: string, name: string): Promise<Service | undefined> {
    try {
      return toPlainJson(await this.core.readNamespacedService({ name, namespace })) as Service;
    } catch (err) {
      const translated = translateError(err);
      if (translated instanceof KubernetesApiError && translated.statusCode === 404) return undefined;
      throw translated;
    }
  }

  async listServices(): Promise<Service[]> {
    // An expired continue token (410) means starting the list again, once.
    // https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
    const listAll = async () => {
      const services: Service[] = [];
      let token: string | undefined;
      do {
        const page = await this.call(() =>
          this.core.listServiceForAllNamespaces({ limit: LIST_PAGE_SIZE, _continue: token }),
        );
        for (const item of page.items) services.push(toPlainJson(item) as Service);
        token = page.metadata?._continue || undefined;
      } while (token);
      return services;
    };
    try {
      return await listAll();
    } catch (err) {
      if (err instanceof KubernetesApiError && err.statusCode === 410) return listAll();
      throw err;
    }
  }

  async patchService(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard): Promise<Service> {
    const body = guardedPatch(patch as MergePatch<Node>, guard);
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
    const body = guardedPatch(patch as MergePatch<Node>, guard);
    return this.call(
      async () =>
        toPlainJson(await this.core.patchNamespacedServiceStatus({ name, namespace, body }, MERGE_PATCH)) as Service,
    );
  }

  async listEndpointSlices(namespace: string, serviceName: string): Promise<EndpointSlice[]> {
    const slices: EndpointSlice[] = [];
    let token: string | undefined;
    do {
      const page = await this.call(() =>
        this.discovery.listNamespacedEndpointSlice({
          namespace,
          labelSelector: `${LABEL_SERVICE_NAME}=${serviceName}`,
          limit: LIST_PAGE_SIZE,
          _continue: token,
        }),
      );
      for (const item of page.items) slices.push(toPlainJson(item) as EndpointSlice);
      token = page.metadata?._continue || undefined;
    } while (token);
    return slices;
  }

  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw translateError(err);
    }
  }
}

/** Credentials for one stretch of time: a KubeConfig, and when to stop using it (Infinity: until a 401). */
export interface TimedKubeConfig {
  kubeConfig: KubeConfig;
  refreshAt: number;
}

/**
 * The ServicesPort for this configuration, with the same access modes as `createKubernetesPort` in
 * lambda-access.ts: a kubeconfig, an EKS IAM token (re-minted every 14 minutes), or a service-account
 * token from Secrets Manager; credentials are fetched again once when the API server answers 401.
 */
export function createServicesPort(config: Config, deps: KubernetesAccessDeps): ServicesPort {
  if (config.KUBERNETES_AUTH_MODE === 'kubeconfig') {
    const kubeConfig = deps.loadDefaultKubeConfig?.() ?? defaultKubeConfig();
    return new ClientNodeServices(kubeConfig);
  }
  return new RefreshingServices(kubeConfigSource(config, deps), deps.clock, (k) => new ClientNodeServices(k));
}

/**
 * Where `eks` and `token` modes get credentials. The same rules as lambda-access.ts (which keeps its own
 * copy private): EKS endpoint and CA from configuration, else one DescribeCluster; the secret holds
 * `{"token", "ca"}`.
 */
export function kubeConfigSource(config: Config, deps: KubernetesAccessDeps): () => Promise<TimedKubeConfig> {
  if (config.KUBERNETES_AUTH_MODE === 'token') {
    const secretId = config.KUBERNETES_TOKEN_SECRET_ID;
    const endpoint = config.KUBERNETES_API_ENDPOINT;
    if (!secretId || !endpoint) {
      throw new KubernetesAccessError(
        'KUBERNETES_TOKEN_SECRET_ID and KUBERNETES_API_ENDPOINT are required in token mode',
      );
    }
    return async () => {
      let fields: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(await deps.readSecret(secretId));
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          throw new TypeError('not an object');
        fields = parsed as Record<string, unknown>;
      } catch (err) {
        // Never echo the secret's text into an error.
        throw new KubernetesAccessError(
          `reading Secrets Manager secret "${secretId}": not a JSON object {"token", "ca"} (${err instanceof SyntaxError ? 'not JSON' : String(err)})`,
        );
      }
      const token = typeof fields.token === 'string' ? fields.token.trim() : '';
      const ca = typeof fields.ca === 'string' && fields.ca.trim() ? fields.ca.trim() : config.KUBERNETES_CA_DATA;
      if (!token || !ca) {
        throw new KubernetesAccessError(
          `Secrets Manager secret "${secretId}" lacks "token" or "ca" (and KUBERNETES_CA_DATA)`,
        );
      }
      const caData = ca.startsWith('-----BEGIN') ? Buffer.from(ca).toString('base64') : ca;
      return { kubeConfig: tokenKubeConfig({ endpoint, caData }, token), refreshAt: Number.POSITIVE_INFINITY };
    };
  }
  const clusterName = config.EKS_CLUSTER_NAME ?? config.CLUSTER_NAME;
  let described: Promise<ClusterAccess> | undefined;
  return async () => {
    let access: ClusterAccess;
    if (config.KUBERNETES_API_ENDPOINT && config.KUBERNETES_CA_DATA) {
      access = { endpoint: config.KUBERNETES_API_ENDPOINT, caData: config.KUBERNETES_CA_DATA };
    } else {
      described ??= deps.describeCluster(clusterName);
      const pending = described;
      try {
        const fromEks = await pending;
        access = {
          endpoint: config.KUBERNETES_API_ENDPOINT ?? fromEks.endpoint,
          caData: config.KUBERNETES_CA_DATA ?? fromEks.caData,
        };
      } catch (err) {
        if (described === pending) described = undefined;
        throw new KubernetesAccessError(`describing EKS cluster "${clusterName}": ${String(err)}`, { cause: err });
      }
    }
    const now = deps.clock.now();
    const token = await eksToken({
      clusterName,
      region: config.AWS_REGION,
      credentials: await deps.awsCredentials(),
      now,
    });
    return { kubeConfig: tokenKubeConfig(access, token), refreshAt: now + EKS_TOKEN_REFRESH_MS };
  };
}

/**
 * A ServicesPort whose credentials are rebuilt when due or rejected. A 401 had no effect on the server, so
 * one retry with fresh credentials is safe for writes too.
 */
export class RefreshingServices implements ServicesPort {
  private current: Promise<{ port: ServicesPort; refreshAt: number }> | undefined;

  constructor(
    private readonly source: () => Promise<TimedKubeConfig>,
    private readonly clock: Clock,
    private readonly portFor: (kubeConfig: KubeConfig) => ServicesPort,
  ) {}

  getService(namespace: string, name: string) {
    return this.run((port) => port.getService(namespace, name));
  }

  listServices() {
    return this.run((port) => port.listServices());
  }

  patchService(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard) {
    return this.run((port) => port.patchService(namespace, name, patch, guard));
  }

  patchServiceStatus(namespace: string, name: string, patch: MergePatch<Service>, guard: WriteGuard) {
    return this.run((port) => port.patchServiceStatus(namespace, name, patch, guard));
  }

  listEndpointSlices(namespace: string, serviceName: string) {
    return this.run((port) => port.listEndpointSlices(namespace, serviceName));
  }

  private async run<T>(operation: (port: ServicesPort) => Promise<T>): Promise<T> {
    const first = await this.acquire();
    try {
      return await operation(first.port);
    } catch (err) {
      if (!(err instanceof KubernetesApiError && err.statusCode === 401)) throw err;
      const second = await this.acquire(true);
      return operation(second.port);
    }
  }

  private async acquire(rejected = false): Promise<{ port: ServicesPort; refreshAt: number }> {
    if (this.current) {
      const held = await this.current.catch(() => undefined);
      if (held && !rejected && this.clock.now() < held.refreshAt) return held;
    }
    const loading = this.source().then(({ kubeConfig, refreshAt }) => ({ port: this.portFor(kubeConfig), refreshAt }));
    this.current = loading;
    // A failed fetch is not kept: the next request tries again.
    loading.catch(() => {
      if (this.current === loading) this.current = undefined;
    });
    return loading;
  }
}

function defaultKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}
