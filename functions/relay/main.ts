import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import { SQSClient } from '@aws-sdk/client-sqs';
import { systemClock } from '../../shared/clock.ts';
import { ConfigError } from '../../shared/config/config.ts';
import { errorMessage } from '../../shared/errors.ts';
import { envProxyAgents } from '../../shared/net/proxy.ts';
import type { Log } from '../../shared/observability/log.ts';
import { powertoolsLog } from '../../shared/observability/powertools.ts';
import { SqsAdapter } from '../../shared/queue/sqs-adapter.ts';
import type { SqsPort } from '../../shared/queue/sqs-port.ts';
import { loadRelayConfig, queuesOf, type RelayConfig, regionFor } from './config.ts';
import { kindsFor } from './forwarding.ts';
import { startOperationsServer } from './http-server.ts';
import { type KubeClients, loadKubeClients } from './kube-clients.ts';
import { DEFAULT_LIST_WATCH_OPTIONS } from './list-watch.ts';
import { Relay } from './relay.ts';
import type { AdmissionWebhooks } from './webhook/start.ts';

/**
 * The relay process: configuration, clients, the operations server and signals. Everything else is
 * in relay.ts. Run as `node main.mjs` (the container's command).
 *
 * What only some deployments use is imported on demand, so the others never load it: @kubernetes/client-node
 * (kubeconfig mode, kube-clients.ts), the reading of a LeaderMigrationConfiguration (YAML) and the admission
 * webhooks (X.509). The image's bundle keeps these in chunks of their own (deploy/relay/Dockerfile): code that is
 * loaded costs memory even when it never runs (deploy/relay/README.md, "Memory and throughput").
 */

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
/** How often the migration lock is read when a LeaderMigrationConfiguration is given. */
const MIGRATION_POLL_MS = 5_000;

export interface WiringDeps {
  /** The API server's clients (kube-clients.ts `loadKubeClients`). */
  kube: KubeClients;
  sqs: SqsPort;
  log: Log;
  /** Reads the LeaderMigrationConfiguration file. */
  readFile?: (path: string) => string;
  identity?: string;
}

/** Build the relay and its operations server from a parsed configuration. */
export async function wire(config: RelayConfig, deps: WiringDeps) {
  const { log } = deps;
  const namespace =
    config.RELAY_NAMESPACE ??
    (existsSync(SERVICE_ACCOUNT_NAMESPACE) ? readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() : 'kube-system');
  const identity = deps.identity ?? config.RELAY_IDENTITY ?? `${hostname()}_${randomBytes(4).toString('hex')}`;
  const queues = queuesOf(config);
  const migrationFile = config.RELAY_LEADER_MIGRATION_CONFIG;
  const migration = migrationFile
    ? (await import('./leader-migration.ts')).parseLeaderMigrationConfiguration(
        (deps.readFile ?? ((p) => readFileSync(p, 'utf8')))(migrationFile),
        migrationFile,
      )
    : undefined;

  const disabled = kindsFor(Object.keys(queues) as (keyof typeof queues)[]).filter(
    (kind) => !config.RELAY_KINDS.includes(kind),
  );
  if (disabled.length > 0) {
    log.warn(
      'kinds a configured reconciler reads are not watched (RELAY_KINDS): their changes reach it only by resync',
      {
        kinds: disabled,
      },
    );
  }

  const relay = new Relay(
    {
      identity,
      namespace,
      leaseName: config.RELAY_LEASE_NAME,
      election: config.RELAY_LEADER_ELECT
        ? {
            leaseDurationMs: config.RELAY_LEASE_DURATION_SECONDS * 1000,
            renewDeadlineMs: config.RELAY_RENEW_DEADLINE_SECONDS * 1000,
            retryPeriodMs: config.RELAY_RETRY_PERIOD_SECONDS * 1000,
          }
        : false,
      queues,
      kinds: config.RELAY_KINDS,
      listWatch: {
        ...DEFAULT_LIST_WATCH_OPTIONS,
        pageSize: config.RELAY_PAGE_SIZE,
        watchTimeoutSeconds: config.RELAY_WATCH_TIMEOUT_SECONDS,
        inactivityMs: config.RELAY_SILENT_WATCH_SECONDS * 1000,
        relistIntervalMs: config.RELAY_RELIST_SECONDS * 1000,
      },
      sendBudgetMs: config.RELAY_RETRY_PERIOD_SECONDS * 1000,
      migration: migration
        ? { config: migration, component: config.RELAY_MIGRATION_COMPONENT, pollMs: MIGRATION_POLL_MS }
        : undefined,
    },
    {
      source: deps.kube.source,
      leases: deps.kube.leases,
      sqs: deps.sqs,
      clock: systemClock,
      log,
    },
  );
  const operations = await startOperationsServer(relay, config.RELAY_PORT);
  const webhooks = config.RELAY_WEBHOOK_ENABLED
    ? await startWebhooks(config, deps, namespace, relay, operations)
    : undefined;
  return { relay, operations, webhooks, identity, namespace };
}

/** The admission webhooks (RELAY_WEBHOOK_ENABLED); a failure to start them is a ConfigError. */
async function startWebhooks(
  config: RelayConfig,
  deps: WiringDeps,
  namespace: string,
  relay: Relay,
  operations: { close(): Promise<void> },
): Promise<AdmissionWebhooks> {
  const { log } = deps;
  try {
    const { startAdmissionWebhooks } = await import('./webhook/start.ts');
    return await startAdmissionWebhooks(
      {
        port: config.RELAY_WEBHOOK_PORT,
        mode: config.RELAY_WEBHOOK_TLS,
        namespace,
        service: config.RELAY_WEBHOOK_SERVICE,
        secret: config.RELAY_WEBHOOK_SECRET,
        configuration: config.RELAY_WEBHOOK_CONFIGURATION,
        ipam: config.RELAY_WEBHOOK_IPAM,
        ...(config.RELAY_WEBHOOK_TGB ? { tgb: { configuration: config.RELAY_WEBHOOK_TGB_CONFIGURATION } } : {}),
        certDir: config.RELAY_WEBHOOK_CERT_DIR,
        controllerUsernames: config.RELAY_WEBHOOK_CONTROLLER_USERNAMES,
        refreshMs: config.RELAY_WEBHOOK_REFRESH_SECONDS * 1000,
        pollMs: config.RELAY_WEBHOOK_REFRESH_SECONDS * 1000,
      },
      {
        tlsStore: (configuration) =>
          deps.kube.tlsStore({ namespace, secret: config.RELAY_WEBHOOK_SECRET, configuration }),
        ...(deps.kube.tgbAdmissionReads ? { tgbReads: () => deps.kube.tgbAdmissionReads!() } : {}),
        log,
        clock: systemClock,
        registry: relay.metrics.registry,
        // Every replica watches the VPC CNI ConfigMap: the webhooks act only while Windows IPAM is on.
        source: deps.kube.source,
      },
    );
  } catch (err) {
    await operations.close();
    // A mount that is not there, or a port taken: a deployment problem, reported like a bad setting.
    throw new ConfigError([
      `RELAY_WEBHOOK_TLS=${config.RELAY_WEBHOOK_TLS}: starting the admission webhooks: ${errorMessage(err)}`,
    ]);
  }
}

/**
 * How the relay's SQS client connects: each attempt bounded, since a hung connection must not hold a batch (and
 * its keys) for ever; through the proxy its environment names, if any (shared/net/proxy.ts), reusing connections.
 */
export function sqsRequestHandler(env: Record<string, string | undefined>) {
  return { connectionTimeout: 2_000, requestTimeout: 5_000, ...envProxyAgents(env) };
}

export async function main(env: Record<string, string | undefined> = process.env): Promise<void> {
  let config: RelayConfig;
  try {
    config = loadRelayConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`serverless-ccm relay: ${err.message}\n`);
    process.exit(2);
  }
  const identity = config.RELAY_IDENTITY ?? `${hostname()}_${randomBytes(4).toString('hex')}`;
  const logger = new Logger({
    serviceName: 'serverless-ccm-relay',
    logLevel: config.LOG_LEVEL,
    persistentKeys: { identity },
  });
  const log = powertoolsLog(logger);
  // The SDK's own retries (3 attempts, adaptive rate limiting when throttled) sit under the relay's:
  // a key is retried until SQS takes it. SDK v3 sends to the QueueUrl's host by default
  // (`useQueueUrlAsEndpoint`), ignoring AWS_ENDPOINT_URL_SQS; an endpoint set on purpose (a local or
  // AWS-compatible SQS) has to win.
  const endpoint = env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL;
  const client = new SQSClient({
    region: regionFor(config),
    retryMode: 'adaptive',
    requestHandler: sqsRequestHandler(env),
    ...(endpoint ? { useQueueUrlAsEndpoint: false } : {}),
  });
  const sqs = new SqsAdapter(client, endpoint ? { endpoint } : {});
  let wired: Awaited<ReturnType<typeof wire>>;
  try {
    wired = await wire(config, { kube: await loadKubeClients(config, env), sqs, log, identity });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`serverless-ccm relay: ${err.message}\n`);
    process.exit(2);
  }
  const { relay, operations, webhooks } = wired;

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    const { flushed } = await relay.stop(config.RELAY_SHUTDOWN_FLUSH_SECONDS * 1000);
    await webhooks?.close();
    await operations.close();
    process.exit(flushed ? 0 : 1);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('unhandledRejection', (reason) => {
    // State is unknown after this: exit, and let the restart list everything again.
    log.error('unhandled rejection; exiting', { error: errorMessage(reason) });
    process.exit(1);
  });
  relay.start();
  log.info('operations server listening', { port: operations.port });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
