import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import * as z from 'zod';
import { configSchema } from '../shared/config/config.ts';
import { csv } from '../shared/config/csv.ts';
import type { ServiceLoadBalancerType } from '../shared/config/schemas.ts';
import { INGRESS_STAGE_SCHEMA, type IngressStage, ingressProblems, ingressStage } from './config-ingress.ts';
import {
  INTERRUPTION_SETTINGS,
  INTERRUPTION_STAGE_SCHEMA,
  type InterruptionStage,
  interruptionStage,
} from './config-interruption.ts';
import { IPAM_STAGE_SCHEMA, type IpamStage, ipamProblems, ipamStage } from './config-ipam.ts';
import { TGB_STAGE_SCHEMA, type TgbStage, tgbProblems, tgbStage } from './config-tgb.ts';

/**
 * The stage configuration: everything `sst deploy --stage <name>` needs to know about the cluster it
 * serves. It is read from the environment, with the same `.env` files SST itself loads
 * (`.env`, `.env.local`, `.env.<stage>`, `.env.<stage>.local`, later files winning), so one
 * `.env.<stage>` per cluster is the whole configuration and `npm run synth -- --stage <name>` sees
 * exactly what `sst deploy --stage <name>` sees. Every setting is `CCM_`-prefixed so a shell's
 * `AWS_REGION` or `LOG_LEVEL` never leaks into a deployment by accident.
 *
 * A bad, missing or unknown setting fails synthesis with one line per problem naming the variable.
 */

export const APP_NAME = 'serverless-ccm';

const PREFIX = 'CCM_';

/**
 * Every Lambda function the control plane deploys, with its own defaults. Adding a reconciler adds
 * its name here (its settings become `CCM_<NAME>_MEMORY_MB`, ...) and one `reconciler(...)` call, made from
 * `control-plane.ts` (a reconciler with permissions of its own gets a file, as route.ts, service.ts and ipam.ts).
 *
 * maxReceiveCount: every retry and every requeue is a receive (docs/adr/0002). With the runner's
 * backoff (2 s doubling to a 300 s cap, equal jitter) 100 receives are roughly six hours of
 * retrying before a key lands in its DLQ, long enough to outlast an EC2 or API server incident.
 * The EC2 events router only retries a record SQS refused or an API server it could not reach, so a
 * few receives suffice, and its queue's short retention would expire more anyway.
 */
export const FUNCTION_DEFAULTS = {
  node: { memoryMb: 512, timeoutSeconds: 60, maxConcurrency: 5, maxReceiveCount: 100 },
  'node-lifecycle': { memoryMb: 512, timeoutSeconds: 60, maxConcurrency: 5, maxReceiveCount: 100 },
  'ec2-events': { memoryMb: 512, timeoutSeconds: 30, maxConcurrency: 5, maxReceiveCount: 3 },
  // One key for the whole table (docs/adr/0003): concurrency beyond 2 never helps, it only waits.
  route: { memoryMb: 512, timeoutSeconds: 120, maxConcurrency: 2, maxReceiveCount: 100 },
  // A reconcile is a dozen or more ELBv2 and EC2 calls, each retried under throttling: 120 s covers it.
  // Every wait is a requeue, and so a receive (docs/adr/0002): an NLB provisions for minutes and a deleted
  // one's network interfaces hold its security group for minutes more, each look SERVICE_*_REQUEUE_SECONDS
  // (60 s by default) apart. 200 receives are over three hours of such waiting (about twelve of error
  // backoff) before a Service key reaches the DLQ. One key per Service, so a burst of Service changes runs in
  // parallel batches; beyond 10 at once ELBv2's per-account API rate limits, not Lambda, set the pace.
  service: { memoryMb: 512, timeoutSeconds: 120, maxConcurrency: 10, maxReceiveCount: 200 },
  // One key per Node; every drain pass is a requeue, and so a receive (INTERRUPTION_DRAIN_REQUEUE_SECONDS apart,
  // 5 s by default): 1000, the most SQS allows, is over an hour of passes, as long as a lifecycle hook's drain
  // is likely to last. A notice wave (a spot capacity pool reclaimed) drains its Nodes in parallel.
  interruption: { memoryMb: 512, timeoutSeconds: 60, maxConcurrency: 10, maxReceiveCount: 1000 },
  // One key per Windows Node and one for garbage collection; a pass is a few EC2 calls. Every cooldown wait is a
  // requeue, and so a receive (docs/adr/0002): 100 receives are hours of them. A Node is worked on by one pass at a
  // time (FIFO group), so concurrency only spreads Nodes; 5 keeps EC2's mutating-call rate limits far away.
  ipam: { memoryMb: 512, timeoutSeconds: 60, maxConcurrency: 5, maxReceiveCount: 100 },
  // One key per IngressGroup, whose pass is the service controller's and then some: a listener's rules (up to 100
  // an ALB) are read and written one call each, so 180 s. Waiting on an ALB or a deletion is a requeue, as for
  // Services, hence the same 200 receives; 5 at once keeps ELBv2's per-account rate limits for the Services too.
  ingress: { memoryMb: 512, timeoutSeconds: 180, maxConcurrency: 5, maxReceiveCount: 200 },
  // One key per TargetGroupBinding; a pass is a few reads and at most one Register and one Deregister call. Every
  // wait on a gated Pod's target health is a requeue, and so a receive (TGB_READINESS_REQUEUE_SECONDS apart, 10 s
  // by default): 1000, the most SQS allows, is close to three hours of a rollout waiting on health checks. 5 at
  // once keeps ELBv2's per-account rate limits for the Services and Ingresses too.
  'target-group-binding': { memoryMb: 512, timeoutSeconds: 60, maxConcurrency: 5, maxReceiveCount: 1000 },
  // Started by a schedule, not a queue: concurrency and receive count do not apply to it.
  resync: { memoryMb: 512, timeoutSeconds: 120, maxConcurrency: 2, maxReceiveCount: 1 },
} as const satisfies Record<string, Omit<FunctionSettings, 'reservedConcurrency'>>;

export type FunctionName = keyof typeof FUNCTION_DEFAULTS;
export const FUNCTION_NAMES = Object.keys(FUNCTION_DEFAULTS) as FunctionName[];

export interface FunctionSettings {
  memoryMb: number;
  timeoutSeconds: number;
  /** Unset: the function draws on the account's unreserved pool. */
  reservedConcurrency?: number;
  /** The event source mapping's maximum concurrency: how many batches run at once. */
  maxConcurrency: number;
  /** Receives before a message moves to the DLQ. */
  maxReceiveCount: number;
}

/**
 * SQS should keep a message invisible for longer than any invocation holding it can run, batching
 * and retries included; AWS recommends six times the function timeout.
 * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html
 */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

/** The retention periods CloudWatch Logs accepts. */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

export type RelayIdentity = 'pod-identity' | 'irsa';

export interface StageConfig {
  clusterName: string;
  region: string;
  kubernetes: {
    authMode: 'eks' | 'token';
    apiEndpoint: string;
    caData?: string;
    /** The EKS cluster name, for tokens, DescribeCluster, access entries and Pod Identity. */
    eksClusterName: string;
    tokenSecretId?: string;
    tokenSecretKmsKeyArn?: string;
    /** eks mode: create an EKS access entry per function role (cluster authentication mode API or API_AND_CONFIG_MAP). */
    createAccessEntries: boolean;
  };
  /** Lambdas run in these subnets when the API endpoint is private. */
  vpc?: { subnetIds: string[]; securityGroupIds: string[] };
  nodeIpFamilies: ('ipv4' | 'ipv6')[];
  logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** The dimensions of `AwsCalls`: by operation, or by AWS service only (fewer custom metrics; docs/cost.md). */
  awsCallMetrics: 'operation' | 'service';
  logRetentionDays: number;
  nodeIndexTtlSeconds: number;
  /** Minutes between resync rounds (every key enqueued again: the safety net for lost events). */
  resyncMinutes: number;
  functions: Record<FunctionName, FunctionSettings>;
  ec2Events: { retentionSeconds: number; ageAlarmSeconds: number };
  /** The route controller, deployed only when the cluster CIDRs are given (clusters routing pods through the VPC table). */
  routes?: { clusterCidrs: string[]; routeTableId?: string; routeTableLimit: number };
  /** The Service load-balancer controller, deployed only when the cluster's VPC is given. */
  services?: {
    /** The VPC its load balancers, target groups and security groups go in. */
    vpcId: string;
    loadBalancerClass?: string;
    /** kube-apiserver's `--service-node-port-range`, `from-to`; unset: the controller's default. */
    nodePortRange?: string;
    /** Tag keys another tool manages on the controller's resources: never removed; unset: none. */
    externalManagedTags?: string[];
    /** What a Service gets when its annotations do not say: `nlb` or `classic` (SERVICE_DEFAULT_LOAD_BALANCER_TYPE). */
    defaultLoadBalancerType: ServiceLoadBalancerType;
    provisioningRequeueSeconds: number;
    cleanupRequeueSeconds: number;
    /** How long a replaced NLB keeps serving after the status moved to its successor (SERVICE_REPLACEMENT_GRACE_SECONDS). */
    replacementGraceSeconds: number;
    /** Whether it serves the AWS Load Balancer Controller's Services too (CCM_LBC_SERVICES). */
    lbcServices: boolean;
  };
  /** The interruption controller, deployed only when CCM_INTERRUPTION is on. */
  interruption?: InterruptionStage;
  /** The Windows IP address manager, deployed only when CCM_IPAM is on (in the VPC of CCM_VPC_ID). */
  ipam?: IpamStage;
  /** The Ingress controller, deployed only when CCM_INGRESS is on (in the VPC of CCM_VPC_ID). */
  ingress?: IngressStage;
  /** The TargetGroupBinding controller, deployed only when CCM_TARGET_GROUP_BINDING is on. */
  targetGroupBinding?: TgbStage;
  alarms: { queueAgeSeconds: number; topicArn?: string };
  /** Whether the stage has its CloudWatch dashboard (USD 3 a month past an account's first three: docs/cost.md). */
  dashboard: boolean;
  relay: {
    identity: RelayIdentity;
    namespace: string;
    serviceAccount: string;
    /** irsa: the cluster's IAM OIDC provider and its issuer host/path (the provider ARN after `oidc-provider/`). */
    oidcProviderArn?: string;
    oidcIssuer?: string;
    /** pod-identity: create the EKS Pod Identity association in the stack. */
    createPodIdentityAssociation: boolean;
  };
}

export class StageConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid stage configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'StageConfigError';
  }
}

const runtime = configSchema().shape;

const int = (min: number, max: number) =>
  z.coerce
    .number({ error: `must be a whole number from ${min} to ${max}` })
    .int(`must be a whole number from ${min} to ${max}`)
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

const bool = z.stringbool({ error: 'must be true or false' });

const idList = (prefix: string) =>
  csv(
    z.string().regex(new RegExp(`^${prefix}-[0-9a-f]{8,17}$`), `each ID must look like ${prefix}-0123abcd`),
    'must list at least one ID',
  );

const k8sName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a Kubernetes name (lowercase letters, digits, "-")');

const arn = (service: string, what: string) =>
  z.string().regex(new RegExp(`^arn:aws[a-z-]*:${service}:`), `must be the ARN of ${what}`);

const StaticSchema = z
  .object({
    CCM_CLUSTER_NAME: runtime.CLUSTER_NAME,
    CCM_REGION: runtime.AWS_REGION,
    CCM_KUBERNETES_AUTH_MODE: z
      .enum(['eks', 'token'], { error: 'must be eks (IAM token) or token (Secrets Manager)' })
      .default('eks'),
    CCM_KUBERNETES_API_ENDPOINT: z.url({
      error: 'is required: the https:// URL of the API server the functions call',
      protocol: /^https$/,
    }),
    CCM_KUBERNETES_CA_DATA: runtime.KUBERNETES_CA_DATA,
    CCM_EKS_CLUSTER_NAME: z.string().min(1).optional(),
    CCM_KUBERNETES_TOKEN_SECRET_ID: z.string().min(1).optional(),
    CCM_KUBERNETES_TOKEN_SECRET_KMS_KEY_ARN: arn('kms', 'the KMS key encrypting the token secret').optional(),
    CCM_EKS_ACCESS_ENTRIES: bool.default(true),
    CCM_VPC_SUBNET_IDS: z.optional(idList('subnet')),
    CCM_VPC_SECURITY_GROUP_IDS: z.optional(idList('sg')),
    CCM_NODE_IP_FAMILIES: runtime.NODE_IP_FAMILIES,
    CCM_LOG_LEVEL: runtime.LOG_LEVEL,
    CCM_AWS_CALL_METRICS: runtime.AWS_CALL_METRICS,
    CCM_LOG_RETENTION_DAYS: z.coerce
      .number()
      .refine((n) => (LOG_RETENTION_DAYS as readonly number[]).includes(n), {
        error: `must be one of the periods CloudWatch Logs accepts: ${LOG_RETENTION_DAYS.join(', ')}`,
      })
      .default(30),
    CCM_NODE_INDEX_TTL_SECONDS: runtime.NODE_INDEX_TTL_SECONDS,
    CCM_RESYNC_MINUTES: int(1, 1440).default(5),
    CCM_CLUSTER_CIDRS: runtime.CLUSTER_CIDRS,
    CCM_ROUTE_TABLE_ID: runtime.ROUTE_TABLE_ID,
    CCM_ROUTE_TABLE_LIMIT: runtime.ROUTE_TABLE_LIMIT,
    CCM_VPC_ID: runtime.VPC_ID,
    CCM_LOAD_BALANCER_CLASS: runtime.LOAD_BALANCER_CLASS,
    CCM_SERVICE_NODE_PORT_RANGE: runtime.SERVICE_NODE_PORT_RANGE,
    CCM_SERVICE_EXTERNAL_MANAGED_TAGS: runtime.SERVICE_EXTERNAL_MANAGED_TAGS,
    CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE: runtime.SERVICE_DEFAULT_LOAD_BALANCER_TYPE,
    CCM_SERVICE_PROVISIONING_REQUEUE_SECONDS: runtime.SERVICE_PROVISIONING_REQUEUE_SECONDS,
    CCM_SERVICE_CLEANUP_REQUEUE_SECONDS: runtime.SERVICE_CLEANUP_REQUEUE_SECONDS,
    CCM_SERVICE_REPLACEMENT_GRACE_SECONDS: runtime.SERVICE_REPLACEMENT_GRACE_SECONDS,
    ...INTERRUPTION_STAGE_SCHEMA,
    ...IPAM_STAGE_SCHEMA,
    ...INGRESS_STAGE_SCHEMA,
    ...TGB_STAGE_SCHEMA,
    CCM_EC2_EVENTS_RETENTION_SECONDS: int(60, 1_209_600).default(900),
    CCM_EC2_EVENTS_AGE_ALARM_SECONDS: int(60, 1_209_600).default(300),
    CCM_QUEUE_AGE_ALARM_SECONDS: int(60, 1_209_600).default(900),
    CCM_ALARM_TOPIC_ARN: arn('sns', 'an SNS topic').optional(),
    CCM_DASHBOARD: bool.default(true),
    CCM_RELAY_IDENTITY: z
      .enum(['pod-identity', 'irsa'], {
        error: 'must be pod-identity (EKS Pod Identity) or irsa (IAM roles for service accounts)',
      })
      .default('pod-identity'),
    CCM_RELAY_NAMESPACE: k8sName.default('kube-system'),
    CCM_RELAY_SERVICE_ACCOUNT: k8sName.default('serverless-ccm-relay'),
    CCM_RELAY_OIDC_PROVIDER_ARN: z
      .string()
      .regex(
        /^arn:aws[a-z-]*:iam::\d{12}:oidc-provider\/.+$/,
        'must be the ARN of an IAM OIDC provider (arn:aws:iam::<account>:oidc-provider/<issuer host and path>)',
      )
      .optional(),
    CCM_RELAY_POD_IDENTITY_ASSOCIATION: bool.default(true),
  })
  .superRefine((c, ctx) => {
    const issue = (setting: string, message: string) => ctx.addIssue({ code: 'custom', path: [setting], message });
    if (c.CCM_KUBERNETES_AUTH_MODE === 'token' && !c.CCM_KUBERNETES_TOKEN_SECRET_ID) {
      issue(
        'CCM_KUBERNETES_TOKEN_SECRET_ID',
        'is required when CCM_KUBERNETES_AUTH_MODE=token (the Secrets Manager secret holding token and CA)',
      );
    }
    if (!c.CCM_VPC_SUBNET_IDS !== !c.CCM_VPC_SECURITY_GROUP_IDS) {
      const missing = c.CCM_VPC_SUBNET_IDS ? 'CCM_VPC_SECURITY_GROUP_IDS' : 'CCM_VPC_SUBNET_IDS';
      issue(missing, 'is required too: Lambdas in a VPC need both subnets and security groups');
    }
    if (c.CCM_RELAY_IDENTITY === 'irsa' && !c.CCM_RELAY_OIDC_PROVIDER_ARN) {
      issue(
        'CCM_RELAY_OIDC_PROVIDER_ARN',
        "is required when CCM_RELAY_IDENTITY=irsa (the cluster's IAM OIDC provider)",
      );
    }
    if (c.CCM_EC2_EVENTS_AGE_ALARM_SECONDS >= c.CCM_EC2_EVENTS_RETENTION_SECONDS) {
      issue(
        'CCM_EC2_EVENTS_AGE_ALARM_SECONDS',
        `must be below CCM_EC2_EVENTS_RETENTION_SECONDS (${c.CCM_EC2_EVENTS_RETENTION_SECONDS}), or messages expire before the alarm can fire`,
      );
    }
  });

const FUNCTION_SUFFIXES = {
  memoryMb: 'MEMORY_MB',
  timeoutSeconds: 'TIMEOUT_SECONDS',
  reservedConcurrency: 'RESERVED_CONCURRENCY',
  maxConcurrency: 'MAX_CONCURRENCY',
  maxReceiveCount: 'MAX_RECEIVE_COUNT',
} as const satisfies Record<keyof FunctionSettings, string>;

/** `CCM_NODE_LIFECYCLE_TIMEOUT_SECONDS` for ('node-lifecycle', 'timeoutSeconds'). */
export function functionSetting(name: FunctionName, field: keyof FunctionSettings): string {
  return `${PREFIX}${name.toUpperCase().replace(/-/g, '_')}_${FUNCTION_SUFFIXES[field]}`;
}

function functionSchema(name: FunctionName) {
  const d = FUNCTION_DEFAULTS[name];
  return z
    .object({
      memoryMb: int(128, 10_240).default(d.memoryMb),
      timeoutSeconds: int(1, 900).default(d.timeoutSeconds),
      reservedConcurrency: int(1, 10_000).optional(),
      // An SQS event source mapping runs at least 2 concurrent batches (its documented minimum).
      maxConcurrency: int(2, 1000).default(d.maxConcurrency),
      maxReceiveCount: int(1, 1000).default(d.maxReceiveCount),
    })
    .superRefine((s, ctx) => {
      // Lambda throttles the pollers above reserved concurrency, and every throttled batch counts as a
      // receive towards the DLQ; AWS advises maximum concurrency <= reserved concurrency.
      if (s.reservedConcurrency !== undefined && s.maxConcurrency > s.reservedConcurrency) {
        ctx.addIssue({
          code: 'custom',
          path: ['maxConcurrency'],
          message: `must not exceed ${functionSetting(name, 'reservedConcurrency')} (${s.reservedConcurrency}): throttled batches count towards the DLQ`,
        });
      }
    });
}

const STATIC_SETTINGS = new Set(Object.keys(StaticSchema.shape));
const FUNCTION_SETTINGS = new Set(
  FUNCTION_NAMES.flatMap((name) =>
    (Object.keys(FUNCTION_SUFFIXES) as (keyof FunctionSettings)[]).map((f) => functionSetting(name, f)),
  ),
);

/** Settings only the service controller reads. */
const SERVICE_SETTINGS = [
  'CCM_LOAD_BALANCER_CLASS',
  'CCM_SERVICE_NODE_PORT_RANGE',
  'CCM_SERVICE_EXTERNAL_MANAGED_TAGS',
  'CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE',
  'CCM_SERVICE_PROVISIONING_REQUEUE_SECONDS',
  'CCM_SERVICE_CLEANUP_REQUEUE_SECONDS',
  'CCM_SERVICE_REPLACEMENT_GRACE_SECONDS',
] as const satisfies readonly (keyof typeof StaticSchema.shape)[];

/** The names of every setting, for documentation and tests. */
export const STAGE_SETTINGS: readonly string[] = [...STATIC_SETTINGS, ...FUNCTION_SETTINGS];

/**
 * Parse and check a stage configuration. Throws StageConfigError listing every bad, missing or
 * unknown `CCM_` setting, each line starting with the variable's name.
 */
export function loadStageConfig(env: Record<string, string | undefined>): StageConfig {
  const input = Object.fromEntries(
    Object.entries(env).filter(([k, v]) => k.startsWith(PREFIX) && v !== undefined && v.trim() !== ''),
  ) as Record<string, string>;
  const problems: string[] = [];
  const describe = (setting: string, message: string) => {
    const value = input[setting];
    problems.push(`${setting}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}: ${message}`);
  };

  for (const key of Object.keys(input)) {
    // A misspelt setting would otherwise be ignored silently and its default deployed.
    if (!STATIC_SETTINGS.has(key) && !FUNCTION_SETTINGS.has(key)) {
      describe(key, 'is not a setting (see deploy/README-deploy.md for the list)');
    }
  }

  const parsed = StaticSchema.safeParse(input);
  if (!parsed.success) {
    for (const i of parsed.error.issues) describe(String(i.path[0] ?? '(environment)'), i.message);
  }

  const functions: Partial<Record<FunctionName, FunctionSettings>> = {};
  for (const name of FUNCTION_NAMES) {
    const fields = Object.fromEntries(
      (Object.keys(FUNCTION_SUFFIXES) as (keyof FunctionSettings)[]).map((f) => [f, input[functionSetting(name, f)]]),
    );
    const result = functionSchema(name).safeParse(fields);
    if (result.success) functions[name] = result.data;
    else {
      for (const i of result.error.issues)
        describe(functionSetting(name, i.path[0] as keyof FunctionSettings), i.message);
    }
  }

  if (!input.CCM_VPC_ID) {
    // Settings of a controller that is not deployed would be dropped without a word.
    for (const setting of SERVICE_SETTINGS) {
      if (input[setting] !== undefined) {
        describe(setting, 'has no effect without CCM_VPC_ID, which deploys the service controller');
      }
    }
  }

  if (parsed.success && !parsed.data.CCM_INTERRUPTION) {
    for (const setting of INTERRUPTION_SETTINGS) {
      if (input[setting] !== undefined) {
        describe(setting, 'has no effect without CCM_INTERRUPTION=true, which deploys the interruption controller');
      }
    }
  }

  if (parsed.success) {
    for (const [setting, message] of ipamProblems(input, parsed.data)) describe(setting, message);
    for (const [setting, message] of ingressProblems(input, parsed.data)) describe(setting, message);
    for (const [setting, message] of tgbProblems(input, parsed.data)) describe(setting, message);
  }

  if (parsed.success && functions['ec2-events']) {
    // Messages the router keeps failing must reach the DLQ (and its alarm) before they expire.
    const events = functions['ec2-events'];
    const needed = events.maxReceiveCount * events.timeoutSeconds * VISIBILITY_TIMEOUT_FACTOR;
    if (parsed.data.CCM_EC2_EVENTS_RETENTION_SECONDS < needed) {
      describe(
        'CCM_EC2_EVENTS_RETENTION_SECONDS',
        `must be at least ${needed} (${functionSetting('ec2-events', 'maxReceiveCount')} x visibility timeout ${events.timeoutSeconds * VISIBILITY_TIMEOUT_FACTOR} s), or failing events expire before reaching the DLQ`,
      );
    }
  }

  if (problems.length > 0 || !parsed.success) throw new StageConfigError(problems);
  const c = parsed.data;
  const interruption = interruptionStage(c);
  const ipam = ipamStage(c);
  const ingress = ingressStage(c);
  const targetGroupBinding = tgbStage(c);
  const oidcIssuer = c.CCM_RELAY_OIDC_PROVIDER_ARN?.replace(/^.*:oidc-provider\//, '');
  return {
    clusterName: c.CCM_CLUSTER_NAME,
    region: c.CCM_REGION,
    kubernetes: {
      authMode: c.CCM_KUBERNETES_AUTH_MODE,
      apiEndpoint: c.CCM_KUBERNETES_API_ENDPOINT,
      ...(c.CCM_KUBERNETES_CA_DATA ? { caData: c.CCM_KUBERNETES_CA_DATA } : {}),
      eksClusterName: c.CCM_EKS_CLUSTER_NAME ?? c.CCM_CLUSTER_NAME,
      ...(c.CCM_KUBERNETES_TOKEN_SECRET_ID ? { tokenSecretId: c.CCM_KUBERNETES_TOKEN_SECRET_ID } : {}),
      ...(c.CCM_KUBERNETES_TOKEN_SECRET_KMS_KEY_ARN
        ? { tokenSecretKmsKeyArn: c.CCM_KUBERNETES_TOKEN_SECRET_KMS_KEY_ARN }
        : {}),
      createAccessEntries: c.CCM_KUBERNETES_AUTH_MODE === 'eks' && c.CCM_EKS_ACCESS_ENTRIES,
    },
    ...(c.CCM_VPC_SUBNET_IDS && c.CCM_VPC_SECURITY_GROUP_IDS
      ? { vpc: { subnetIds: c.CCM_VPC_SUBNET_IDS, securityGroupIds: c.CCM_VPC_SECURITY_GROUP_IDS } }
      : {}),
    nodeIpFamilies: c.CCM_NODE_IP_FAMILIES,
    logLevel: c.CCM_LOG_LEVEL,
    awsCallMetrics: c.CCM_AWS_CALL_METRICS,
    logRetentionDays: c.CCM_LOG_RETENTION_DAYS,
    nodeIndexTtlSeconds: c.CCM_NODE_INDEX_TTL_SECONDS,
    resyncMinutes: c.CCM_RESYNC_MINUTES,
    functions: functions as Record<FunctionName, FunctionSettings>,
    ...(c.CCM_CLUSTER_CIDRS
      ? {
          routes: {
            clusterCidrs: c.CCM_CLUSTER_CIDRS,
            ...(c.CCM_ROUTE_TABLE_ID ? { routeTableId: c.CCM_ROUTE_TABLE_ID } : {}),
            routeTableLimit: c.CCM_ROUTE_TABLE_LIMIT,
          },
        }
      : {}),
    ...(c.CCM_VPC_ID
      ? {
          services: {
            vpcId: c.CCM_VPC_ID,
            ...(c.CCM_LOAD_BALANCER_CLASS ? { loadBalancerClass: c.CCM_LOAD_BALANCER_CLASS } : {}),
            ...(c.CCM_SERVICE_NODE_PORT_RANGE
              ? { nodePortRange: `${c.CCM_SERVICE_NODE_PORT_RANGE.from}-${c.CCM_SERVICE_NODE_PORT_RANGE.to}` }
              : {}),
            ...(c.CCM_SERVICE_EXTERNAL_MANAGED_TAGS.length > 0
              ? { externalManagedTags: c.CCM_SERVICE_EXTERNAL_MANAGED_TAGS }
              : {}),
            defaultLoadBalancerType: c.CCM_SERVICE_DEFAULT_LOAD_BALANCER_TYPE,
            provisioningRequeueSeconds: c.CCM_SERVICE_PROVISIONING_REQUEUE_SECONDS,
            cleanupRequeueSeconds: c.CCM_SERVICE_CLEANUP_REQUEUE_SECONDS,
            replacementGraceSeconds: c.CCM_SERVICE_REPLACEMENT_GRACE_SECONDS,
            lbcServices: c.CCM_LBC_SERVICES,
          },
        }
      : {}),
    ...(interruption ? { interruption } : {}),
    ...(ipam ? { ipam } : {}),
    ...(ingress ? { ingress } : {}),
    ...(targetGroupBinding ? { targetGroupBinding } : {}),
    ec2Events: {
      retentionSeconds: c.CCM_EC2_EVENTS_RETENTION_SECONDS,
      ageAlarmSeconds: c.CCM_EC2_EVENTS_AGE_ALARM_SECONDS,
    },
    alarms: {
      queueAgeSeconds: c.CCM_QUEUE_AGE_ALARM_SECONDS,
      ...(c.CCM_ALARM_TOPIC_ARN ? { topicArn: c.CCM_ALARM_TOPIC_ARN } : {}),
    },
    dashboard: c.CCM_DASHBOARD,
    relay: {
      identity: c.CCM_RELAY_IDENTITY,
      namespace: c.CCM_RELAY_NAMESPACE,
      serviceAccount: c.CCM_RELAY_SERVICE_ACCOUNT,
      ...(c.CCM_RELAY_IDENTITY === 'irsa' && c.CCM_RELAY_OIDC_PROVIDER_ARN && oidcIssuer
        ? { oidcProviderArn: c.CCM_RELAY_OIDC_PROVIDER_ARN, oidcIssuer }
        : {}),
      createPodIdentityAssociation: c.CCM_RELAY_IDENTITY === 'pod-identity' && c.CCM_RELAY_POD_IDENTITY_ASSOCIATION,
    },
  };
}

/**
 * The environment SST gives `stacks()` for a stage: the process environment overridden by `.env`,
 * `.env.local`, `.env.<stage>`, `.env.<stage>.local` in that order (SST loads them with dotenv's
 * `override`). Reproduced here so `sst.config.ts`'s `config()`, which runs before SST loads them,
 * and the offline synth see the same values.
 */
export function stageEnvironment(
  root: string,
  stage: string | undefined,
  base: Record<string, string | undefined> = process.env,
): Record<string, string | undefined> {
  const files = ['.env', '.env.local', ...(stage ? [`.env.${stage}`, `.env.${stage}.local`] : [])];
  const merged = { ...base };
  for (const file of files) {
    const path = join(root, file);
    if (existsSync(path)) Object.assign(merged, parseEnv(readFileSync(path, 'utf8')));
  }
  return merged;
}
