import { isNotFound } from '../../../shared/k8s/errors.ts';
import { type KubernetesRestClient, path } from '../../../shared/k8s/rest-client.ts';
import {
  type TlsSecret,
  type TlsStoreNames,
  tlsSecretObject,
  type WebhookCaBundle,
  type WebhookTlsStore,
} from './tls-store.ts';

/** RFC 6902 JSON Patch (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/). */
const JSON_PATCH_TYPE = 'application/json-patch+json';

interface Secret {
  metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

interface WebhookConfiguration {
  webhooks?: { name: string; clientConfig?: { caBundle?: string } }[];
}

type ConfigurationKind = WebhookCaBundle['configuration'];

const CONFIGURATION_PATHS: Record<ConfigurationKind, string> = {
  MutatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
};

/**
 * WebhookTlsStore over the REST client, for a relay in a Pod (kube-clients.ts): the same requests as
 * client-node-tls-store.ts, the one a kubeconfig gets. One Secret by name, and the caBundle of the two
 * webhook configurations by name (deploy/relay/rbac-webhook.yaml grants exactly these). caBundles are
 * written with a JSON Patch per webhook index, guarded by a `test` of the webhook's name, so a configuration
 * re-applied in between with other webhooks fails the patch instead of mislabelling one.
 */
export class RestTlsStore implements WebhookTlsStore {
  constructor(
    private readonly client: KubernetesRestClient,
    private readonly names: TlsStoreNames,
  ) {}

  async getSecret(): Promise<TlsSecret | undefined> {
    try {
      return fromSecret(await this.client.send<Secret>({ method: 'GET', path: this.secretPath() }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async createSecret(secret: TlsSecret): Promise<TlsSecret> {
    const secrets = path('api', 'v1', 'namespaces', this.names.namespace, 'secrets');
    return fromSecret(await this.client.send<Secret>({ method: 'POST', path: secrets, body: this.toSecret(secret) }));
  }

  async updateSecret(secret: TlsSecret): Promise<TlsSecret> {
    return fromSecret(
      await this.client.send<Secret>({ method: 'PUT', path: this.secretPath(), body: this.toSecret(secret) }),
    );
  }

  async caBundles(): Promise<WebhookCaBundle[]> {
    const kinds = Object.keys(CONFIGURATION_PATHS) as ConfigurationKind[];
    const configurations = await Promise.all(kinds.map((kind) => this.configuration(kind)));
    return kinds.flatMap((kind, i) =>
      (configurations[i]!.webhooks ?? []).map((w) => ({
        configuration: kind,
        webhook: w.name,
        caBundle: decode(w.clientConfig?.caBundle),
      })),
    );
  }

  async setCaBundles(bundle: string): Promise<void> {
    const value = Buffer.from(bundle).toString('base64');
    for (const kind of Object.keys(CONFIGURATION_PATHS) as ConfigurationKind[]) {
      const webhooks = (await this.configuration(kind)).webhooks ?? [];
      if (webhooks.length === 0) continue;
      await this.client.send({
        method: 'PATCH',
        path: `${CONFIGURATION_PATHS[kind]}${path(this.names.configuration)}`,
        contentType: JSON_PATCH_TYPE,
        body: webhooks.flatMap((w, i) => [
          { op: 'test', path: `/webhooks/${i}/name`, value: w.name },
          { op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value },
        ]),
      });
    }
  }

  private configuration(kind: ConfigurationKind): Promise<WebhookConfiguration> {
    return this.client.send<WebhookConfiguration>({
      method: 'GET',
      path: `${CONFIGURATION_PATHS[kind]}${path(this.names.configuration)}`,
    });
  }

  private secretPath(): string {
    return path('api', 'v1', 'namespaces', this.names.namespace, 'secrets', this.names.secret);
  }

  private toSecret(secret: TlsSecret): object {
    return tlsSecretObject(this.names, secret);
  }
}

function fromSecret(secret: Secret | undefined): TlsSecret {
  return {
    resourceVersion: secret?.metadata?.resourceVersion,
    annotations: { ...(secret?.metadata?.annotations ?? {}) },
    data: Object.fromEntries(Object.entries(secret?.data ?? {}).map(([k, v]) => [k, decode(v)])),
  };
}

function decode(base64: string | undefined): string {
  return base64 ? Buffer.from(base64, 'base64').toString('utf8') : '';
}
