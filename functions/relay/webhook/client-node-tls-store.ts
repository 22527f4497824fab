import { AdmissionregistrationV1Api, CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { apiConfiguration, translateError } from '../../../shared/k8s/client-node-adapter.ts';
import { isNotFound } from '../../../shared/k8s/errors.ts';
import { RELAY_USER_AGENT } from '../kube-source.ts';
import {
  type TlsSecret,
  type TlsStoreNames,
  tlsSecretObject,
  type WebhookCaBundle,
  type WebhookTlsStore,
} from './tls-store.ts';

/**
 * WebhookTlsStore over client-node: one Secret by name, and the caBundle of the two webhook
 * configurations by name (deploy/relay/rbac-webhook.yaml grants exactly these). caBundles are
 * written with a JSON Patch per webhook index, guarded by a `test` of the webhook's name, so a
 * configuration re-applied in between with other webhooks fails the patch instead of mislabelling one.
 */
export class ClientNodeTlsStore implements WebhookTlsStore {
  private readonly core: CoreV1Api;
  private readonly admission: AdmissionregistrationV1Api;

  constructor(
    kubeConfig: KubeConfig,
    private readonly names: TlsStoreNames,
  ) {
    const configuration = apiConfiguration(kubeConfig, RELAY_USER_AGENT);
    this.core = new CoreV1Api(configuration);
    this.admission = new AdmissionregistrationV1Api(configuration);
  }

  async getSecret(): Promise<TlsSecret | undefined> {
    try {
      return fromSecret(
        await this.core.readNamespacedSecret({ namespace: this.names.namespace, name: this.names.secret }),
      );
    } catch (err) {
      const translated = translateError(err);
      if (isNotFound(translated)) return undefined;
      throw translated;
    }
  }

  async createSecret(secret: TlsSecret): Promise<TlsSecret> {
    try {
      return fromSecret(
        await this.core.createNamespacedSecret({ namespace: this.names.namespace, body: this.toSecret(secret) }),
      );
    } catch (err) {
      throw translateError(err);
    }
  }

  async updateSecret(secret: TlsSecret): Promise<TlsSecret> {
    try {
      return fromSecret(
        await this.core.replaceNamespacedSecret({
          namespace: this.names.namespace,
          name: this.names.secret,
          body: this.toSecret(secret),
        }),
      );
    } catch (err) {
      throw translateError(err);
    }
  }

  async caBundles(): Promise<WebhookCaBundle[]> {
    const name = this.names.configuration;
    try {
      const [mutating, validating] = await Promise.all([
        this.admission.readMutatingWebhookConfiguration({ name }),
        this.admission.readValidatingWebhookConfiguration({ name }),
      ]);
      return [
        ...(mutating.webhooks ?? []).map((w) => ({
          configuration: 'MutatingWebhookConfiguration' as const,
          webhook: w.name,
          caBundle: decode(w.clientConfig.caBundle),
        })),
        ...(validating.webhooks ?? []).map((w) => ({
          configuration: 'ValidatingWebhookConfiguration' as const,
          webhook: w.name,
          caBundle: decode(w.clientConfig.caBundle),
        })),
      ];
    } catch (err) {
      throw translateError(err);
    }
  }

  async setCaBundles(bundle: string): Promise<void> {
    const name = this.names.configuration;
    const value = Buffer.from(bundle).toString('base64');
    const patchFor = (webhooks: { name: string }[]) =>
      webhooks.flatMap((w, i) => [
        { op: 'test', path: `/webhooks/${i}/name`, value: w.name },
        { op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value },
      ]);
    try {
      const mutating = await this.admission.readMutatingWebhookConfiguration({ name });
      if (mutating.webhooks?.length) {
        await this.admission.patchMutatingWebhookConfiguration({ name, body: patchFor(mutating.webhooks) });
      }
      const validating = await this.admission.readValidatingWebhookConfiguration({ name });
      if (validating.webhooks?.length) {
        await this.admission.patchValidatingWebhookConfiguration({ name, body: patchFor(validating.webhooks) });
      }
    } catch (err) {
      throw translateError(err);
    }
  }

  private toSecret(secret: TlsSecret): V1Secret {
    return tlsSecretObject(this.names, secret);
  }
}

function fromSecret(secret: V1Secret): TlsSecret {
  return {
    resourceVersion: secret.metadata?.resourceVersion,
    annotations: { ...(secret.metadata?.annotations ?? {}) },
    data: Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, decode(v)])),
  };
}

function decode(base64: string | undefined): string {
  return base64 ? Buffer.from(base64, 'base64').toString('utf8') : '';
}
