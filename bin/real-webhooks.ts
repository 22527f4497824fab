// @peculiar/x509 resolves its ASN.1 classes through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import { lookup } from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthenticationV1Api, dumpYaml, type KubeConfig, loadAllYaml } from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';
import { DEFAULT_CONTROLLER_USERNAMES } from '../functions/relay/config.ts';
import type { ListWatchSource } from '../functions/relay/kube-source.ts';
import { Registry } from '../functions/relay/prometheus.ts';
import { type AdmissionWebhooks, startAdmissionWebhooks } from '../functions/relay/webhook/start.ts';
import { systemClock } from '../shared/clock.ts';
import { errorMessage } from '../shared/errors.ts';
import type { Log } from '../shared/observability/log.ts';

/**
 * The IP address manager's Pod admission webhooks (functions/relay/webhook/), served by `npm start -- --real
 * --ipam --webhook-port PORT` through the relay's own entry point, for an API server that reaches this machine by
 * URL. The serving certificate is made here, self-signed for the name or address the API server uses (an IP
 * address gets an IP SAN, which the API server's Go client requires for an address), and served in the relay's
 * cert-manager mode from a private directory. The two webhook configurations are those of
 * deploy/relay/webhook.yaml with `clientConfig.url` and the certificate as `caBundle` instead of the Service.
 * https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#url
 */

const MANIFEST = new URL('../deploy/relay/webhook.yaml', import.meta.url);
/** Named apart from the relay's, so that applying them never replaces a deployed relay's configurations. */
export const LOCAL_CONFIGURATION = 'serverless-ccm-ipam-webhook-local';
const LIFETIME_MS = 30 * 24 * 60 * 60 * 1000;
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

x509.cryptoProvider.set(globalThis.crypto);

export interface LocalWebhookOptions {
  port: number;
  /** The name or address the API server reaches this machine at; default: this machine's hostname. */
  host?: string;
  /** The API server's URL, to say whether it can reach `host`. */
  apiServer: string;
  /** Who may write the Pod address annotation (the validating webhook): the identity the local IPAM runs as. */
  controllerUsernames: readonly string[];
  /** The relay's list and watch: the webhooks act while the VPC CNI ConfigMap turns Windows IPAM on. */
  source: ListWatchSource;
  log: Log;
}

export interface LocalWebhooks {
  /** `https://host:port`. */
  base: string;
  /** The certificate the API server must trust (PEM). */
  caBundle: string;
  /** The MutatingWebhookConfiguration and ValidatingWebhookConfiguration to apply, as YAML. */
  configurations: string;
  /** Whether the API server can reach the webhooks, as far as this machine can tell. */
  reachability: string;
  /** Admission reviews answered so far, for the summary. */
  describe(): string;
  close(): Promise<void>;
}

const isIp = (host: string) => /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(':');
const isLoopback = (address: string) => address.startsWith('127.') || address === '::1';
const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);

/** A self-signed serving certificate for `host`: its own CA, the one the configurations' caBundle names. */
async function selfSigned(host: string, now: number): Promise<{ cert: string; key: string }> {
  const keys = await globalThis.crypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
  const name = isIp(host) ? { type: 'ip' as const, value: host } : { type: 'dns' as const, value: host };
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(8))).toString('hex'),
    name: `CN=serverless-ccm-local-webhook`,
    notBefore: new Date(now - 60 * 60 * 1000),
    notAfter: new Date(now + LIFETIME_MS),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([name]),
    ],
  });
  const pkcs8 = await globalThis.crypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { cert: cert.toString('pem'), key: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
}

interface WebhookConfiguration {
  kind: string;
  metadata: { name: string };
  webhooks: { clientConfig: { service?: { path?: string }; url?: string; caBundle?: string } }[];
}

/** deploy/relay/webhook.yaml's two configurations, each webhook's Service swapped for `base` + its path. */
export function localConfigurations(base: string, caBundle: string): WebhookConfiguration[] {
  const documents = loadAllYaml(readFileSync(MANIFEST, 'utf8')) as WebhookConfiguration[];
  return documents
    .filter((d) => d.kind.endsWith('WebhookConfiguration'))
    .map((d) => ({
      ...d,
      metadata: { ...d.metadata, name: LOCAL_CONFIGURATION },
      webhooks: d.webhooks.map((w) => ({
        ...w,
        clientConfig: {
          url: `${base}${w.clientConfig.service?.path ?? '/'}`,
          caBundle: Buffer.from(caBundle).toString('base64'),
        },
      })),
    }));
}

/** An AdmissionReview of a Pod, as the API server posts it to a webhook (`request` adds to and overrides the Pod's). */
export function podReview(request: { uid: string; operation: string } & Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      ...request,
    },
  });
}

/** A Pod that selects Windows Nodes, as the API server would send it to the mutating webhook. */
function probeReview(): string {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'probe', namespace: 'default' },
    spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [{ name: 'c', image: 'probe' }] },
  };
  return podReview({
    uid: 'local-probe',
    operation: 'CREATE',
    namespace: 'default',
    object: pod,
    userInfo: { username: 'local-probe' },
  });
}

/** POSTs `body` to `url`, trusting only `ca`, as the API server would; resolves with the parsed answer. */
export function postReview(url: string, body: string, ca: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json' }, timeout: 5_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
          } catch {
            resolve({ status: res.statusCode ?? 0, body: text });
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Whether the API server can reach the webhooks: it cannot when this machine cannot (the URL's name does not
 * resolve, nothing answers, the certificate does not fit the name), nor when the URL names this machine's loopback
 * address and the API server runs elsewhere. Otherwise it can as far as this machine can tell; the summary's count of
 * answered reviews says whether it does.
 */
async function reachability(base: string, host: string, apiServer: string, ca: string): Promise<string> {
  const url = `${base}/mutate-v1-pod`;
  try {
    const answer = await postReview(url, probeReview(), ca);
    // Patched or not (that is the ConfigMap's enable-windows-ipam), an answer to the review is what counts.
    const uid = (answer.body as { response?: { uid?: string } }).response?.uid;
    if (answer.status !== 200 || uid !== 'local-probe') return `cannot be reached: ${url} answered ${answer.status}`;
  } catch (err) {
    return `cannot be reached: ${url} does not answer from this machine (${errorMessage(err)}), so the API server cannot reach it either`;
  }
  const api = new URL(apiServer).hostname.replace(/^\[|\]$/g, '');
  const [self, server] = await Promise.all(
    [host, api].map((h) =>
      isIp(h)
        ? Promise.resolve(h)
        : lookup(h).then(
            (r) => r.address,
            () => h,
          ),
    ),
  );
  if (isLoopback(self!) && !isLoopback(server!)) {
    return `cannot be reached by the API server (${apiServer}): ${host} is this machine's loopback address; pass --webhook-host with a name or address the API server reaches this machine at`;
  }
  return `answers at ${base} from this machine; the API server (${apiServer}) must reach ${host}:${new URL(base).port || 443}`;
}

/** The username the kubeconfig's credentials have on the API server (SelfSubjectReview), when it says. */
async function whoAmI(kubeConfig: KubeConfig): Promise<string | undefined> {
  try {
    const review = await kubeConfig
      .makeApiClient(AuthenticationV1Api)
      .createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
    return review.status?.userInfo?.username;
  } catch {
    return undefined;
  }
}

/** Records the relay's admission counter as it registers, to count the answers for the summary. */
class AdmissionCount extends Registry {
  admissions: { total(): number } | undefined;
  override register<M extends Parameters<Registry['register']>[0]>(metric: M): M {
    const named = metric as unknown as { name?: string; total?(): number };
    if (named.name === 'relay_admissions_total') this.admissions = named as { total(): number };
    return super.register(metric);
  }
}

export async function startLocalWebhooks(options: LocalWebhookOptions): Promise<LocalWebhooks> {
  const host = options.host ?? hostname();
  const dir = mkdtempSync(join(tmpdir(), 'serverless-ccm-webhook-'));
  const tls = await selfSigned(host, systemClock.now());
  writeFileSync(join(dir, 'tls.crt'), tls.cert, { mode: 0o600 });
  writeFileSync(join(dir, 'tls.key'), tls.key, { mode: 0o600 });
  const registry = new AdmissionCount();
  let served: AdmissionWebhooks;
  try {
    served = await startAdmissionWebhooks(
      {
        port: options.port,
        // The relay's cert-manager mode: a directory it only reads. The Service, Secret and refresh are unused.
        mode: 'cert-manager',
        certDir: dir,
        pollMs: 60_000,
        refreshMs: 60_000,
        namespace: 'kube-system',
        service: 'local',
        secret: 'local',
        configuration: LOCAL_CONFIGURATION,
        controllerUsernames: options.controllerUsernames,
      },
      {
        tlsStore: () => {
          throw new Error('the local webhooks serve their own certificate');
        },
        log: options.log,
        clock: systemClock,
        registry,
        source: options.source,
      },
    );
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const base = `https://${urlHost(host)}:${served.port()}`;
  const configurations = localConfigurations(base, tls.cert)
    .map((c) => dumpYaml(c))
    .join('---\n');
  return {
    base,
    caBundle: tls.cert,
    configurations,
    reachability: await reachability(base, host, options.apiServer, tls.cert),
    describe: () => `${base}: ${registry.admissions?.total() ?? 0} admission reviews answered`,
    close: async () => {
      await served.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `--webhook-port`: serve the webhooks, print the configurations to apply (and where they are written), and say
 * whether the API server can reach them. The validating webhook lets the kubeconfig's user write the Pod address
 * annotation, since the local IP address manager writes it as that user.
 */
export async function serveWebhooks(
  flags: { port: number; host?: string },
  kubeConfig: KubeConfig,
  source: ListWatchSource,
  log: Log,
): Promise<LocalWebhooks> {
  const me = await whoAmI(kubeConfig);
  if (!me) {
    log.warn(
      `the API server did not say who the kubeconfig's user is (SelfSubjectReview): the validating webhook lets only ${DEFAULT_CONTROLLER_USERNAMES.join(', ')} write Pod addresses`,
    );
  }
  const webhooks = await startLocalWebhooks({
    ...flags,
    apiServer: kubeConfig.getCurrentCluster()?.server ?? '',
    controllerUsernames: [...DEFAULT_CONTROLLER_USERNAMES, ...(me ? [me] : [])],
    source,
    log,
  });
  const file = join(tmpdir(), `${LOCAL_CONFIGURATION}.yaml`);
  writeFileSync(file, webhooks.configurations);
  console.log(
    `\nadmission webhooks: ${webhooks.reachability}\napply them with: kubectl apply -f ${file}\n\n${webhooks.configurations}`,
  );
  if (webhooks.reachability.startsWith('cannot')) log.warn(`admission webhooks ${webhooks.reachability}`);
  return webhooks;
}
