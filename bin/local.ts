/**
 * `npm start`: the whole control plane in one process.
 * - By default, whatever the environment holds: the embedded simulated AWS account and cluster
 *   (bin/simulation.ts). It runs a bounded scenario, prints a summary and exits 0 once everything
 *   converged (1 if not).
 * - `--real` (the cluster KUBECONFIG or ~/.kube/config names) or `--kubeconfig PATH`: a real cluster and
 *   AWS account, with the usual AWS credential chain (bin/real-cli.ts, bin/real.ts). The relay's
 *   list/watch runs in the process, so changes are reconciled within seconds; the resync is the safety net.
 */
import { type LocalArgs, parseLocalArgs, type SimulationArgs, USAGE, UsageError } from './args.ts';
import { ALL_QUEUES } from './engine.ts';
import { createOutput, formatRows, summaryRows, type ViewSource } from './live-view.ts';
import { runReal } from './real-cli.ts';
import { createSimulation } from './simulation.ts';

let args: LocalArgs;
try {
  args = parseLocalArgs(process.argv.slice(2), process.env);
} catch (err) {
  if (!(err instanceof UsageError)) throw err;
  console.error(`${err.message}\n\n${USAGE}`);
  process.exit(2);
}
if (args.mode === 'help') {
  console.log(USAGE);
  process.exit(0);
}
const output = createOutput(Boolean(process.stdout.isTTY) && !args.plain, args.verbose);
await (args.mode === 'real' ? runReal(args, output) : runSimulation(args));

async function runSimulation(a: SimulationArgs): Promise<void> {
  const log = output.log;
  const wallStart = performance.now();
  const sim = createSimulation({
    nodes: a.nodes,
    ec2LatencyMs: a.ec2LatencyMs,
    throttleDescribes: a.throttle,
    speed: a.speed,
    log,
  });
  const source: ViewSource = {
    title: `serverless-ccm local: simulated cluster "local-sim", ${a.nodes} nodes, EC2 latency ${a.ec2LatencyMs} ms`,
    metrics: sim.metrics,
    queueDepths: () => ALL_QUEUES.map((q) => [q, sim.sqs.depth(q)]),
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
      ['spot interruption', sim.interruption?.summary() ?? 'none (fewer than 4 Nodes)'],
      ['Windows Pod addresses', sim.ipam?.summary() ?? 'none (fewer than 6 Nodes)'],
      ['TargetGroupBinding', sim.binding.summary()],
    ],
  };
  if (!process.stdout.isTTY || a.plain) console.log(`${source.title}\n`);
  // A shell exporting KUBECONFIG for kubectl is common; say once why this is still the simulation.
  if (a.kubeconfigIgnored)
    log.info('KUBECONFIG is set: this is still the simulation (`npm start -- --real` runs against that cluster)');
  output.start(source);
  await sim.runToCompletion();
  if (a.keepRunning) {
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
    `\nconverged: every Node initialized and routed, the stopped one tainted, the terminated one deleted, the load balancer active with the running Nodes as targets, the moved-over Service still on its Classic ELB with the same Nodes registered, the spot-interrupted Node out of the load balancers and drained within its PDB before its instance went${
      sim.ipam ? ', the Windows Pods given VPC addresses and a released one reused only after its cooldown' : ''
    }, and the IngressGroup's two Ingresses served by one Application Load Balancer that kept serving the storefront when the cart's Ingress went.`,
  );
}
