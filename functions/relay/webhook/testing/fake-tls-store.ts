import { KubernetesApiError } from '../../../../shared/k8s/errors.ts';
import type { TlsSecret, WebhookCaBundle, WebhookTlsStore } from '../tls-store.ts';

/**
 * The Secret and the two webhook configurations in memory, with the API server's optimistic
 * concurrency (409 on a stale resourceVersion or an existing name), queued errors and call counts.
 * Several SelfSignedTls instances sharing one FakeTlsStore are the replicas.
 */
export class FakeTlsStore implements WebhookTlsStore {
  secret: TlsSecret | undefined;
  private revision = 0;
  bundles: WebhookCaBundle[];
  readonly calls = { getSecret: 0, createSecret: 0, updateSecret: 0, setCaBundles: 0 };
  private readonly errors: { method: keyof FakeTlsStore['calls']; error: Error }[] = [];
  /** Runs before the next createSecret or updateSecret takes effect: another replica's write in between. */
  beforeNextWrite: (() => void) | undefined;

  constructor(webhooks: { mutating: string[]; validating: string[] } = { mutating: ['m'], validating: ['v'] }) {
    this.bundles = [
      ...webhooks.mutating.map((webhook) => ({
        configuration: 'MutatingWebhookConfiguration' as const,
        webhook,
        caBundle: '',
      })),
      ...webhooks.validating.map((webhook) => ({
        configuration: 'ValidatingWebhookConfiguration' as const,
        webhook,
        caBundle: '',
      })),
    ];
  }

  reset(): void {
    this.secret = undefined;
    this.errors.length = 0;
    for (const b of this.bundles) b.caBundle = '';
    for (const key of Object.keys(this.calls) as (keyof FakeTlsStore['calls'])[]) this.calls[key] = 0;
  }

  failNext(method: keyof FakeTlsStore['calls'], error: Error): void {
    this.errors.push({ method, error });
  }

  /** Write the Secret as another client would (bumps the resourceVersion). */
  put(secret: Omit<TlsSecret, 'resourceVersion'>): void {
    this.secret = { ...structuredClone(secret), resourceVersion: String(++this.revision) };
  }

  async getSecret(): Promise<TlsSecret | undefined> {
    this.take('getSecret');
    return this.secret ? structuredClone(this.secret) : undefined;
  }

  async createSecret(secret: TlsSecret): Promise<TlsSecret> {
    this.take('createSecret');
    this.interleave();
    if (this.secret)
      throw new KubernetesApiError(409, 'AlreadyExists', 'secrets "serverless-ccm-webhook-tls" already exists');
    this.put(secret);
    return structuredClone(this.secret!);
  }

  async updateSecret(secret: TlsSecret): Promise<TlsSecret> {
    this.take('updateSecret');
    this.interleave();
    if (!this.secret) throw new KubernetesApiError(404, 'NotFound', 'secrets "serverless-ccm-webhook-tls" not found');
    if (secret.resourceVersion !== this.secret.resourceVersion) {
      throw new KubernetesApiError(
        409,
        'Conflict',
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    this.put(secret);
    return structuredClone(this.secret!);
  }

  async caBundles(): Promise<WebhookCaBundle[]> {
    return structuredClone(this.bundles);
  }

  async setCaBundles(bundle: string): Promise<void> {
    this.take('setCaBundles');
    for (const b of this.bundles) b.caBundle = bundle;
  }

  private take(method: keyof FakeTlsStore['calls']): void {
    this.calls[method]++;
    const index = this.errors.findIndex((e) => e.method === method);
    if (index >= 0) throw this.errors.splice(index, 1)[0]!.error;
  }

  private interleave(): void {
    const other = this.beforeNextWrite;
    this.beforeNextWrite = undefined;
    other?.();
  }
}
