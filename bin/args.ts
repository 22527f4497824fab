import { parseArgs } from 'node:util';

/**
 * `npm start`'s command line. The simulation is the default whatever the environment holds: only
 * `--real` or `--kubeconfig PATH` points the process at a real cluster and account, so a shell that
 * happens to export KUBECONFIG (as most do for kubectl) never turns `npm start` into writes to it.
 */

export const USAGE = `usage: npm start -- [options]

Simulation (default, whatever KUBECONFIG says): every reconciler on an embedded simulated AWS account and cluster.
  --nodes N              instances/Nodes in the scenario (default 9, at least 3; from 6, the last two are Windows)
  --ec2-latency-ms MS    real time each simulated EC2 call takes (default 30)
  --throttle N           DescribeInstances calls EC2 throttles mid-scenario (default 2)
  --speed N              simulated seconds per real second (default 10; 0 = as fast as possible)
  --keep-running         keep polling after the scenario instead of exiting

Real cluster and account (--real: the cluster KUBECONFIG or ~/.kube/config names, as kubectl does;
or --kubeconfig PATH), with the usual AWS credential chain. The relay's list/watch runs in the process,
so changes are reconciled as they happen; it acts only while it holds the relay's Lease.
  --real                 run against the cluster KUBECONFIG (or ~/.kube/config) names
  --kubeconfig PATH      run against the cluster this kubeconfig names
  --cluster-name NAME    required: the <name> of kubernetes.io/cluster/<name> (or CLUSTER_NAME)
  --region REGION        AWS region (or AWS_REGION)
  --cluster-cidrs LIST   the cluster's pod CIDRs (or CLUSTER_CIDRS): also run the route controller
  --vpc-id VPC           the VPC of the load balancers (or VPC_ID): also run the service controller
  --resync-seconds S     how often everything is reconciled again (default 300, as CCM_RESYNC_MINUTES)
  --ec2-events-queue-url URL  the SQS queue EventBridge's EC2 rules feed (or EC2_EVENTS_QUEUE_URL;
                         npm run events:create makes one); without it EC2 changes wait for the resync
  --lease NS/NAME        the relay's leader-election Lease (default kube-system/serverless-ccm-relay,
                         the deployed relay's: only one of them acts)
  --leader-migration-config PATH  a LeaderMigrationConfiguration, honoured as the relay does
  --once                 one resync, drain the queues, print the summary and exit
  --dry-run              read for real, log Kubernetes writes instead of sending them (Node
                         controllers only: routes and load balancers write to AWS, so they stay off;
                         no Lease is taken)

  --verbose              debug log lines
  --plain                plain log lines even on a terminal`;

export class UsageError extends Error {}

interface Common {
  verbose: boolean;
  plain: boolean;
}

export interface SimulationArgs extends Common {
  mode: 'simulation';
  nodes: number;
  ec2LatencyMs: number;
  throttle: number;
  speed: number;
  keepRunning: boolean;
  /** KUBECONFIG was set and ignored: worth one line, since it no longer means a real cluster. */
  kubeconfigIgnored: boolean;
}

export interface RealArgs extends Common {
  mode: 'real';
  /** Undefined: KUBECONFIG, else ~/.kube/config (client-node's loadFromDefault, as kubectl). */
  kubeconfig?: string;
  clusterName?: string;
  region?: string;
  clusterCidrs?: string;
  vpcId?: string;
  resyncSeconds: number;
  ec2EventsQueueUrl?: string;
  lease: { namespace: string; name: string };
  leaderMigrationConfig?: string;
  once: boolean;
  dryRun: boolean;
}

export type LocalArgs = SimulationArgs | RealArgs | { mode: 'help' };

const OPTIONS = {
  nodes: { type: 'string' },
  'ec2-latency-ms': { type: 'string' },
  throttle: { type: 'string' },
  speed: { type: 'string' },
  'keep-running': { type: 'boolean' },
  kubeconfig: { type: 'string' },
  real: { type: 'boolean' },
  'cluster-name': { type: 'string' },
  region: { type: 'string' },
  'cluster-cidrs': { type: 'string' },
  'vpc-id': { type: 'string' },
  'resync-seconds': { type: 'string' },
  'ec2-events-queue-url': { type: 'string' },
  lease: { type: 'string' },
  'leader-migration-config': { type: 'string' },
  once: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  verbose: { type: 'boolean' },
  plain: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;

const SIMULATION_ONLY = ['nodes', 'ec2-latency-ms', 'throttle', 'speed', 'keep-running'] as const;
const REAL_ONLY = [
  'cluster-name',
  'region',
  'cluster-cidrs',
  'vpc-id',
  'resync-seconds',
  'ec2-events-queue-url',
  'lease',
  'leader-migration-config',
  'once',
  'dry-run',
] as const;

const LEASE = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/;

function integer(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`--${name} must be an integer >= ${min} (got ${JSON.stringify(raw)})`);
  return n;
}

/** Parse `npm start`'s arguments; throws UsageError naming the problem. `env` only fills in real-mode settings. */
export function parseLocalArgs(argv: readonly string[], env: Record<string, string | undefined>): LocalArgs {
  let values: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS }>>['values'];
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS }));
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help) return { mode: 'help' };
  const common = { verbose: values.verbose ?? false, plain: values.plain ?? false };
  const real = values.real === true || values.kubeconfig !== undefined;
  const misplaced = (real ? SIMULATION_ONLY : REAL_ONLY).filter((name) => values[name] !== undefined);
  if (misplaced.length > 0) {
    const flags = misplaced.map((n) => `--${n}`).join(', ');
    throw new UsageError(
      real
        ? `${flags}: simulation options, not for a real cluster`
        : `${flags}: real-cluster options; add --real (the cluster KUBECONFIG names) or --kubeconfig PATH`,
    );
  }
  if (!real) {
    return {
      mode: 'simulation',
      ...common,
      nodes: integer('nodes', values.nodes, 9, 3),
      ec2LatencyMs: integer('ec2-latency-ms', values['ec2-latency-ms'], 30, 0),
      throttle: integer('throttle', values.throttle, 2, 0),
      speed: integer('speed', values.speed, 10, 0),
      keepRunning: values['keep-running'] ?? false,
      kubeconfigIgnored: Boolean(env.KUBECONFIG),
    };
  }
  const lease = LEASE.exec(values.lease ?? 'kube-system/serverless-ccm-relay');
  if (!lease) throw new UsageError(`--lease must be NAMESPACE/NAME (got ${JSON.stringify(values.lease)})`);
  const ec2EventsQueueUrl = values['ec2-events-queue-url'] ?? env.EC2_EVENTS_QUEUE_URL;
  if (ec2EventsQueueUrl && !/^https?:\/\/[^/]+\/.+/.test(ec2EventsQueueUrl)) {
    throw new UsageError(
      `--ec2-events-queue-url must be an SQS queue URL such as https://sqs.eu-west-1.amazonaws.com/111122223333/ec2-events (got ${JSON.stringify(ec2EventsQueueUrl)})`,
    );
  }
  const optional = <K extends string>(key: K, value: string | undefined) => (value ? { [key]: value } : {});
  return {
    mode: 'real',
    ...common,
    ...optional('kubeconfig', values.kubeconfig),
    ...optional('clusterName', values['cluster-name'] ?? env.CLUSTER_NAME),
    ...optional('region', values.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION),
    ...optional('clusterCidrs', values['cluster-cidrs'] ?? env.CLUSTER_CIDRS),
    ...optional('vpcId', values['vpc-id'] ?? env.VPC_ID),
    ...optional('ec2EventsQueueUrl', ec2EventsQueueUrl),
    ...optional('leaderMigrationConfig', values['leader-migration-config']),
    resyncSeconds: integer('resync-seconds', values['resync-seconds'], 300, 5),
    lease: { namespace: lease[1]!, name: lease[3]! },
    once: values.once ?? false,
    dryRun: values['dry-run'] ?? false,
  };
}
