import { parseArgs } from 'node:util';
import { SWITCHES } from '../shared/controllers.ts';
import { INGRESS_STAGE_SCHEMA } from '../stacks/config-ingress.ts';
import { INTERRUPTION_STAGE_SCHEMA } from '../stacks/config-interruption.ts';
import { IPAM_STAGE_SCHEMA } from '../stacks/config-ipam.ts';
import { TGB_STAGE_SCHEMA } from '../stacks/config-tgb.ts';

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
  --interruption         also run the interruption controller (or CCM_INTERRUPTION=true, the stage's switch);
                         its notices come from EC2 events only: give it --ec2-events-queue-url
  --ipam                 also run the Windows IP address manager (or CCM_IPAM=true, the stage's switch);
                         it needs --vpc-id too, as the stage needs CCM_VPC_ID
  --ingress              also run the Ingress controller (or CCM_INGRESS=true, the stage's switch): ALBs for
                         Ingresses, as the AWS Load Balancer Controller (stop that one first); needs --vpc-id
  --webhook-port PORT    with --ipam: serve the Pod admission webhooks on this port (HTTPS) and print the
                         webhook configurations to apply, with clientConfig.url
  --webhook-host HOST    the name or address the API server reaches this machine at (default: its hostname)
  --resync-seconds S     how often each controller is reconciled again; default as deployed (every 300 s,
                         CCM_RESYNC_MINUTES=5, for all but the interruption controller, which has no resync)
  --ec2-events-queue-url URL  the SQS queue EventBridge's EC2 rules feed (or EC2_EVENTS_QUEUE_URL;
                         npm run events:create makes one); without it EC2 changes wait for the resync
  --lease NS/NAME        the relay's leader-election Lease (default kube-system/serverless-ccm-relay,
                         the deployed relay's: only one of them acts)
  --leader-migration-config PATH  a LeaderMigrationConfiguration, honoured as the relay does
  --once                 one resync, drain the queues, print the summary and exit
  --dry-run              read for real, log Kubernetes writes instead of sending them (Node
                         controllers only: the others write to AWS, so they stay off; no Lease is taken)

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
  /** The stage's switches of the controllers with no setting of their own to switch them (shared/controllers.ts). */
  interruption: boolean;
  ipam: boolean;
  ingress: boolean;
  targetGroupBinding: boolean;
  /** Serve the IPAM admission webhooks here, for an API server that reaches this machine at `host`. */
  webhooks?: { port: number; host?: string };
  /** Undefined: each controller's period as deployed. */
  resyncSeconds?: number;
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
  interruption: { type: 'boolean' },
  ipam: { type: 'boolean' },
  ingress: { type: 'boolean' },
  'target-group-binding': { type: 'boolean' },
  'webhook-port': { type: 'string' },
  'webhook-host': { type: 'string' },
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
  'interruption',
  'ipam',
  'ingress',
  'target-group-binding',
  'webhook-port',
  'webhook-host',
  'resync-seconds',
  'ec2-events-queue-url',
  'lease',
  'leader-migration-config',
  'once',
  'dry-run',
] as const;

const LEASE = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/;

function integer(name: string, raw: string | undefined, fallback: number, min: number, max = Infinity): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    const range = max === Infinity ? `>= ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`--${name} must be an integer ${range} (got ${JSON.stringify(raw)})`);
  }
  return n;
}

/**
 * A controller's switch: its flag, else the stage's variable read as the stage reads it (the same schema,
 * stacks/config-interruption.ts and config-ipam.ts), so `CCM_IPAM=yes` means here what it means to the stage.
 */
const STAGE_SWITCH_SCHEMAS = {
  interruption: INTERRUPTION_STAGE_SCHEMA.CCM_INTERRUPTION,
  ipam: IPAM_STAGE_SCHEMA.CCM_IPAM,
  ingress: INGRESS_STAGE_SCHEMA.CCM_INGRESS,
  targetGroupBinding: TGB_STAGE_SCHEMA.CCM_TARGET_GROUP_BINDING,
};

function stageSwitch(name: keyof typeof STAGE_SWITCH_SCHEMAS, flag: boolean | undefined, env: Env): boolean {
  if (flag) return true;
  const variable = SWITCHES[name].variable;
  const schema = STAGE_SWITCH_SCHEMAS[name];
  const parsed = schema.safeParse(env[variable]);
  if (!parsed.success) throw new UsageError(`${variable} must be true or false (got ${JSON.stringify(env[variable])})`);
  return parsed.data;
}

/** Parse `npm start`'s arguments; throws UsageError naming the problem. `env` only fills in real-mode settings. */
type Env = Record<string, string | undefined>;

export function parseLocalArgs(argv: readonly string[], env: Env): LocalArgs {
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
  const ipam = stageSwitch('ipam', values.ipam, env);
  const webhookPort = values['webhook-port'];
  if ((webhookPort ?? values['webhook-host']) !== undefined && !ipam) {
    throw new UsageError("--webhook-port, --webhook-host: the webhooks are the IP address manager's; add --ipam");
  }
  if (values['webhook-host'] !== undefined && webhookPort === undefined) {
    throw new UsageError('--webhook-host: give --webhook-port too (the port to serve the webhooks on)');
  }
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
    interruption: stageSwitch('interruption', values.interruption, env),
    ipam,
    ingress: stageSwitch('ingress', values.ingress, env),
    targetGroupBinding: stageSwitch('targetGroupBinding', values['target-group-binding'], env),
    ...(webhookPort !== undefined
      ? {
          webhooks: {
            port: integer('webhook-port', webhookPort, 0, 1, 65_535),
            ...optional('host', values['webhook-host']),
          },
        }
      : {}),
    ...(values['resync-seconds'] !== undefined
      ? { resyncSeconds: integer('resync-seconds', values['resync-seconds'], 0, 5) }
      : {}),
    lease: { namespace: lease[1]!, name: lease[3]! },
    once: values.once ?? false,
    dryRun: values['dry-run'] ?? false,
  };
}
