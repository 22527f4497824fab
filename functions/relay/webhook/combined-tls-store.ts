import type { TlsSecret, WebhookCaBundle, WebhookTlsStore } from './tls-store.ts';

/**
 * One Secret, several pairs of webhook configurations: the IPAM webhooks' and the TargetGroupBinding webhooks' are
 * applied (and left out) apart, but served by one server with one certificate, so every configuration served carries
 * its CA. The Secret is read and written through the first store; the caBundles of all of them are read and written.
 */
export function combinedTlsStore(stores: readonly WebhookTlsStore[]): WebhookTlsStore {
  const [primary] = stores;
  if (!primary) throw new Error('combining webhook TLS stores: none given');
  if (stores.length === 1) return primary;
  return {
    getSecret: (): Promise<TlsSecret | undefined> => primary.getSecret(),
    createSecret: (secret) => primary.createSecret(secret),
    updateSecret: (secret) => primary.updateSecret(secret),
    async caBundles(): Promise<WebhookCaBundle[]> {
      return (await Promise.all(stores.map((store) => store.caBundles()))).flat();
    },
    async setCaBundles(bundle: string): Promise<void> {
      for (const store of stores) await store.setCaBundles(bundle);
    },
  };
}
