import type { Clock } from '../../../shared/clock.ts';
import { errorMessage } from '../../../shared/errors.ts';
import type { Log } from '../../../shared/observability/log.ts';
import type { ListWatchSource } from '../kube-source.ts';
import { Counter, type Registry } from '../prometheus.ts';
import { type CertificateDirectoryWatch, readKeyPair, watchCertificateDirectory } from './cert-directory.ts';
import { combinedTlsStore } from './combined-tls-store.ts';
import { WatchedIpamSwitch } from './ipam-switch.ts';
import { mutatePod } from './mutate-pod.ts';
import { mutatePodReadiness } from './mutate-pod-readiness.ts';
import { MUTATING_WEBHOOK, POD_READINESS_WEBHOOK, TGB_VALIDATING_WEBHOOK, VALIDATING_WEBHOOK } from './names.ts';
import { DEFAULT_SELF_SIGNED_OPTIONS, SelfSignedTls } from './self-signed-tls.ts';
import { type AdmissionCounter, type KeyPair, startWebhookServer, type Webhook, type WebhookServer } from './server.ts';
import type { TgbAdmissionReads } from './tgb-admission-reads.ts';
import type { WebhookTlsStore } from './tls-store.ts';
import { ControllerIdentities, validatePod } from './validate-pod.ts';
import { validateTargetGroupBinding } from './validate-tgb.ts';

/**
 * The admission webhooks as the relay process runs them: the HTTPS server, and the certificate source
 * of the configured mode. `self-signed`: every `refreshMs` each replica reconciles the Secret
 * (self-signed-tls.ts) and serves what it holds, so a standby follows a rotation. `cert-manager`: the
 * mounted directory is read and watched; nothing is written. Two pairs of webhooks, each with its own
 * configurations: IPAM's (the default), which watch the VPC CNI ConfigMap (ipam-switch.ts) and act on Windows Pods
 * only while Windows IPAM is on; and the TargetGroupBinding pair (`tgb`), which list bindings and Services at
 * admission (tgb-admission-reads.ts).
 */

export interface AdmissionWebhookSettings {
  port: number;
  mode: 'self-signed' | 'cert-manager';
  namespace: string;
  service: string;
  secret: string;
  /** The name of both the MutatingWebhookConfiguration and the ValidatingWebhookConfiguration (IPAM's). */
  configuration: string;
  /** Whether the IPAM webhooks are served (default true). */
  ipam?: boolean;
  /** The TargetGroupBinding webhooks, when served: the name of both their configurations. */
  tgb?: { configuration: string };
  certDir: string;
  controllerUsernames: readonly string[];
  /** self-signed: how often the Secret is read again (and the certificate renewed when due). */
  refreshMs: number;
  /** cert-manager: how often the directory is read, besides the watch. */
  pollMs: number;
  lifetimeMs?: number;
  promoteAfterMs?: number;
  host?: string;
}

export interface AdmissionWebhookDeps {
  /**
   * The Secret and the caBundles of one pair of configurations, by name (self-signed mode): asked for only in that
   * mode, once per pair served.
   */
  tlsStore: (configuration: string) => WebhookTlsStore | Promise<WebhookTlsStore>;
  /** The lists the TargetGroupBinding webhooks make: asked for only when they are served. */
  tgbReads?: () => TgbAdmissionReads;
  log: Log;
  clock: Clock;
  /** The relay's metrics registry: `relay_admissions_total` and `relay_windows_ipam_enabled` join it. */
  registry?: Registry;
  /** The relay's list and watch client: the VPC CNI ConfigMap is watched through it (ipam-switch.ts). */
  source: ListWatchSource;
}

export interface AdmissionWebhooks {
  /** The port the server listens on; undefined until the first certificate is in hand (self-signed). */
  port(): number | undefined;
  /** Resolves when the server listens. */
  ready: Promise<void>;
  close(): Promise<void>;
}

export function serviceDnsNames(service: string, namespace: string): string[] {
  return [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

export async function startAdmissionWebhooks(
  settings: AdmissionWebhookSettings,
  deps: AdmissionWebhookDeps,
): Promise<AdmissionWebhooks> {
  const { log } = deps;
  const admissions: AdmissionCounter = new Counter(
    'relay_admissions_total',
    'Admission reviews answered, by webhook and result: allowed, patched, denied, malformed (400), error (500)',
    ['webhook', 'result'],
  );
  deps.registry?.register(admissions);
  const { webhooks, ipam, configurations } = servedWebhooks(settings, deps);
  ipam?.start();
  let server: WebhookServer | undefined;
  const listen = async (tls: KeyPair) => {
    server = await startWebhookServer({ port: settings.port, host: settings.host, webhooks, tls, log, admissions });
    log.info('admission webhooks listening', { port: server.port, mode: settings.mode });
  };

  if (settings.mode === 'cert-manager') {
    // A missing or unreadable mount is a broken deployment: fail at start-up, naming the file.
    let initial: KeyPair;
    try {
      initial = readKeyPair(settings.certDir);
      await listen(initial);
    } catch (err) {
      await ipam?.stop();
      throw err;
    }
    const watch: CertificateDirectoryWatch = watchCertificateDirectory(
      settings.certDir,
      initial,
      (pair) => server!.setCertificate(pair),
      { pollMs: settings.pollMs, log },
    );
    return {
      port: () => server?.port,
      ready: Promise.resolve(),
      close: async () => {
        watch.stop();
        await ipam?.stop();
        await server?.close();
      },
    };
  }

  let store: WebhookTlsStore;
  try {
    store = combinedTlsStore(await Promise.all(configurations.map((name) => deps.tlsStore(name))));
  } catch (err) {
    await ipam?.stop();
    throw err;
  }
  const tls = new SelfSignedTls(
    {
      dnsNames: serviceDnsNames(settings.service, settings.namespace),
      lifetimeMs: settings.lifetimeMs ?? DEFAULT_SELF_SIGNED_OPTIONS.lifetimeMs,
      renewFraction: DEFAULT_SELF_SIGNED_OPTIONS.renewFraction,
      promoteAfterMs: settings.promoteAfterMs ?? DEFAULT_SELF_SIGNED_OPTIONS.promoteAfterMs,
    },
    {
      store,
      clock: deps.clock,
      log,
    },
  );
  let served: KeyPair | undefined;
  let stopped = false;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  // Until the first pass succeeds (RBAC not applied yet, API server away) nothing listens, and the
  // webhooks' failurePolicy Ignore lets Pods through; the relay itself keeps forwarding.
  const refresh = async () => {
    try {
      const pair = await tls.reconcile();
      if (stopped) return;
      if (!server) {
        await listen(pair);
        markReady();
      } else if (pair.cert !== served?.cert || pair.key !== served?.key) {
        server.setCertificate(pair);
        log.info('serving the renewed webhook certificate');
      }
      served = pair;
    } catch (err) {
      log.error('webhook certificate pass failed; trying again', { error: errorMessage(err) });
    }
  };
  let running: Promise<void> = refresh();
  const timer = setInterval(() => {
    running = running.then(refresh);
  }, settings.refreshMs);
  timer.unref();
  return {
    port: () => server?.port,
    ready,
    close: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
      await ipam?.stop();
      await server?.close();
    },
  };
}

/** The webhooks of the pairs served, the IPAM switch when IPAM's are, and the configurations whose caBundle is ours. */
function servedWebhooks(
  settings: AdmissionWebhookSettings,
  deps: AdmissionWebhookDeps,
): { webhooks: Webhook[]; ipam?: WatchedIpamSwitch; configurations: string[] } {
  const webhooks: Webhook[] = [];
  const configurations: string[] = [];
  let ipam: WatchedIpamSwitch | undefined;
  if (settings.ipam !== false) {
    const controller = new ControllerIdentities(settings.controllerUsernames);
    const on = new WatchedIpamSwitch(deps.source, { log: deps.log, registry: deps.registry });
    ipam = on;
    webhooks.push(
      { ...MUTATING_WEBHOOK, handle: (r) => mutatePod(r, on) },
      { ...VALIDATING_WEBHOOK, handle: (r) => validatePod(r, controller, on) },
    );
    configurations.push(settings.configuration);
  }
  if (settings.tgb) {
    if (!deps.tgbReads) throw new Error('the TargetGroupBinding webhooks need a client to list bindings and Services');
    const reads = deps.tgbReads();
    webhooks.push(
      { ...TGB_VALIDATING_WEBHOOK, handle: (r) => validateTargetGroupBinding(r, reads) },
      { ...POD_READINESS_WEBHOOK, handle: (r) => mutatePodReadiness(r, reads, deps.log) },
    );
    configurations.push(settings.tgb.configuration);
  }
  if (webhooks.length === 0)
    throw new Error('no admission webhooks to serve: neither the IPAM nor the TargetGroupBinding pair');
  return { webhooks, ipam, configurations };
}
