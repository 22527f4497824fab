import type { EKSClient } from '@aws-sdk/client-eks';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
// Only tokenKubeConfig (tests, the relay) uses it at load; everything a Lambda may run imports client-node
// on first use, so the Lambda packages leave it out (scripts/build.ts, docs/adr/0010-lambda-cold-start.md).
import { KubeConfig } from '@kubernetes/client-node';
import { type Clock, systemClock } from '../clock.ts';
import { type Config, requireSetting } from '../config/config.ts';
import type { DrainPort } from './drain-port.ts';
import { type AwsCredentials, EKS_TOKEN_REFRESH_MS, eksToken } from './eks-token.ts';
import type { IngressesPort } from './ingress-port.ts';
import type { IpamKubernetesPort } from './ipam-port.ts';
import type { LeaseReadPort } from './lbc-lease.ts';
import type { KubernetesPort } from './port.ts';
import { type CredentialSource, refreshingPort } from './refreshing-port.ts';
import type { TokenKubeConfig } from './rest-client.ts';
import { RestIngresses } from './rest-ingresses.ts';
import { RestDrain, RestIpam, RestKubernetes, RestServices } from './rest-ports.ts';
import {
  RestLeaseRead,
  RestPodGates,
  RestTargetGroupBindings,
  type TgbAdapterPort,
} from './rest-target-group-bindings.ts';
import type { ServicesPort } from './service-port.ts';
import { type StackBindingsPort, stackBindingsPort } from './stack-bindings.ts';
import { type PodGatesPort, type TgbControllerKube, tgbControllerKube } from './tgb-port.ts';

/**
 * How a Lambda reaches the Kubernetes API (docs/architecture.md, "Reaching the Kubernetes API from
 * Lambda"): an EKS IAM token, a service-account token from Secrets Manager, or a kubeconfig when run
 * locally. The handler calls `createKubernetesPort` once per container; credentials are fetched on
 * first use, kept for the container's life, and fetched again when the API server answers 401.
 */

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

/** The Ingress controller's Ingresses, IngressClasses and IngressClassParams, with the same access modes and credential refresh. */
export function createIngressesPort(config: Config, deps: KubernetesAccessDeps): IngressesPort {
  return createRestPort<IngressesPort>(
    config,
    deps,
    (kubeConfig) => new RestIngresses(kubeConfig),
    async () => {
      const { ClientNodeIngresses } = await import('./client-node-ingresses.ts');
      return (kubeConfig) => new ClientNodeIngresses(kubeConfig);
    },
  );
}

/** TargetGroupBindings (the binding controller's port, the stack bindings' writes), with the same modes and refresh. */
export function createTargetGroupBindingsPort(config: Config, deps: KubernetesAccessDeps): TgbAdapterPort {
  return createRestPort<TgbAdapterPort>(
    config,
    deps,
    (kubeConfig) => new RestTargetGroupBindings(kubeConfig),
    async () => {
      const { ClientNodeTargetGroupBindings } = await import('./client-node-target-group-bindings.ts');
      return (kubeConfig) => new ClientNodeTargetGroupBindings(kubeConfig);
    },
  );
}

/** The readiness gate's Pods and Namespaces, with the same access modes and credential refresh. */
export function createPodGatesPort(config: Config, deps: KubernetesAccessDeps): PodGatesPort {
  return createRestPort<PodGatesPort>(
    config,
    deps,
    (kubeConfig) => new RestPodGates(kubeConfig),
    async () => {
      const { ClientNodePodGates } = await import('./client-node-target-group-bindings.ts');
      return (kubeConfig) => new ClientNodePodGates(kubeConfig);
    },
  );
}

/** The reference controller's leader Lease (lbc-lease.ts), read with the same access modes and credential refresh. */
export function createLeaseReadPort(config: Config, deps: KubernetesAccessDeps): LeaseReadPort {
  return createRestPort<LeaseReadPort>(
    config,
    deps,
    (kubeConfig) => new RestLeaseRead(kubeConfig),
    async () => {
      const { ClientNodeLeaseRead } = await import('./client-node-target-group-bindings.ts');
      return (kubeConfig) => new ClientNodeLeaseRead(kubeConfig);
    },
  );
}

/** The binding controller's whole Kubernetes side (tgb-port.ts), each port as above. */
export function createTgbControllerKube(config: Config, deps: KubernetesAccessDeps): TgbControllerKube {
  const [services, nodes] = [createServicesPort(config, deps), createKubernetesPort(config, deps)];
  const [bindings, gates] = [createTargetGroupBindingsPort(config, deps), createPodGatesPort(config, deps)];
  return tgbControllerKube(bindings, gates, createLeaseReadPort(config, deps), services, nodes);
}

/** The Ingress and service controllers' stack bindings and the Pods behind them (stack-bindings.ts), as above. */
export function createStackBindingsPort(config: Config, deps: KubernetesAccessDeps): StackBindingsPort {
  return stackBindingsPort(createTargetGroupBindingsPort(config, deps), createPodGatesPort(config, deps));
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
