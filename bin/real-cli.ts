import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { ClientNodeLeases } from '../functions/relay/client-node-leases.ts';
import { ClientNodeListWatch } from '../functions/relay/client-node-source.ts';
import {
  DEFAULT_COMPONENT,
  type LeaderMigrationConfiguration,
  parseLeaderMigrationConfiguration,
} from '../functions/relay/leader-migration.ts';
import { DEFAULT_ELECTION } from '../functions/relay/lease.ts';
import {
  createAcmPort,
  createAutoScalingPort,
  createEc2Port,
  createElbPort,
  createElbv2Port,
  createSqsPort,
  createWafv2Port,
} from '../shared/aws/clients.ts';
import { systemClock } from '../shared/clock.ts';
import { type Config, ConfigError, loadConfig } from '../shared/config/config.ts';
import { CONTROLLER_NAMES, type ControllerName } from '../shared/controllers.ts';
import { errorMessage } from '../shared/errors.ts';
import { ClientNodeKubernetes } from '../shared/k8s/client-node-adapter.ts';
import { ClientNodeDrain } from '../shared/k8s/client-node-drain.ts';
import { ClientNodeIngresses } from '../shared/k8s/client-node-ingresses.ts';
import { ClientNodeIpam } from '../shared/k8s/client-node-ipam.ts';
import { ClientNodeServices } from '../shared/k8s/client-node-services.ts';
import {
  ClientNodeLeaseRead,
  ClientNodePodGates,
  ClientNodeTargetGroupBindings,
} from '../shared/k8s/client-node-target-group-bindings.ts';
import { ingressControllerKube } from '../shared/k8s/ingress-port.ts';
import { serviceControllerKube } from '../shared/k8s/service-port.ts';
import { stackBindingsPort } from '../shared/k8s/stack-bindings.ts';
import { tgbControllerKube } from '../shared/k8s/tgb-port.ts';
import { MetricName, RecordingMetrics } from '../shared/observability/metrics.ts';
import type { RealArgs } from './args.ts';
import { dryRunKubernetes } from './dry-run.ts';
import { startEc2EventsPoller } from './ec2-events-poller.ts';
import { ALL_QUEUES, DLQS } from './engine.ts';
import type { createOutput, ViewSource } from './live-view.ts';
import { formatRows, summaryRows } from './live-view.ts';
import { createRealMode, type Ec2EventsSource, type RealMode } from './real.ts';
import { controllerPlan, type RealPorts, realSwitches, resyncPlan } from './real-plan.ts';
import { serveWebhooks } from './real-webhooks.ts';

/**
 * `npm start -- --real`: settings validated as the Lambdas validate theirs (shared/config/config.ts),
 * real clients from the kubeconfig and the AWS credential chain, then bin/real.ts runs until Ctrl-C.
 */

/** How often the migration lock is read, as the deployed relay does (functions/relay/main.ts). */
const MIGRATION_POLL_MS = 5_000;

type Output = ReturnType<typeof createOutput>;

/** Exit code 2 with a message naming the problem: nothing has been started yet. */
function refuse(message: string): never {
  console.error(message);
  process.exit(2);
}

function loadRealConfig(args: RealArgs): Config {
  try {
    return loadConfig({
      ...process.env,
      CLUSTER_NAME: args.clusterName,
      AWS_REGION: args.region,
      CLUSTER_CIDRS: args.clusterCidrs,
      VPC_ID: args.vpcId,
      KUBERNETES_AUTH_MODE: 'kubeconfig',
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    refuse(
      `refusing to start against a real cluster: ${err.message}\n` +
        'pass --cluster-name NAME (the <name> of kubernetes.io/cluster/<name>) and --region, or set CLUSTER_NAME and AWS_REGION',
    );
  }
}

function loadMigration(path: string | undefined): LeaderMigrationConfiguration | undefined {
  if (!path) return undefined;
  try {
    return parseLeaderMigrationConfiguration(readFileSync(path, 'utf8'), path);
  } catch (err) {
    if (err instanceof ConfigError) refuse(`refusing to start: ${err.message}`);
    refuse(`refusing to start: reading ${path}: ${errorMessage(err)}`);
  }
}

/** As kubectl: --kubeconfig, else $KUBECONFIG, else ~/.kube/config; a cluster must be named. */
function loadKubeConfig(path: string | undefined): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    if (path) kubeConfig.loadFromFile(path);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    refuse(
      `refusing to start: reading the kubeconfig ${path ?? '(KUBECONFIG or ~/.kube/config)'}: ${errorMessage(err)}`,
    );
  }
  // loadFromDefault falls back to a localhost cluster when it finds nothing; a local run must not guess.
  if (!kubeConfig.getCurrentCluster() || kubeConfig.getCurrentCluster()?.server === 'http://localhost:8080') {
    refuse(
      'refusing to start: no cluster in the kubeconfig (pass --kubeconfig PATH, set KUBECONFIG, or write ~/.kube/config)',
    );
  }
  return kubeConfig;
}

/** The ports of the kubeconfig (client-node) and the AWS credential chain (SDK clients), made when asked for. */
function clientNodePorts(config: Config, metrics: RecordingMetrics, kubeConfig: KubeConfig): RealPorts {
  return {
    // With the Lease read: the AWS Load Balancer Controller's Services wait while it holds its leader Lease.
    serviceKube: () => {
      const lease = new ClientNodeLeaseRead(kubeConfig);
      const kube = serviceControllerKube(new ClientNodeServices(kubeConfig), new ClientNodeKubernetes(kubeConfig));
      return { ...kube, getLease: (namespace: string, name: string) => lease.getLease(namespace, name) };
    },
    elbv2: () => createElbv2Port(config, metrics),
    elb: () => createElbPort(config, metrics),
    drain: () => new ClientNodeDrain(kubeConfig),
    autoscaling: () => createAutoScalingPort(config, metrics),
    pods: () => new ClientNodeIpam(kubeConfig),
    ingressKube: () =>
      ingressControllerKube(
        new ClientNodeIngresses(kubeConfig),
        new ClientNodeServices(kubeConfig),
        new ClientNodeKubernetes(kubeConfig),
        new ClientNodeLeaseRead(kubeConfig),
      ),
    acm: () => createAcmPort(config, metrics),
    wafv2: () => createWafv2Port(config, metrics),
    tgbKube: () =>
      tgbControllerKube(
        new ClientNodeTargetGroupBindings(kubeConfig),
        new ClientNodePodGates(kubeConfig),
        new ClientNodeLeaseRead(kubeConfig),
        new ClientNodeServices(kubeConfig),
        new ClientNodeKubernetes(kubeConfig),
      ),
    stackBindings: () =>
      stackBindingsPort(new ClientNodeTargetGroupBindings(kubeConfig), new ClientNodePodGates(kubeConfig)),
  };
}

/** `300 s: node, route; none: interruption (EC2 events only)`: each controller that runs and how often it is resynced. */
function describeResync(mode: RealMode, periods: Partial<Record<ControllerName, number>>): string {
  const byPeriod = new Map<string, string[]>();
  for (const name of mode.engine.reconcilers) {
    const period = periods[name];
    const label = period === undefined ? 'none (its work comes only from EC2 events)' : `every ${period} s`;
    byPeriod.set(label, [...(byPeriod.get(label) ?? []), name]);
  }
  return [...byPeriod].map(([label, names]) => `${label}: ${names.join(', ')}`).join('; ');
}

/** The closing summary's real-mode lines: which controllers ran (and why the others did not), the relay, EC2 events. */
export function realModeRows(
  mode: RealMode,
  off: readonly [string, string][],
  extra: { resync?: Partial<Record<ControllerName, number>>; webhooks?: () => string } = {},
): [string, string | number][] {
  const m = mode.relayMetrics;
  const { leading, holder, lease } = mode.state;
  const held = leading ? 'held by this process' : `held by ${holder ?? 'another process'}: this one stands by`;
  const leaseRow = lease === undefined ? 'none taken (dry run)' : `${lease}, ${held}`;
  const offReason = new Map(off);
  return [
    [
      'controllers',
      CONTROLLER_NAMES.filter((r) => mode.engine.reconcilers.includes(r) || offReason.has(r))
        .map((r) => (offReason.has(r) ? `${r}: off (${offReason.get(r)})` : `${r}: on`))
        .join(', '),
    ],
    ...(extra.resync ? [['resync', describeResync(mode, extra.resync)] as [string, string]] : []),
    ['Lease', leaseRow],
    [
      'relay: changes seen / forwarded',
      `${m.changesSeen.total()} / ${m.changesForwarded.total()} (${m.changesFiltered.total()} filtered)`,
    ],
    ['resync rounds', mode.state.rounds],
    ['EC2 events', mode.state.ec2Events()],
    ...(extra.webhooks ? [['admission webhooks', extra.webhooks()] as [string, string]] : []),
  ];
}

function viewSource(
  title: string,
  mode: RealMode,
  metrics: RecordingMetrics,
  rows: () => [string, string | number][],
): ViewSource {
  const started = performance.now();
  return {
    title,
    metrics,
    queueDepths: () => ALL_QUEUES.map((q) => [q, mode.engine.sqs.depth(q)]),
    dlqDepth: mode.engine.dlqDepth,
    awsCalls: () => {
      const byOp = new Map<string, number>();
      for (const e of metrics.entries.filter((x) => x.name === MetricName.AwsCalls)) {
        const op = e.dimensions.operation ?? '?';
        byOp.set(op, (byOp.get(op) ?? 0) + e.value);
      }
      return [...byOp.entries()];
    },
    clockLabel: () => `${((performance.now() - started) / 1000).toFixed(1)} s`,
    extra: rows,
  };
}

/** `--real`: runs until SIGINT/SIGTERM (or one pass with --once), then prints the summary. */
export async function runReal(args: RealArgs, output: Output): Promise<void> {
  const log = output.log;
  const config = loadRealConfig(args);
  const migration = loadMigration(args.leaderMigrationConfig);
  const kubeConfig = loadKubeConfig(args.kubeconfig);
  const metrics = new RecordingMetrics();
  const realKube = new ClientNodeKubernetes(kubeConfig);
  const kube = args.dryRun ? dryRunKubernetes(realKube, log) : realKube;
  const switches = realSwitches(config, args);
  const ports = clientNodePorts(config, metrics, kubeConfig);
  const { controllers, off } = controllerPlan(config, switches, args.dryRun, ports);
  const resync = resyncPlan(args.resyncSeconds);
  const queueUrl = args.ec2EventsQueueUrl;
  // The queue `npm run events:create` makes, long-polled through the SQS adapter (bin/ec2-events-poller.ts).
  const eventsSqs = queueUrl ? createSqsPort(config, metrics) : undefined;
  const ec2Events: Ec2EventsSource | undefined =
    queueUrl && eventsSqs
      ? ({ deliver, signal }) => startEc2EventsPoller({ queueUrl, sqs: eventsSqs, deliver, log, signal })
      : undefined;
  const mode = createRealMode(
    {
      engine: {
        clusterName: config.CLUSTER_NAME,
        region: config.AWS_REGION,
        ipFamilies: config.NODE_IP_FAMILIES,
        nodeIndexTtlMs: config.NODE_INDEX_TTL_SECONDS * 1000,
        clock: systemClock,
        ec2: createEc2Port(config, metrics),
        kube,
        log,
        metrics,
        controllers,
      },
      relay: {
        identity: `${hostname()}_local_${randomBytes(4).toString('hex')}`,
        lease: args.lease,
        // A dry run writes nothing, a Lease included: it reads beside whoever acts.
        election: args.dryRun ? false : DEFAULT_ELECTION,
        ...(migration
          ? { migration: { config: migration, component: DEFAULT_COMPONENT, pollMs: MIGRATION_POLL_MS } }
          : {}),
      },
      resyncSeconds: resync,
      once: args.once,
      ...(ec2Events ? { ec2Events } : {}),
    },
    { source: new ClientNodeListWatch(kubeConfig), leases: new ClientNodeLeases(kubeConfig) },
  );
  const title = `serverless-ccm local: cluster "${config.CLUSTER_NAME}" (${kubeConfig.getCurrentContext()}), ${config.AWS_REGION}, controllers ${mode.engine.reconcilers.join(', ')}${args.dryRun ? ', dry run' : ''}`;
  if (controllers.interruption && !ec2Events) {
    log.warn(
      'the interruption controller is on, but its notices come only from EC2 events: without --ec2-events-queue-url it gets none',
    );
  }
  const webhooks =
    args.webhooks && controllers.ipam
      ? await serveWebhooks(args.webhooks, kubeConfig, new ClientNodeListWatch(kubeConfig), log)
      : undefined;
  const view = viewSource(title, mode, metrics, () =>
    realModeRows(mode, off, { resync, ...(webhooks ? { webhooks: webhooks.describe } : {}) }),
  );
  if (!process.stdout.isTTY || args.plain) console.log(`${title}\n`);
  if (args.dryRun) log.info('dry run: no Lease is taken, and the controllers that write to AWS stay off');
  output.start(view);
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  await mode.run(stop.signal);
  await webhooks?.close();
  output.stop(view);
  console.log(`\nsummary\n${formatRows(summaryRows(view))}`);
  if (mode.engine.dlqDepth() > 0) console.log(`\n${mode.engine.dlqDepth()} message(s) in ${DLQS.join(', ')}`);
}
