/**
 * `npm start`: the whole control plane in one process.
 * - Nothing configured: the embedded simulated AWS account and cluster (bin/simulation.ts). It runs
 *   a bounded scenario, prints a summary and exits 0 once everything converged (1 if not).
 * - `--kubeconfig PATH` (or KUBECONFIG set, or `--real`): a real cluster and AWS account, with the
 *   usual AWS credential chain. Requires the cluster name. Resyncs periodically, since the relay and
 *   EventBridge do not reach a local process; `--dry-run` logs Kubernetes writes instead of sending them.
 *   The route controller runs when cluster CIDRs are given, the service controller when a VPC is.
 */
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { createEc2Port, createElbPort, createElbv2Port } from '../shared/aws/clients.ts';
import { systemClock } from '../shared/clock.ts';
import { ConfigError, loadConfig } from '../shared/config/config.ts';
import { ClientNodeKubernetes } from '../shared/k8s/client-node-adapter.ts';
import { ClientNodeServices } from '../shared/k8s/client-node-services.ts';
import { serviceControllerKube } from '../shared/k8s/service-port.ts';
import { validatedCidr } from '../shared/net/cidr.ts';
import { MetricName, RecordingMetrics } from '../shared/observability/metrics.ts';
import { dryRunKubernetes } from './dry-run.ts';
import { createEngine, DLQS, type EngineOptions, QUEUES } from './engine.ts';
import { createOutput, formatRows, summaryRows, type ViewSource } from './live-view.ts';
import { createSimulation } from './simulation.ts';

const USAGE = `usage: npm start -- [options]

Simulation (default): every reconciler on an embedded simulated AWS account and cluster.
  --nodes N              instances/Nodes in the scenario (default 9, at least 3)
  --ec2-latency-ms MS    real time each simulated EC2 call takes (default 30)
  --throttle N           DescribeInstances calls EC2 throttles mid-scenario (default 2)
  --speed N              simulated seconds per real second (default 10; 0 = as fast as possible)
  --keep-running         keep polling after the scenario instead of exiting

Real cluster and account (--kubeconfig PATH, KUBECONFIG set, or --real):
  --cluster-name NAME    required: the <name> of kubernetes.io/cluster/<name> (or CLUSTER_NAME)
  --region REGION        AWS region (or AWS_REGION)
  --cluster-cidrs LIST   the cluster's pod CIDRs (or CLUSTER_CIDRS): also run the route controller
  --vpc-id VPC           the VPC of the load balancers (or VPC_ID): also run the service controller
  --resync-seconds S     how often everything is reconciled again (default 30)
  --once                 one resync, drain the queues, print the summary and exit
  --dry-run              read for real, log Kubernetes writes instead of sending them (Node
                         controllers only: routes and load balancers write to AWS, so they stay off)

  --verbose              debug log lines
  --plain                plain log lines even on a terminal`;

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '9' },
    'ec2-latency-ms': { type: 'string', default: '30' },
    throttle: { type: 'string', default: '2' },
    speed: { type: 'string', default: '10' },
    'keep-running': { type: 'boolean', default: false },
    kubeconfig: { type: 'string' },
    real: { type: 'boolean', default: false },
    'cluster-name': { type: 'string' },
    region: { type: 'string' },
    'cluster-cidrs': { type: 'string' },
    'vpc-id': { type: 'string' },
    'resync-seconds': { type: 'string', default: '30' },
    once: { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    plain: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

function integer(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    console.error(`--${name} must be an integer >= ${min} (got ${JSON.stringify(raw)})\n\n${USAGE}`);
    process.exit(2);
  }
  return n;
}

const output = createOutput(Boolean(process.stdout.isTTY) && !values.plain, values.verbose);
const log = output.log;
const realMode = values.real || values.kubeconfig !== undefined || Boolean(process.env.KUBECONFIG);
await (realMode ? runReal() : runSimulation());

async function runSimulation(): Promise<void> {
  const nodes = integer('nodes', values.nodes, 3);
  const latency = integer('ec2-latency-ms', values['ec2-latency-ms'], 0);
  const throttle = integer('throttle', values.throttle, 0);
  const wallStart = performance.now();
  const speed = integer('speed', values.speed, 0);
  const sim = createSimulation({ nodes, ec2LatencyMs: latency, throttleDescribes: throttle, speed, log });
  const source: ViewSource = {
    title: `serverless-ccm local: simulated cluster "local-sim", ${nodes} nodes, EC2 latency ${latency} ms`,
    metrics: sim.metrics,
    queueDepths: () => Object.values(QUEUES).map((q) => [q, sim.sqs.depth(q)]),
    dlqDepth: sim.engine.dlqDepth,
    awsCalls: () => [
      ...sim.ec2.calls.entries(),
      ...sim.elbv2.calls.entries(),
      ...[...sim.elb.calls.entries()].map(([op, n]) => [`ELB ${op}`, n] as [string, number]),
    ],
    clockLabel: () =>
      `simulated ${(sim.elapsed() / 1000).toFixed(1)} s, wall ${((performance.now() - wallStart) / 1000).toFixed(1)} s`,
    extra: () => [
      ['Kubernetes writes', sim.kube.writeCount()],
      ['Events recorded', sim.kube.events.length],
    ],
  };
  if (!process.stdout.isTTY || values.plain) console.log(`${source.title}\n`);
  output.start(source);
  await sim.runToCompletion();
  if (values['keep-running']) {
    log.info('scenario finished; still polling (Ctrl-C to stop)');
    await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  }
  output.stop(source);
  console.log(`\nsummary\n${formatRows(summaryRows(source))}`);
  const problems = sim.problems();
  if (problems.length > 0) {
    console.log(`\nNOT converged:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    process.exit(1);
  }
  console.log(
    '\nconverged: every Node initialized and routed, the stopped one tainted, the terminated one deleted, the load balancer active with the running Nodes as targets, the moved-over Service still on its Classic ELB with the same Nodes registered.',
  );
}

async function runReal(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig({
      ...process.env,
      CLUSTER_NAME: values['cluster-name'] ?? process.env.CLUSTER_NAME,
      AWS_REGION: values.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION,
      CLUSTER_CIDRS: values['cluster-cidrs'] ?? process.env.CLUSTER_CIDRS,
      VPC_ID: values['vpc-id'] ?? process.env.VPC_ID,
      KUBERNETES_AUTH_MODE: 'kubeconfig',
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(
      `refusing to start against a real cluster: ${err.message}\n` +
        'pass --cluster-name NAME (the <name> of kubernetes.io/cluster/<name>) and --region, or set CLUSTER_NAME and AWS_REGION',
    );
    process.exit(2);
  }
  const resyncSeconds = integer('resync-seconds', values['resync-seconds'], 5);
  const kubeConfig = new KubeConfig();
  if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
  else kubeConfig.loadFromDefault();
  const metrics = new RecordingMetrics();
  const realKube = new ClientNodeKubernetes(kubeConfig);
  const dryRun = values['dry-run'];
  const kube = dryRun ? dryRunKubernetes(realKube, log) : realKube;
  // Routes and load balancers are AWS writes, which a dry run cannot fake: those controllers stay off then.
  if (dryRun && (config.CLUSTER_CIDRS || config.VPC_ID)) {
    log.info('dry run: the route and service controllers stay off (they write to AWS)');
  }
  const routes: EngineOptions['routes'] =
    config.CLUSTER_CIDRS && !dryRun
      ? {
          clusterCidrs: config.CLUSTER_CIDRS.map((text) => validatedCidr(text, 'CLUSTER_CIDRS')),
          routeTableLimit: config.ROUTE_TABLE_LIMIT,
          ...(config.ROUTE_TABLE_ID ? { routeTableId: config.ROUTE_TABLE_ID } : {}),
        }
      : undefined;
  const services: EngineOptions['services'] =
    config.VPC_ID && !dryRun
      ? {
          vpcId: config.VPC_ID,
          elbv2: createElbv2Port(config, metrics),
          elb: createElbPort(config, metrics),
          defaultLoadBalancerType: config.SERVICE_DEFAULT_LOAD_BALANCER_TYPE,
          kube: serviceControllerKube(new ClientNodeServices(kubeConfig), realKube),
          provisioningRequeueSeconds: config.SERVICE_PROVISIONING_REQUEUE_SECONDS,
          cleanupRequeueSeconds: config.SERVICE_CLEANUP_REQUEUE_SECONDS,
          loadBalancerClass: config.LOAD_BALANCER_CLASS,
          nodePortRange: config.SERVICE_NODE_PORT_RANGE,
          externalManagedTags: config.SERVICE_EXTERNAL_MANAGED_TAGS,
        }
      : undefined;
  const engine = createEngine({
    clusterName: config.CLUSTER_NAME,
    region: config.AWS_REGION,
    ipFamilies: config.NODE_IP_FAMILIES,
    clock: systemClock,
    ec2: createEc2Port(config, metrics),
    kube,
    log,
    metrics,
    ...(routes ? { routes } : {}),
    ...(services ? { services } : {}),
  });
  const running = ['node', 'node-lifecycle', ...(routes ? ['route'] : []), ...(services ? ['service'] : [])];
  const started = performance.now();
  const source: ViewSource = {
    title: `serverless-ccm local: cluster "${config.CLUSTER_NAME}" (${kubeConfig.getCurrentContext()}), ${config.AWS_REGION}, controllers ${running.join(', ')}${dryRun ? ', dry run' : ''}`,
    metrics,
    queueDepths: () => Object.values(QUEUES).map((q) => [q, engine.sqs.depth(q)]),
    dlqDepth: engine.dlqDepth,
    awsCalls: () => {
      const byOp = new Map<string, number>();
      for (const e of metrics.entries.filter((x) => x.name === MetricName.AwsCalls)) {
        const op = e.dimensions.operation ?? '?';
        byOp.set(op, (byOp.get(op) ?? 0) + e.value);
      }
      return [...byOp.entries()];
    },
    clockLabel: () => `${((performance.now() - started) / 1000).toFixed(1)} s`,
  };
  if (!process.stdout.isTTY || values.plain) console.log(`${source.title}\n`);
  output.start(source);
  let stopping = false;
  process.once('SIGINT', () => {
    stopping = true;
  });
  process.once('SIGTERM', () => {
    stopping = true;
  });
  let round = 0;
  let nextResync = 0;
  while (!stopping) {
    if (Date.now() >= nextResync && !(values.once && round > 0)) {
      const count = await engine.resync(++round);
      log.info(`resync ${round}: ${count} Nodes enqueued`);
      nextResync = Date.now() + resyncSeconds * 1000;
    }
    const handled = await engine.pumpOnce();
    if (values.once && handled === 0 && engine.depth() === 0) break;
    if (handled === 0) await new Promise((r) => setTimeout(r, Math.min(500, engine.nextVisibleInMs() ?? 500)));
  }
  output.stop(source);
  console.log(`\nsummary\n${formatRows(summaryRows(source))}`);
  if (engine.dlqDepth() > 0) console.log(`\n${engine.dlqDepth()} message(s) in ${DLQS.join(', ')}`);
}
