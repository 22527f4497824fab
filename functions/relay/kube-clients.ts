import { existsSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { KubernetesRestClient, type TokenKubeConfig } from '../../shared/k8s/rest-client.ts';
import { type ListWatchSource, RELAY_USER_AGENT } from './kube-source.ts';
import type { LeasePort } from './lease.ts';
import { RestLeases, RestListWatch } from './rest-source.ts';
import { RestTlsStore } from './webhook/rest-tls-store.ts';
import { RestTgbAdmissionReads, type TgbAdmissionReads } from './webhook/tgb-admission-reads.ts';
import type { TlsStoreNames, WebhookTlsStore } from './webhook/tls-store.ts';

/**
 * The relay's Kubernetes clients, and which ones a process gets. In a Pod (the Deployment): the
 * service-account token and CA over the small REST client (rest-source.ts, webhook/rest-tls-store.ts), so
 * @kubernetes/client-node is not loaded (its memory: deploy/relay/README.md, "Memory and throughput"). From a kubeconfig (local runs, `RELAY_KUBECONFIG`):
 * client-node, imported only then, for what kubeconfigs hold (exec plugins, client certificates, contexts).
 */

export interface KubeClients {
  source: ListWatchSource;
  leases: LeasePort;
  /** The webhooks' Secret and caBundles (self-signed mode only): built on first use. */
  tlsStore(names: TlsStoreNames): Promise<WebhookTlsStore>;
  /** The TargetGroupBinding webhooks' lists (RELAY_WEBHOOK_TGB): built on first use. */
  tgbAdmissionReads?(): TgbAdmissionReads;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The kubelet rotates the projected token; it is read again this often, as client-go does. */
const TOKEN_REREAD_MS = 60_000;

/** Clients over the REST client for a server, CA and token (in-cluster, or the bench and tests). */
export function restClients(kubeConfig: TokenKubeConfig): KubeClients {
  const client = new KubernetesRestClient(kubeConfig, RELAY_USER_AGENT);
  return {
    source: new RestListWatch(client),
    leases: new RestLeases(client),
    tlsStore: async (names) => new RestTlsStore(client, names),
    tgbAdmissionReads: () => new RestTgbAdmissionReads(client),
  };
}

/**
 * The Pod's own credentials, as client-go's rest.InClusterConfig reads them: KUBERNETES_SERVICE_HOST and
 * _PORT, the service account's CA, and its token file, read again every minute.
 * https://kubernetes.io/docs/tasks/run-application/access-api-from-pod/#directly-accessing-the-rest-api
 */
export function inClusterConfig(
  env: Record<string, string | undefined>,
  read: (path: string) => string = (p) => readFileSync(p, 'utf8'),
  now: () => number = Date.now,
  dir = SERVICE_ACCOUNT_DIR,
): TokenKubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error('in a Pod without KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT: no API server to talk to');
  }
  const tokenFile = join(dir, 'token');
  let token = read(tokenFile).trim();
  let readAt = now();
  return {
    server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    caData: Buffer.from(read(join(dir, 'ca.crt'))).toString('base64'),
    token,
    readToken: () => {
      if (now() - readAt >= TOKEN_REREAD_MS) {
        readAt = now();
        try {
          token = read(tokenFile).trim();
        } catch {
          // Keep the last token: the kubelet replaces the file atomically, a failed read is momentary.
        }
      }
      return token;
    },
  };
}

/**
 * Where the relay finds the API server, in client-node's `loadFromDefault` order: RELAY_KUBECONFIG,
 * then $KUBECONFIG, then ~/.kube/config (all kubeconfig mode), then the service account (in-cluster).
 */
export function kubeconfigPath(
  settings: { RELAY_KUBECONFIG?: string },
  env: Record<string, string | undefined>,
  exists: (path: string) => boolean = existsSync,
  dir = SERVICE_ACCOUNT_DIR,
): { mode: 'kubeconfig'; path?: string } | { mode: 'in-cluster' } {
  if (settings.RELAY_KUBECONFIG) return { mode: 'kubeconfig', path: settings.RELAY_KUBECONFIG };
  if (env.KUBECONFIG) return { mode: 'kubeconfig' };
  if (env.HOME && exists(join(env.HOME, '.kube', 'config'))) return { mode: 'kubeconfig' };
  if (exists(join(dir, 'token'))) return { mode: 'in-cluster' };
  return { mode: 'kubeconfig' };
}

/** The clients for this process (see `kubeconfigPath`). */
export async function loadKubeClients(
  settings: { RELAY_KUBECONFIG?: string },
  env: Record<string, string | undefined> = process.env,
): Promise<KubeClients> {
  const where = kubeconfigPath(settings, env);
  if (where.mode === 'in-cluster') return restClients(inClusterConfig(env));
  const { clientNodeClients, loadKubeConfig } = await import('./kubeconfig-clients.ts');
  return clientNodeClients(loadKubeConfig(where.path));
}
