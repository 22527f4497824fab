/**
 * What an idle cluster costs in the units AWS bills, counted on the real code paths of one resync round: the
 * resync function (node sweep, every Service key, the route and garbage-collection keys) and the service and
 * route controllers working through what it sent, each batch as one Lambda invocation with the real Powertools
 * logger and metrics writing to a captured stdout. So the CloudWatch Logs bytes are the bytes the deployed
 * functions write (EMF metric documents and log lines), not an estimate; the `AwsCalls` documents the SDK clients'
 * middleware (shared/observability/aws-call-metrics.ts) would add are emitted per call the fakes counted.
 *
 * Not counted here, because our code does not produce them: Lambda's own START/END/REPORT lines, the event source
 * mappings' polling and deletes, and the compute time (a fake answers in microseconds, AWS in milliseconds).
 * docs/cost.md turns these figures and those into a monthly bill.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeReconciler } from '../../functions/node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../functions/node-lifecycle/reconciler.ts';
import { resync } from '../../functions/resync/resync.ts';
import { routeReconciler } from '../../functions/route/reconciler.ts';
import { serviceReconciler } from '../../functions/service/reconciler.ts';
import { makeRouteTable } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { instanceAddresses } from '../../shared/nodes/addresses.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createPowertools } from '../../shared/observability/powertools.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import { type Reconciler, runBatch } from '../../shared/queue/runner.ts';
import { stubCode } from '../../stacks/code.ts';
import { synthesizeOffline } from '../../stacks/synth.ts';
import { createServiceWorld, SERVICE_QUEUE, type ServiceWorld } from '../helpers/service-world.ts';
import { CLUSTER } from '../helpers/world.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- cost';
/** CCM_RESYNC_MINUTES' default: 12 rounds an hour, 8,640 in a 30-day month. */
const ROUNDS_PER_MONTH = (30 * 24 * 60) / 5;
/** CloudWatch Logs ingestion, standard log class, us-east-1 list price (USD per GB). */
const LOG_INGESTION_USD_PER_GB = 0.5;

/** Lines and bytes written to stdout and stderr while `run` runs, split into EMF documents and the rest. */
async function captured<T>(
  run: () => Promise<T>,
): Promise<{ result: T; emf: Tally; logs: Tally; series: Set<string> }> {
  const emf = { lines: 0, bytes: 0 };
  const logs = { lines: 0, bytes: 0 };
  const series = new Set<string>();
  const tally = (chunk: unknown) => {
    for (const line of String(chunk).split('\n')) {
      if (line.length === 0) continue;
      const into = line.includes('"_aws"') ? emf : logs;
      into.lines += 1;
      into.bytes += Buffer.byteLength(line) + 1;
      if (into === emf) for (const one of metricSeries(line)) series.add(one);
    }
    return true;
  };
  const out = process.stdout.write;
  const err = process.stderr.write;
  process.stdout.write = tally as typeof process.stdout.write;
  process.stderr.write = tally as typeof process.stderr.write;
  try {
    return { result: await run(), emf, logs, series };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

type Tally = { lines: number; bytes: number };

/**
 * The custom metrics an EMF document publishes: each metric name with each of its dimension sets' values is one
 * metric CloudWatch bills for every hour it is published in.
 */
function metricSeries(line: string): string[] {
  const doc = JSON.parse(line) as {
    _aws: { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  } & Record<string, unknown>;
  return doc._aws.CloudWatchMetrics.flatMap(({ Dimensions, Metrics }) =>
    Metrics.flatMap(({ Name }) => Dimensions.map((set) => `${Name} ${set.map((d) => `${d}=${doc[d]}`).join(' ')}`)),
  );
}

/** The same metrics with `AwsCalls` by AWS service only (CCM_AWS_CALL_METRICS=service: the operation dropped). */
function leanSeries(series: Set<string>): Set<string> {
  return new Set([...series].map((one) => (one.startsWith('AwsCalls ') ? one.replace(/ operation=\S+/, '') : one)));
}

/**
 * The stack's parts billed by the month whatever the load, from the template of a stage with the route and
 * service controllers (the optional interruption and IPAM controllers off, as by default).
 */
async function fixedParts() {
  const dir = mkdtempSync(join(tmpdir(), 'ccm-cost-'));
  try {
    const { template } = await synthesizeOffline({
      stage: 'cost',
      env: {
        CCM_CLUSTER_NAME: CLUSTER,
        CCM_REGION: 'eu-west-1',
        CCM_KUBERNETES_API_ENDPOINT: 'https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com',
        CCM_CLUSTER_CIDRS: '10.244.0.0/16',
        CCM_VPC_ID: 'vpc-0a1b2c3d',
      },
      outdir: join(dir, 'cdk.out'),
      code: stubCode(join(dir, 'code')),
    });
    const resources = Object.values(template.Resources as Record<string, { Type: string }>);
    const count = (type: string) => resources.filter((r) => r.Type === type).length;
    return {
      alarms: count('AWS::CloudWatch::Alarm'),
      dashboards: count('AWS::CloudWatch::Dashboard'),
      mappings: count('AWS::Lambda::EventSourceMapping'),
      queues: count('AWS::SQS::Queue'),
      functions: count('AWS::Lambda::Function'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The AWS calls the fakes counted, by SDK client name (as the middleware names them) and operation. */
function awsCalls(w: ServiceWorld): Map<string, number> {
  const calls = new Map<string, number>();
  for (const [op, n] of w.elbv2.calls) calls.set(`ElasticLoadBalancingV2 ${op}`, n);
  for (const [op, n] of w.ec2.calls) calls.set(`EC2 ${op}`, n);
  // Our code's SQS calls; ReceiveMessage and DeleteMessage are the event source mapping's.
  for (const op of ['SendMessageBatch', 'ChangeMessageVisibilityBatch']) calls.set(`SQS ${op}`, w.sqs.callCount(op));
  return calls;
}

/**
 * One Lambda invocation of `component`, as the deployed handler runs it: its own Powertools logger and metrics
 * (built per container; here per invocation, which writes the same lines), `AwsCalls` per call made, and the
 * metrics published when it ends (`publishMetrics`).
 */
async function invocation<T>(
  w: ServiceWorld,
  component: string,
  body: (observed: ReturnType<typeof createPowertools>) => Promise<T>,
): Promise<T> {
  const observed = createPowertools(component);
  const before = awsCalls(w);
  try {
    return await body(observed);
  } finally {
    for (const [name, n] of awsCalls(w)) {
      const [awsService, operation] = name.split(' ') as [string, string];
      for (let i = before.get(name) ?? 0; i < n; i++) {
        observed.metricsPort.count(MetricName.AwsCalls, { awsService, operation });
      }
    }
    observed.metricsPort.publish();
  }
}

/** The event source mapping for `queue`: batches of up to 10, each one invocation, until the queue is empty. */
async function drain<D, B>(w: ServiceWorld, queue: string, reconciler: Reconciler<D, B>, deps: D): Promise<number> {
  let invocations = 0;
  for (;;) {
    const handled = await w.sqs.pump(queue, (records) =>
      invocation(w, reconciler.name, ({ log, metricsPort }) =>
        runBatch(
          reconciler,
          records,
          { ...deps, log, metrics: metricsPort },
          { ...w.runner, log, metrics: metricsPort },
        ),
      ),
    );
    if (handled === 0) return invocations;
    invocations += 1;
  }
}

/** Cluster sizes measured: Services on NLBs, Nodes (each with a route; at most 254, one /24 of 10.244.0.0/16 each). */
const SCALES = [
  { services: 20, nodes: 10 },
  { services: 200, nodes: 100 },
  { services: 1000, nodes: 250 },
];

/** `services` NLB Services on `nodes` Nodes with their routes, converged; then one resync round over them, measured. */
async function idleRound(scale: (typeof SCALES)[number]) {
  const w = await convergedWorld(scale);
  const queues = {
    node: w.sqs.urlOf('node.fifo'),
    nodeLifecycle: w.sqs.urlOf('node-lifecycle.fifo'),
    route: w.sqs.urlOf('route.fifo'),
    service: w.sqs.urlOf(SERVICE_QUEUE),
  };
  const round = await captured(async () => {
    const { sent } = await invocation(w, 'resync', ({ log, metricsPort }) =>
      resync('round-1', {
        kube: w.kube,
        services: w.kube,
        sqs: w.sqs,
        queues,
        nodeSweep: { ec2: w.ec2Port, clusterName: CLUSTER, ipFamilies: ['ipv4'] },
        log,
        metrics: metricsPort,
      }),
    );
    const invocations = {
      resync: 1,
      node: await drain(w, 'node.fifo', nodeReconciler, w.nodeDeps),
      nodeLifecycle: await drain(w, 'node-lifecycle.fifo', nodeLifecycleReconciler, w.lifecycleDeps),
      route: await drain(w, 'route.fifo', routeReconciler, w.routeDeps),
      service: await drain(w, SERVICE_QUEUE, serviceReconciler, w.serviceDeps),
    };
    return { sent, invocations };
  });
  return { ...round, aws: awsCalls(w), sqs: new Map(w.sqs.calls) };
}

/** The cluster in step: Nodes initialized with their routes, every Service's load balancer made; counters at zero. */
async function convergedWorld({ services, nodes }: (typeof SCALES)[number]): Promise<ServiceWorld> {
  const w = createServiceWorld();
  w.serviceDeps.resyncQuickCheck = true;
  for (let i = 1; i <= nodes; i++) {
    const { instance, node } = w.addNode(i);
    // In step with the instance, as the node reconciler leaves it, so the sweep sends no Node key; a pod CIDR
    // each, so the route controller keeps one route per Node.
    node.status!.addresses = instanceAddresses(instance, ['ipv4']);
    node.spec = { ...node.spec, podCIDR: `10.244.${i}.0/24`, podCIDRs: [`10.244.${i}.0/24`] };
  }
  w.ec2.putRouteTable(makeRouteTable({ routeTableId: 'rtb-0000000000cluster', clusterName: CLUSTER }));
  // AWS's default quota is 50 routes a table; a cluster of this size on routes has it raised.
  w.routeDeps.routeTableLimit = 1000;
  w.ec2.routeLimit = 1000;
  for (let i = 0; i < services; i++) w.putService(`web-${i}`);
  await w.converge(
    Array.from({ length: services }, (_, i) => w.serviceKey(`web-${i}`)),
    w.serviceDeps,
    10 * services,
  );
  await w.enqueue('route.fifo', [routeTableMessage({ eventType: 'RESYNC', eventId: 'converge' })]);
  await w.drain('route.fifo', routeReconciler, w.routeDeps);
  w.resetCounters();
  w.sqs.calls.clear();
  return w;
}

function figures(scale: (typeof SCALES)[number], round: Awaited<ReturnType<typeof idleRound>>): BenchResult[] {
  const { invocations } = round.result;
  const lambda = Object.values(invocations).reduce((a, b) => a + b, 0);
  const calls = [...round.aws.values()].reduce((a, b) => a + b, 0);
  const bytes = round.emf.bytes + round.logs.bytes;
  const monthGb = (bytes * ROUNDS_PER_MONTH) / 1e9;
  const sends = round.sqs.get('SendMessageBatch') ?? 0;
  const visibility = round.sqs.get('ChangeMessageVisibilityBatch') ?? 0;
  const size = `${scale.services.toLocaleString('en-US')} unchanged NLB Services, ${scale.nodes} Nodes`;
  return [
    {
      name: `idle resync round (${size}): Lambda invocations`,
      value: lambda,
      unit: 'invocations',
      rerun: RERUN,
      note: `${Object.entries(invocations)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}; ${calls} AWS calls, ${round.result.sent} keys sent`,
    },
    {
      name: `idle resync round (${size}): CloudWatch Logs bytes written`,
      value: Number((bytes / 1024).toFixed(1)),
      unit: 'KiB',
      rerun: RERUN,
      note: `${round.emf.lines} EMF documents (${(round.emf.bytes / 1024).toFixed(1)} KiB), ${round.logs.lines} log lines; a month of 5-minute rounds: ${monthGb.toFixed(3)} GB, USD ${(monthGb * LOG_INGESTION_USD_PER_GB).toFixed(2)} at ${LOG_INGESTION_USD_PER_GB}/GB (Lambda's own START/END/REPORT lines not included)`,
    },
    {
      name: `idle resync round (${size}): custom metrics published (name + dimension values)`,
      value: round.series.size,
      unit: 'metrics',
      rerun: RERUN,
      note: `${[...new Set([...round.series].map((one) => one.split(' ')[0]))].join(', ')}; ${leanSeries(round.series).size} with CCM_AWS_CALL_METRICS=service`,
    },
    {
      name: `idle resync round (${size}): SQS requests our code sends`,
      value: sends + visibility,
      unit: 'requests',
      rerun: RERUN,
      note: `SendMessageBatch ${sends}, ChangeMessageVisibilityBatch ${visibility}; the mappings' receives and deletes are Lambda's (docs/cost.md)`,
    },
  ];
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const scale of SCALES) results.push(...figures(scale, await idleRound(scale)));
  const fixed = await fixedParts();
  results.push({
    name: 'stack with the route and service controllers: CloudWatch alarms',
    value: fixed.alarms,
    unit: 'alarms',
    rerun: RERUN,
    note: `${fixed.dashboards} dashboard(s), ${fixed.mappings} event source mappings, ${fixed.queues} queues, ${fixed.functions} functions`,
  });
  return results;
}
