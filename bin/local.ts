/**
 * `npm start`: the whole control plane in one process. With nothing configured it runs on the
 * embedded simulated AWS account and cluster (bin/simulation.ts), converges it, prints a summary
 * and exits 0 when everything converged.
 *   npm start -- --nodes 12 --ec2-latency-ms 40 --throttle 3 --verbose
 */
import { parseArgs } from 'node:util';
import type { Log } from '../shared/observability/log.ts';
import { MetricName } from '../shared/observability/metrics.ts';
import { createSimulation } from './simulation.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '9' },
    'ec2-latency-ms': { type: 'string', default: '30' },
    throttle: { type: 'string', default: '2' },
    verbose: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  console.log(`usage: npm start -- [--nodes N] [--ec2-latency-ms MS] [--throttle N] [--verbose]

Runs every reconciler on an embedded simulated AWS account and Kubernetes cluster:
instances boot and register Nodes, one instance stops and one terminates; the controllers
initialize, taint and delete Nodes through the same SQS FIFO workqueue semantics as in AWS.`);
  process.exit(0);
}

function positiveInt(name: string, raw: string, min: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    console.error(`--${name} must be an integer >= ${min} (got ${JSON.stringify(raw)})`);
    process.exit(2);
  }
  return n;
}

const nodes = positiveInt('nodes', values.nodes, 3);
const latency = positiveInt('ec2-latency-ms', values['ec2-latency-ms'], 0);
const throttle = positiveInt('throttle', values.throttle, 0);

const line = (level: string) => (message: string, fields?: Record<string, unknown>) => {
  const extra = fields
    ? Object.entries(fields)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ')
    : '';
  console.log(`${level.padEnd(5)} ${message}${extra ? `  ${extra}` : ''}`);
};
const log: Log = {
  debug: values.verbose ? line('DEBUG') : () => {},
  info: line('INFO'),
  warn: line('WARN'),
  error: line('ERROR'),
};

console.log(`serverless-ccm local: simulated cluster "local-sim" with ${nodes} nodes, EC2 latency ${latency} ms\n`);
const wallStart = performance.now();
const sim = createSimulation({ nodes, ec2LatencyMs: latency, throttleDescribes: throttle, log });
await sim.runToCompletion();
const wall = (performance.now() - wallStart) / 1000;

const m = sim.metrics;
const summary: [string, string | number][] = [
  ['simulated time', `${(sim.elapsed() / 1000).toFixed(1)} s (wall ${wall.toFixed(1)} s)`],
  ['reconciles', m.total(MetricName.Reconciles)],
  [
    '  requeued or retried',
    m.total(MetricName.Reconciles, { result: 'retry' }) + m.total(MetricName.Reconciles, { result: 'requeue' }),
  ],
  ['nodes initialized', m.total(MetricName.NodesInitialized)],
  ['nodes tainted (shutdown)', m.total(MetricName.NodesTainted)],
  ['nodes deleted', m.total(MetricName.NodesDeleted)],
  ['EC2 events routed', m.total(MetricName.KeysSent)],
  ['EC2 DescribeInstances calls', sim.ec2.callCount('DescribeInstances')],
  ['EC2 throttled answers', m.total(MetricName.ReconcileErrors, { errorClass: 'throttled' })],
  ['Kubernetes writes', sim.kube.writeCount()],
  ['Events recorded', sim.kube.events.length],
  [
    'DLQ messages',
    ['node-dlq.fifo', 'node-lifecycle-dlq.fifo', 'ec2-events-dlq'].reduce((n, q) => n + sim.sqs.depth(q), 0),
  ],
];
console.log('\nsummary');
for (const [k, v] of summary) console.log(`  ${k.padEnd(30)} ${v}`);

const problems = sim.problems();
if (problems.length > 0) {
  console.log('\nNOT converged:');
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log('\nconverged: every Node initialized, the stopped one tainted, the terminated one deleted.');
