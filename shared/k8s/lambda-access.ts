import { Sha256 } from '@aws-crypto/sha256-js';
import type { EKSClient } from '@aws-sdk/client-eks';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { formatUrl } from '@aws-sdk/util-format-url';
// Only tokenKubeConfig (tests, the relay) uses it at load; everything a Lambda may run imports client-node
// on first use, so the Lambda packages leave it out (scripts/build.ts, docs/adr/0010-lambda-cold-start.md).
import { KubeConfig } from '@kubernetes/client-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { type Clock, systemClock } from '../clock.ts';
import { type Config, requireSetting } from '../config/config.ts';
import type { DrainPort } from './drain-port.ts';
import { KubernetesApiError } from './errors.ts';
import type { IpamKubernetesPort } from './ipam-port.ts';
import type { KubernetesPort } from './port.ts';
import type { TokenKubeConfig } from './rest-client.ts';
import { RestDrain, RestIpam, RestKubernetes, RestServices } from './rest-ports.ts';
import type { ServicesPort } from './service-port.ts';

/**
 * How a Lambda reaches the Kubernetes API (docs/architecture.md, "Reaching the Kubernetes API from
 * Lambda"): an EKS IAM token, a service-account token from Secrets Manager, or a kubeconfig when run
 * locally. The handler calls `createKubernetesPort` once per container; credentials are fetched on
 * first use, kept for the container's life, and fetched again when the API server answers 401.
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export interface ClusterAccess {
  /** https:// URL of the API server. */
  endpoint: string;
  /** Base64 PEM CA bundle of the API server. */
  caData: string;
}

/** The outside world of this module, injected so tests use fakes. */
export interface KubernetesAccessDeps {
  clock: Clock;
  /** The SecretString of a Secrets Manager secret. */
  readSecret(secretId: string): Promise<string>;
  /** The Lambda role's credentials, used to sign the EKS token. */
  awsCredentials(): Promise<AwsCredentials>;
  /** `eks:DescribeCluster`, for an endpoint or CA that configuration does not give. */
  describeCluster(clusterName: string): Promise<ClusterAccess>;
  /** kubeconfig mode; defaults to `KubeConfig.loadFromDefault()` ($KUBECONFIG, ~/.kube/config, in-cluster). */
  loadDefaultKubeConfig?(): KubeConfig;
}

/** Credentials could not be obtained (a missing or malformed secret, DescribeCluster failed). */
export class KubernetesAccessError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubernetesAccessError';
  }
}

/**
 * EKS validates the token for 15 minutes after its signing time; a new one is minted after 14 so a
 * request never leaves with a token about to expire.
 * https://docs.aws.amazon.com/eks/latest/userguide/cluster-auth.html
 */
export const EKS_TOKEN_REFRESH_MS = 14 * 60 * 1000;

const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** The header that binds the presigned URL to one cluster: a token for cluster A is refused by cluster B. */
const CLUSTER_ID_HEADER = 'x-k8s-aws-id';

export interface EksTokenInput {
  clusterName: string;
  region: string;
  credentials: AwsCredentials;
  /** Signing time (ms since the epoch or a Date). */
  now: number | Date;
}

/**
 * An EKS bearer token: `k8s-aws-v1.` + unpadded base64url of a SigV4-presigned STS
 * `GetCallerIdentity` URL whose signed headers include `x-k8s-aws-id: <cluster>`. The API server's
 * authenticator calls that URL (sending the header) to learn the caller's IAM identity, then maps it
 * through the cluster's access entries.
 * https://docs.aws.amazon.com/eks/latest/userguide/cluster-auth.html
 * https://github.com/kubernetes-sigs/aws-iam-authenticator#api-authorization-from-outside-a-cluster
 */
export async function eksToken({ clusterName, region, credentials, now }: EksTokenInput): Promise<string> {
  const hostname = stsHostname(region);
  const signer = new SignatureV4({ credentials, region, service: 'sts', sha256: Sha256 });
  const request = new HttpRequest({
    method: 'GET',
    protocol: 'https:',
    hostname,
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { host: hostname, [CLUSTER_ID_HEADER]: clusterName },
  });
  // 60 s is what the authenticator expects of X-Amz-Expires; it accepts the token for 15 minutes
  // after X-Amz-Date regardless.
  const presigned = await signer.presign(request, { expiresIn: 60, signingDate: new Date(now) });
  return EKS_TOKEN_PREFIX + Buffer.from(formatUrl(presigned)).toString('base64url');
}

/**
 * Always the real regional STS host, never AWS_ENDPOINT_URL(_STS): the EKS API server, not this
 * Lambda, calls the URL, and its authenticator accepts only genuine STS hosts.
 * https://docs.aws.amazon.com/general/latest/gr/sts.html
 */
export function stsHostname(region: string): string {
  return region.startsWith('cn-') ? `sts.${region}.amazonaws.com.cn` : `sts.${region}.amazonaws.com`;
}

/**
 * The KubernetesPort (Nodes, Events) for this configuration, refreshing credentials on 401 in `token` and
 * `eks` modes. The Lambdas' ports go over the small REST client (`rest-ports.ts`); kubeconfig mode (local
 * runs: exec plugins, OIDC, client certificates) over client-node, loaded on first use.
 */
export function createKubernetesPort(config: Config, deps: KubernetesAccessDeps): KubernetesPort {
  return createRestPort<KubernetesPort>(
    config,
    deps,
    (kubeConfig) => new RestKubernetes(kubeConfig, { clock: deps.clock }),
    async () => {
      const { ClientNodeKubernetes } = await import('./client-node-adapter.ts');
      return (kubeConfig) => new ClientNodeKubernetes(kubeConfig, { clock: deps.clock });
    },
  );
}

/** The IP address manager's Pod and ConfigMap port, with the same access modes and credential refresh. */
export function createIpamKubernetesPort(config: Config, deps: KubernetesAccessDeps): IpamKubernetesPort {
  return createRestPort<IpamKubernetesPort>(
    config,
    deps,
    (kubeConfig) => new RestIpam(kubeConfig),
    async () => {
      const { ClientNodeIpam } = await import('./client-node-ipam.ts');
      return (kubeConfig) => new ClientNodeIpam(kubeConfig);
    },
  );
}

/** The service controller's Services and EndpointSlices, with the same access modes and credential refresh. */
export function createServicesPort(config: Config, deps: KubernetesAccessDeps): ServicesPort {
  return createRestPort<ServicesPort>(
    config,
    deps,
    (kubeConfig) => new RestServices(kubeConfig),
    async () => {
      const { ClientNodeServices } = await import('./client-node-services.ts');
      return (kubeConfig) => new ClientNodeServices(kubeConfig);
    },
  );
}

/** The interruption controller's evictions and cordons, with the same access modes and credential refresh. */
export function createDrainPort(config: Config, deps: KubernetesAccessDeps): DrainPort {
  return createRestPort<DrainPort>(
    config,
    deps,
    (kubeConfig) => new RestDrain(kubeConfig),
    async () => {
      const { ClientNodeDrain } = await import('./client-node-drain.ts');
      return (kubeConfig) => new ClientNodeDrain(kubeConfig);
    },
  );
}

/**
 * A port over the REST client in `token` and `eks` modes (credentials refreshed when due and on a 401),
 * and over client-node in kubeconfig mode, whose module `clientNodePort` imports on first use so a
 * Lambda's cold start never loads it.
 */
export function createRestPort<P extends object>(
  config: Config,
  deps: KubernetesAccessDeps,
  portFor: (kubeConfig: TokenKubeConfig) => P,
  clientNodePort: () => Promise<(kubeConfig: KubeConfig) => P>,
): P {
  switch (config.KUBERNETES_AUTH_MODE) {
    case 'kubeconfig':
      return lazyPort(async () => {
        const [build, kubeConfig] = await Promise.all([
          clientNodePort(),
          deps.loadDefaultKubeConfig?.() ?? loadDefaultKubeConfig(),
        ]);
        return build(kubeConfig);
      });
    case 'token':
      return refreshingPort(tokenSecretSource(config, deps), deps.clock, portFor);
    case 'eks':
      return refreshingPort(eksSource(config, deps), deps.clock, portFor);
  }
}

/**
 * Any client-node backed port for this configuration: built from the default kubeconfig, or from credentials
 * refreshed when due and on a 401. No caller today: every Lambda port above is on the REST client
 * (`createRestPort`), and the relay builds its own clients (functions/relay/kube-clients.ts).
 */
export function createPort<P extends object>(
  config: Config,
  deps: KubernetesAccessDeps,
  portFor: (kubeConfig: KubeConfig) => P,
): P {
  switch (config.KUBERNETES_AUTH_MODE) {
    case 'kubeconfig':
      // Exec plugins and OIDC refresh themselves inside client-node; nothing to add here.
      return lazyPort(async () => portFor(deps.loadDefaultKubeConfig?.() ?? (await loadDefaultKubeConfig())));
    case 'token':
      return refreshingPort(asClientNodeKubeConfig(tokenSecretSource(config, deps)), deps.clock, portFor);
    case 'eks':
      return refreshingPort(asClientNodeKubeConfig(eksSource(config, deps)), deps.clock, portFor);
  }
}

function asClientNodeKubeConfig(source: CredentialSource): CredentialSource<KubeConfig> {
  return async () => {
    const [{ kubeConfig, refreshAt }, clientNode] = await Promise.all([source(), import('@kubernetes/client-node')]);
    const { server, caData, token } = kubeConfig;
    return { kubeConfig: buildKubeConfig(clientNode.KubeConfig, { endpoint: server, caData }, token), refreshAt };
  };
}

/** A port built on first use; a failed build is tried again by the next call. */
function lazyPort<P extends object>(load: () => Promise<P>): P {
  let pending: Promise<P> | undefined;
  return new Proxy({} as P, {
    get: (_target, method) =>
      async function callOnceLoaded(...args: unknown[]) {
        pending ??= load();
        const loading = pending;
        let port: P;
        try {
          port = await loading;
        } catch (err) {
          if (pending === loading) pending = undefined;
          throw err;
        }
        return (port as Record<PropertyKey, (...a: unknown[]) => Promise<unknown>>)[method]!(...args);
      },
  });
}

/** The real ports: Secrets Manager, the default credential chain, EKS. Clients are made on first use. */
export function awsKubernetesAccessDeps(config: Config): KubernetesAccessDeps {
  let secrets: SecretsManagerClient | undefined;
  let eks: EKSClient | undefined;
  const credentials = defaultProvider();
  return {
    clock: systemClock,
    async readSecret(secretId) {
      // Loaded on first use: a container needs either this client or the EKS one, never both, and
      // each adds tens of milliseconds to a cold start when evaluated at import.
      const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
      secrets ??= new SecretsManagerClient({ region: config.AWS_REGION });
      const out = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
      if (out.SecretString === undefined) {
        throw new KubernetesAccessError(
          `Secrets Manager secret "${secretId}" has no SecretString (binary secrets are not supported)`,
        );
      }
      return out.SecretString;
    },
    awsCredentials: () => credentials(),
    async describeCluster(clusterName) {
      const { DescribeClusterCommand, EKSClient } = await import('@aws-sdk/client-eks');
      eks ??= new EKSClient({ region: config.AWS_REGION });
      const { cluster } = await eks.send(new DescribeClusterCommand({ name: clusterName }));
      const endpoint = cluster?.endpoint;
      const caData = cluster?.certificateAuthority?.data;
      if (!endpoint || !caData) {
        throw new KubernetesAccessError(
          `EKS cluster "${clusterName}" has no endpoint or CA yet (status ${cluster?.status ?? 'unknown'})`,
        );
      }
      return { endpoint, caData };
    },
  };
}

/** A KubeConfig for one API server, CA and bearer token. */
export function tokenKubeConfig(access: ClusterAccess, token: string): KubeConfig {
  return buildKubeConfig(KubeConfig, access, token);
}

function buildKubeConfig(KubeConfigClass: typeof KubeConfig, access: ClusterAccess, token: string): KubeConfig {
  const kubeConfig = new KubeConfigClass();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'cluster', server: access.endpoint, caData: access.caData, skipTLSVerify: false }],
    users: [{ name: 'serverless-ccm', token }],
    contexts: [{ name: 'serverless-ccm', cluster: 'cluster', user: 'serverless-ccm' }],
    currentContext: 'serverless-ccm',
  });
  return kubeConfig;
}

async function loadDefaultKubeConfig(): Promise<KubeConfig> {
  const clientNode = await import('@kubernetes/client-node');
  const kubeConfig = new clientNode.KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}

/**
 * Credentials for one stretch of time: a kubeconfig (the REST client's server, CA and token, or
 * client-node's KubeConfig), and when to stop using it (Infinity: until a 401).
 */
export interface Credentials<K = TokenKubeConfig> {
  kubeConfig: K;
  refreshAt: number;
}

export type CredentialSource<K = TokenKubeConfig> = () => Promise<Credentials<K>>;

/**
 * `token` mode: a Secrets Manager secret holding `{"token": "<service-account token>", "ca": "<base64
 * PEM CA bundle>"}`. `ca` may be left out when KUBERNETES_CA_DATA is set.
 */
function tokenSecretSource(config: Config, deps: KubernetesAccessDeps): CredentialSource {
  const purpose = 'when KUBERNETES_AUTH_MODE=token';
  const secretId = requireSetting(config, 'KUBERNETES_TOKEN_SECRET_ID', purpose);
  const endpoint = requireSetting(config, 'KUBERNETES_API_ENDPOINT', purpose);
  const expected = '{"token": "<service-account token>", "ca": "<base64 PEM CA bundle>"}';
  return async () => {
    let text: string;
    try {
      text = await deps.readSecret(secretId);
    } catch (err) {
      throw new KubernetesAccessError(`reading Secrets Manager secret "${secretId}": ${String(err)}`, { cause: err });
    }
    let fields: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new TypeError('not an object');
      fields = parsed as Record<string, unknown>;
    } catch {
      // Never echo the secret's text into an error.
      throw new KubernetesAccessError(`Secrets Manager secret "${secretId}" is not a JSON object ${expected}`);
    }
    if (typeof fields.token !== 'string' || fields.token.trim() === '') {
      throw new KubernetesAccessError(
        `Secrets Manager secret "${secretId}" has no "token" field (expected ${expected})`,
      );
    }
    const ca = typeof fields.ca === 'string' && fields.ca.trim() !== '' ? fields.ca.trim() : config.KUBERNETES_CA_DATA;
    if (!ca) {
      throw new KubernetesAccessError(
        `Secrets Manager secret "${secretId}" has no "ca" field and KUBERNETES_CA_DATA is not set (expected ${expected})`,
      );
    }
    // A PEM pasted as is (not base64) is accepted too: KubeConfig wants base64.
    const caData = ca.startsWith('-----BEGIN') ? Buffer.from(ca).toString('base64') : ca;
    return {
      kubeConfig: { server: endpoint, caData, token: fields.token.trim() },
      refreshAt: Number.POSITIVE_INFINITY,
    };
  };
}

/**
 * `eks` mode. Endpoint and CA come from configuration; what is missing comes from one
 * `eks:DescribeCluster` per container (retried on the next use if it failed).
 */
function eksSource(config: Config, deps: KubernetesAccessDeps): CredentialSource {
  const clusterName = config.EKS_CLUSTER_NAME ?? config.CLUSTER_NAME;
  let described: Promise<ClusterAccess> | undefined;
  const clusterAccess = async (): Promise<ClusterAccess> => {
    if (config.KUBERNETES_API_ENDPOINT && config.KUBERNETES_CA_DATA) {
      return { endpoint: config.KUBERNETES_API_ENDPOINT, caData: config.KUBERNETES_CA_DATA };
    }
    described ??= deps.describeCluster(clusterName);
    const pending = described;
    try {
      const fromEks = await pending;
      return {
        endpoint: config.KUBERNETES_API_ENDPOINT ?? fromEks.endpoint,
        caData: config.KUBERNETES_CA_DATA ?? fromEks.caData,
      };
    } catch (err) {
      if (described === pending) described = undefined;
      throw new KubernetesAccessError(`describing EKS cluster "${clusterName}": ${String(err)}`, { cause: err });
    }
  };
  return async () => {
    const access = await clusterAccess();
    const credentials = await deps.awsCredentials();
    const now = deps.clock.now();
    const token = await eksToken({ clusterName, region: config.AWS_REGION, credentials, now });
    // Role credentials that expire before the token does show up as a 401, which mints a new token.
    return {
      kubeConfig: { server: access.endpoint, caData: access.caData, token },
      refreshAt: now + EKS_TOKEN_REFRESH_MS,
    };
  };
}

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
