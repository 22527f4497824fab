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
import { instanceAddresses } from '../../functions/node/diff.ts';
import { nodeReconciler } from '../../functions/node/reconciler.ts';
import { nodeLifecycleReconciler } from '../../functions/node-lifecycle/reconciler.ts';
import { resync } from '../../functions/resync/resync.ts';
import { routeReconciler } from '../../functions/route/reconciler.ts';
import { serviceReconciler } from '../../functions/service/reconciler.ts';
import { makeRouteTable } from '../../shared/aws/ec2-fake.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createPowertools } from '../../shared/observability/powertools.ts';
import { routeTableMessage } from '../../shared/queue/route-table-key.ts';
import { type Reconciler, runBatch } from '../../shared/queue/runner.ts';
import { createServiceWorld, SERVICE_QUEUE, type ServiceWorld } from '../helpers/service-world.ts';
import { CLUSTER } from '../helpers/world.ts';
import type { BenchResult } from './types.ts';

const RERUN = 'npm run bench -- cost';
const SERVICES = 200;
const NODES = 100;
/** CCM_RESYNC_MINUTES' default: 12 rounds an hour, 8,640 in a 30-day month. */
const ROUNDS_PER_MONTH = (30 * 24 * 60) / 5;
/** CloudWatch Logs ingestion, standard log class, us-east-1 list price (USD per GB). */
const LOG_INGESTION_USD_PER_GB = 0.5;

/** Lines and bytes written to stdout and stderr while `run` runs, split into EMF documents and the rest. */
async function captured<T>(run: () => Promise<T>): Promise<{ result: T; emf: Tally; logs: Tally }> {
  const emf = { lines: 0, bytes: 0 };
  const logs = { lines: 0, bytes: 0 };
  const tally = (chunk: unknown) => {
    for (const line of String(chunk).split('\n')) {
      if (line.length === 0) continue;
      const into = line.includes('"_aws"') ? emf : logs;
      into.lines += 1;
      into.bytes += Buffer.byteLength(line) + 1;
    }
    return true;
  };
  const out = process.stdout.write;
  const err = process.stderr.write;
  process.stdout.write = tally as typeof process.stdout.write;
  process.stderr.write = tally as typeof process.stderr.write;
  try {
    return { result: await run(), emf, logs };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
}

type Tally = { lines: number; bytes: number };

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

/** 200 NLB Services on 100 Nodes with their routes, converged; then one resync round over them, measured. */
async function idleRound() {
  const w = createServiceWorld();
  w.serviceDeps.resyncQuickCheck = true;
  for (let i = 1; i <= NODES; i++) {
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
  for (let i = 0; i < SERVICES; i++) w.putService(`web-${i}`);
  await w.converge(
    Array.from({ length: SERVICES }, (_, i) => w.serviceKey(`web-${i}`)),
    w.serviceDeps,
    5000,
  );
  await w.enqueue('route.fifo', [routeTableMessage({ eventType: 'RESYNC', eventId: 'converge' })]);
  await w.drain('route.fifo', routeReconciler, w.routeDeps);
  w.resetCounters();
  w.sqs.calls.clear();

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

export async function run(): Promise<BenchResult[]> {
  const round = await idleRound();
  const { invocations } = round.result;
  const lambda = Object.values(invocations).reduce((a, b) => a + b, 0);
  const calls = [...round.aws.values()].reduce((a, b) => a + b, 0);
  const monthGb = ((round.emf.bytes + round.logs.bytes) * ROUNDS_PER_MONTH) / 1e9;
  const scale = `${SERVICES} unchanged NLB Services, ${NODES} Nodes`;
  return [
    {
      name: `idle resync round (${scale}): Lambda invocations`,
      value: lambda,
      unit: 'invocations',
      rerun: RERUN,
      note: Object.entries(invocations)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
    },
    {
      name: `idle resync round (${scale}): EMF metric documents written`,
      value: round.emf.lines,
      unit: 'documents',
      rerun: RERUN,
      note: `${(round.emf.bytes / 1024).toFixed(1)} KiB; ${calls} AWS calls, ${round.result.sent} keys sent`,
    },
    {
      name: `idle resync round (${scale}): CloudWatch Logs bytes (EMF + log lines)`,
      value: Number(((round.emf.bytes + round.logs.bytes) / 1024).toFixed(1)),
      unit: 'KiB',
      rerun: RERUN,
      note: `${round.logs.lines} log lines (${(round.logs.bytes / 1024).toFixed(1)} KiB); Lambda's own START/END/REPORT lines not included`,
    },
    {
      name: `idle month at 5-minute rounds (${scale}): CloudWatch Logs ingestion`,
      value: Number(monthGb.toFixed(3)),
      unit: 'GB',
      rerun: RERUN,
      note: `${ROUNDS_PER_MONTH} rounds; USD ${(monthGb * LOG_INGESTION_USD_PER_GB).toFixed(2)} at ${LOG_INGESTION_USD_PER_GB}/GB`,
    },
    {
      name: `idle resync round (${scale}): SQS requests our code sends`,
      value: (round.sqs.get('SendMessageBatch') ?? 0) + (round.sqs.get('ChangeMessageVisibilityBatch') ?? 0),
      unit: 'requests',
      rerun: RERUN,
      note: `SendMessageBatch ${round.sqs.get('SendMessageBatch') ?? 0}, ChangeMessageVisibilityBatch ${round.sqs.get('ChangeMessageVisibilityBatch') ?? 0}; the mappings' receives and deletes are Lambda's (docs/cost.md)`,
    },
  ];
}
