import { parseCidr } from '../net/cidr.ts';
import { INTERRUPTION_KINDS, type InterruptionKind } from '../queue/interruption-kinds.ts';
import * as z from '../zod.ts';
import { csv } from './csv.ts';

/**
 * The one configuration object, read from the environment the stacks set (or the local runner's
 * flags). A missing or bad setting stops start-up with an error naming the variable and what it expects.
 *
 * Each setting's schema is made the first time a value of it is read (`SETTINGS`), not when this module loads:
 * every Lambda imports it at a cold start, a function's environment sets only a few of the settings, and making all
 * 130 zod schemas (each binds its methods to itself as it is made) cost about 11 million instructions more, 3% of an
 * import (docs/adr/0010-lambda-cold-start.md, fourth round). The whole object schema (`configSchema`) is made only
 * for the stacks' checks, from the same settings.
 */
/** A factory that makes its value once, on the first call. */
function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => {
    made ??= make();
    return made;
  };
}

const clusterName = () =>
  z
    .string({ error: 'is required (the cluster name used in kubernetes.io/cluster/<name> tags)' })
    .check(z.regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'must be 1-63 letters, digits, "-", "_" or "."'));

/** One schema for every URL setting: a setting's schema is only read, so one instance can serve them all. */
const url = once(() => z.url({ error: 'must be an https:// URL' }));

/** A CIDR block of either family; host bits must be zero (see `parseCidr`). */
const cidr = () =>
  z.string().check(
    z.superRefine((value, ctx) => {
      const result = parseCidr(value);
      if (!result.ok) ctx.addIssue({ code: 'custom', message: result.error });
    }),
  );

/** A setting given as a pattern; `message` says what it must look like. */
const matching = (pattern: RegExp, message: string) => z.string().check(z.regex(pattern, message));

/**
 * A whole number from the environment's text, within bounds: `number` is the message for what is no number at all,
 * `whole` for a fraction, `min`/`max` the bounds with theirs.
 */
function wholeNumber(messages: { number: string; whole?: string }, min: [number, string?], max: [number, string?]) {
  return z.coerce
    .number({ error: messages.number })
    .check(z.int(messages.whole), z.minimum(min[0], min[1]), z.maximum(max[0], max[1]));
}

/** What the interruption controller does for a kind of notice: cordon and drain, or only mark the Node. */
export const INTERRUPTION_ACTION_NAMES = ['drain', 'taint-only'] as const;
export type InterruptionActionName = (typeof INTERRUPTION_ACTION_NAMES)[number];
export type InterruptionActionOverrides = Partial<Record<InterruptionKind, InterruptionActionName>>;

/**
 * `kind=action,...` (INTERRUPTION_ACTIONS): the kinds named override the controller's defaults, the others keep
 * them. An unknown kind or action, or a kind named twice, is refused rather than ignored: a typo would
 * otherwise leave a kind on its default without a word.
 */
const interruptionActions = () =>
  z.pipe(
    z.string(),
    z.transform((text: string, ctx): InterruptionActionOverrides => {
      const overrides: InterruptionActionOverrides = {};
      const problem = (message: string) => ctx.issues.push({ code: 'custom', message, input: text });
      for (const entry of text
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)) {
        const [kind = '', action = '', ...rest] = entry.split('=').map((p) => p.trim());
        if (rest.length > 0 || !entry.includes('=')) problem(`"${entry}" must be kind=action`);
        else if (!(INTERRUPTION_KINDS as readonly string[]).includes(kind)) {
          problem(`"${kind}" is no interruption kind (${INTERRUPTION_KINDS.join(', ')})`);
        } else if (!(INTERRUPTION_ACTION_NAMES as readonly string[]).includes(action)) {
          problem(`"${action}" for ${kind} must be ${INTERRUPTION_ACTION_NAMES.join(' or ')}`);
        } else if (overrides[kind as InterruptionKind] !== undefined) problem(`${kind} is named twice`);
        else overrides[kind as InterruptionKind] = action as InterruptionActionName;
      }
      return overrides;
    }),
  );

const SECONDS = { number: 'must be a number of seconds', whole: 'must be a whole number of seconds' };

/** The load balancer kinds the service controller makes (SERVICE_DEFAULT_LOAD_BALANCER_TYPE). */
export const SERVICE_LOAD_BALANCER_TYPES = ['nlb', 'classic'] as const;
export type ServiceLoadBalancerType = (typeof SERVICE_LOAD_BALANCER_TYPES)[number];

type Schema = z.core.$ZodType;

/**
 * A setting: its schema (made on first use) and what it is when the environment leaves it unset: refused with
 * the schema's own message (`required`), absent (`optional`), or a default value (`withDefault`).
 */
type Setting<S extends Schema = Schema> =
  | { unset: 'required'; schema: () => S }
  | { unset: 'optional'; schema: () => S }
  | { unset: 'default'; schema: () => S; value: z.output<S> };

const required = <S extends Schema>(make: () => S) => ({ unset: 'required' as const, schema: once(make) });
const optional = <S extends Schema>(make: () => S) => ({ unset: 'optional' as const, schema: once(make) });
const withDefault = <S extends Schema>(make: () => S, value: z.output<S>) => ({
  unset: 'default' as const,
  schema: once(make),
  value,
});

/** Every setting, in the order problems are listed. */
const SETTINGS = {
  CLUSTER_NAME: required(clusterName),
  AWS_REGION: required(() =>
    z
      .string({ error: 'is required (the AWS region of the cluster, e.g. eu-west-1)' })
      .check(z.regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region name such as eu-west-1')),
  ),
  NODE_IP_FAMILIES: withDefault(
    () =>
      z.pipe(
        csv(z.enum(['ipv4', 'ipv6'], { error: 'each family must be ipv4 or ipv6' })),
        z.array(z.enum(['ipv4', 'ipv6'])).check(z.minLength(1, 'must name at least one family')),
      ),
    ['ipv4'],
  ),
  KUBERNETES_AUTH_MODE: withDefault(
    () => z.enum(['eks', 'token', 'kubeconfig'], { error: 'must be eks, token or kubeconfig' }),
    'kubeconfig',
  ),
  KUBERNETES_API_ENDPOINT: optional(url),
  KUBERNETES_CA_DATA: optional(() => z.base64({ error: 'must be the base64 PEM CA bundle' })),
  KUBERNETES_TOKEN_SECRET_ID: optional(() => z.string().check(z.minLength(1))),
  EKS_CLUSTER_NAME: optional(() => z.string().check(z.minLength(1))),
  NODE_QUEUE_URL: optional(url),
  NODE_LIFECYCLE_QUEUE_URL: optional(url),
  ROUTE_QUEUE_URL: optional(url),
  /**
   * The interruption FIFO queue: with it, the EC2 events router sends interruption notices there
   * (shared/queue/interruption.ts) for the interruption controller (functions/interruption); unset, no notices
   * are sent. The stack sets it with CCM_INTERRUPTION=true.
   */
  INTERRUPTION_QUEUE_URL: optional(url),
  /** The route table pod routes go in; unset: the one table tagged kubernetes.io/cluster/<name>. */
  ROUTE_TABLE_ID: optional(() =>
    matching(/^rtb-(?:[0-9a-f]{8}|[0-9a-f]{17})$/, 'must be a route table ID such as rtb-0123456789abcdef0'),
  ),
  /** kube-controller-manager's --cluster-cidr: only routes inside these blocks are the route controller's. */
  CLUSTER_CIDRS: optional(() => csv(cidr(), 'must name at least one CIDR block')),
  /** The "Routes per route table" quota of the account (50 unless raised, at most 1000). */
  ROUTE_TABLE_LIMIT: withDefault(
    () =>
      wholeNumber(
        { number: 'must be the number of routes a route table may hold', whole: 'must be a whole number of routes' },
        [1, 'must be at least 1'],
        [1000, 'cannot exceed 1000, the most EC2 allows in one route table'],
      ),
    50,
  ),
  /** The service controller's FIFO queue (producers send Service keys and the garbage collection key). */
  SERVICE_QUEUE_URL: optional(url),
  /** The VPC load balancers, target groups and security groups go in (required by the service controller). */
  VPC_ID: optional(() =>
    matching(/^vpc-(?:[0-9a-f]{8}|[0-9a-f]{17})$/, 'must be a VPC ID such as vpc-0123456789abcdef0'),
  ),
  /**
   * A `spec.loadBalancerClass` the service controller handles besides Services without a class. Unset: only
   * Services without a class are ours.
   */
  LOAD_BALANCER_CLASS: optional(() =>
    matching(
      /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
      'must be a label-style name such as example.com/nlb',
    ),
  ),
  /**
   * kube-apiserver's `--service-node-port-range`: the service controller allows this whole range from the
   * load balancers on the Nodes' security groups (one rule per protocol, however many Services).
   */
  SERVICE_NODE_PORT_RANGE: optional(() =>
    z
      .pipe(
        matching(/^\d{1,5}-\d{1,5}$/, 'must be a port range such as 30000-32767'),
        z.transform((text: string) => {
          const [from, to] = text.split('-').map(Number) as [number, number];
          return { from, to };
        }),
      )
      .check(
        z.refine(
          (r) => r.from >= 1 && r.to <= 65535 && r.from <= r.to,
          'must be a range of ports from 1 to 65535, low-high',
        ),
      ),
  ),
  /**
   * Tag keys another tool manages on the load balancers, target groups and managed security groups (comma
   * separated). The service controller removes tags it did not set (an entry dropped from
   * `additional-resource-tags`) except these and AWS's own `aws:` tags; a Service may not set them.
   */
  SERVICE_EXTERNAL_MANAGED_TAGS: withDefault(
    () =>
      csv(
        z
          .string()
          .check(
            z.maxLength(128, 'each tag key must be at most 128 characters'),
            z.regex(
              /^[\p{L}\p{Z}\p{N}_.:/=+\-@]+$/u,
              'each tag key must be letters, digits, spaces or _ . : / = + - @',
            ),
          ),
      ),
    [],
  ),
  /**
   * The kind of load balancer a `type: LoadBalancer` Service gets when its annotations do not say: `nlb` (a
   * Network Load Balancer, the default) or `classic` (a Classic Load Balancer, as the reference cloud
   * controller makes by default).
   */
  SERVICE_DEFAULT_LOAD_BALANCER_TYPE: withDefault(
    () =>
      z.enum(SERVICE_LOAD_BALANCER_TYPES, {
        error: 'must be nlb (Network Load Balancer) or classic (Classic Load Balancer)',
      }),
    'nlb',
  ),
  /** How long to wait before looking again at a load balancer that is still provisioning (NLBs take minutes). */
  SERVICE_PROVISIONING_REQUEUE_SECONDS: withDefault(
    () =>
      wholeNumber(
        SECONDS,
        [5, 'must be at least 5 seconds'],
        [900, 'cannot exceed 900 seconds (the longest SQS visibility change this controller makes)'],
      ),
    60,
  ),
  /** How long to wait while a deletion waits for AWS (ENIs of a deleted NLB holding its security group). */
  SERVICE_CLEANUP_REQUEUE_SECONDS: withDefault(
    () => wholeNumber(SECONDS, [5, 'must be at least 5 seconds'], [900, 'cannot exceed 900 seconds']),
    60,
  ),
  /** Per kind of interruption notice, `drain` or `taint-only` (see `interruptionActions`); unset: the defaults. */
  INTERRUPTION_ACTIONS: withDefault(interruptionActions, {}),
  /**
   * Add `node.kubernetes.io/out-of-service` to a drained Node, so its remaining Pods are force-deleted and
   * their volumes detached without waiting for the kubelet. Off by default: it is only safe once the instance
   * is really going, which Kubernetes leaves to whoever sets the taint.
   */
  INTERRUPTION_OUT_OF_SERVICE_TAINT: withDefault(() => z.stringbool({ error: 'must be true or false' }), false),
  /**
   * Seconds between drain passes while Pods are still going. A spot notice leaves two minutes, so a pass more
   * than a minute apart would leave most of it unused.
   */
  INTERRUPTION_DRAIN_REQUEUE_SECONDS: withDefault(
    () =>
      wholeNumber(
        SECONDS,
        [1, 'must be at least 1 second'],
        [60, 'cannot exceed 60 seconds (a spot notice leaves two minutes)'],
      ),
    5,
  ),
  /**
   * The IP address manager's FIFO queue: Node keys of Windows Nodes (and its garbage-collection key). The relay and
   * the resync feed it when set; unset, nothing about Pods is watched or sent.
   */
  IPAM_QUEUE_URL: optional(url),
  /**
   * Seconds a released Pod address waits before another Pod may get it (kube-proxy and the Windows host need
   * time to forget it). 30 s as the VPC resource controller.
   */
  IPAM_COOLDOWN_SECONDS: withDefault(
    () => wholeNumber(SECONDS, [0, 'cannot be negative'], [600, 'cannot exceed 600 seconds']),
    30,
  ),
  NODE_INDEX_TTL_SECONDS: withDefault(() => wholeNumber({ number: 'must be a number of seconds' }, [0], [3600]), 60),
  LOG_LEVEL: withDefault(() => z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR']), 'INFO'),
  /**
   * The dimensions of the `AwsCalls` metric: `operation` (the AWS service and the operation: one custom metric per
   * operation in use) or `service` (the AWS service only: three or so). `AwsThrottles` keeps the operation either
   * way. docs/cost.md has what each costs.
   */
  AWS_CALL_METRICS: withDefault(() => z.enum(['operation', 'service']), 'operation'),
} satisfies Record<string, Setting>;

type Settings = typeof SETTINGS;
/** The schema a setting has inside the whole object schema, as `z.object` would have it written out. */
type FieldSchema<T> = T extends { unset: 'optional'; schema: () => infer S extends Schema }
  ? z.ZodMiniOptional<S>
  : T extends { unset: 'default'; schema: () => infer S extends Schema }
    ? z.ZodMiniDefault<S>
    : T extends { schema: () => infer S extends Schema }
      ? S
      : never;
type Shape = { [K in keyof Settings]: FieldSchema<Settings[K]> };

function fieldSchema(setting: Setting): Schema {
  if (setting.unset === 'optional') return z.optional(setting.schema());
  if (setting.unset === 'default') return z._default(setting.schema(), setting.value as never);
  return setting.schema();
}

/** Rules across settings; checked once every setting on its own is valid. */
function crossSettingProblems(c: {
  KUBERNETES_AUTH_MODE: string;
  KUBERNETES_TOKEN_SECRET_ID?: string | undefined;
  KUBERNETES_API_ENDPOINT?: string | undefined;
}): Problem[] {
  const problems: Problem[] = [];
  if (c.KUBERNETES_AUTH_MODE === 'token' && !c.KUBERNETES_TOKEN_SECRET_ID) {
    problems.push({
      path: ['KUBERNETES_TOKEN_SECRET_ID'],
      message: 'is required when KUBERNETES_AUTH_MODE=token (the Secrets Manager secret holding token and CA)',
    });
  }
  if (c.KUBERNETES_AUTH_MODE !== 'kubeconfig' && !c.KUBERNETES_API_ENDPOINT) {
    problems.push({
      path: ['KUBERNETES_API_ENDPOINT'],
      message: `is required when KUBERNETES_AUTH_MODE=${c.KUBERNETES_AUTH_MODE}`,
    });
  }
  return problems;
}

/**
 * The whole configuration as one zod object schema, made on the first call: what the stacks check a stage's
 * settings against. `loadConfig` reads the same settings one at a time, with the same results and messages.
 */
export const configSchema = once(() => {
  const shape = Object.fromEntries(
    Object.entries(SETTINGS).map(([name, setting]) => [name, fieldSchema(setting)]),
  ) as unknown as Shape;
  return z.object(shape).check(
    z.superRefine((c, ctx) => {
      for (const { path, message } of crossSettingProblems(c))
        ctx.addIssue({ code: 'custom', path: [...path], message });
    }),
  );
});

export type Config = z.output<ReturnType<typeof configSchema>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** A problem with one setting: its name (then where inside its value) and what is wrong. */
interface Problem {
  path: readonly PropertyKey[];
  message: string;
}

/** The environment's set values: empty ones count as unset. */
function setValues(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')) as Record<
    string,
    string
  >;
}

/** ConfigError with one line per problem, naming the variable and the value it had. */
function configError(problems: readonly Problem[], env: Record<string, string | undefined>): ConfigError {
  return new ConfigError(
    problems.map((problem) => {
      const setting = problem.path.map(String).join('.') || '(environment)';
      const value = typeof problem.path[0] === 'string' ? env[problem.path[0]] : undefined;
      return `${setting}${value === undefined ? '' : ` (got ${JSON.stringify(value)})`}: ${problem.message}`;
    }),
  );
}

/**
 * Parse the environment; throws ConfigError listing every bad or missing setting. The settings are read one at a
 * time in `SETTINGS` order, as `configSchema()` would read them, so that only the schemas of settings that are
 * set (and the required ones) are made.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const input = setValues(env);
  const config: Record<string, unknown> = {};
  const problems: Problem[] = [];
  for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
    const value = input[name];
    if (value === undefined && setting.unset === 'optional') continue;
    if (value === undefined && setting.unset === 'default') {
      // As zod's default: a fresh copy for every parse, so no caller can change the next one's.
      config[name] = Array.isArray(setting.value)
        ? [...setting.value]
        : typeof setting.value === 'object' && setting.value !== null
          ? { ...setting.value }
          : setting.value;
      continue;
    }
    const result = z.safeParse(setting.schema(), value);
    if (result.success) config[name] = result.data;
    else
      for (const issue of result.error.issues) problems.push({ path: [name, ...issue.path], message: issue.message });
  }
  if (problems.length === 0) problems.push(...crossSettingProblems(config as Config));
  if (problems.length > 0) throw configError(problems, env);
  return config as Config;
}

/**
 * Any component's settings from the environment (empty values count as unset); throws ConfigError
 * listing every bad or missing setting, each line naming the variable and the value it had.
 */
export function parseEnvironment<S extends z.core.$ZodType>(
  schema: S,
  env: Record<string, string | undefined>,
): z.output<S> {
  const result = z.safeParse(schema, setValues(env));
  if (result.success) return result.data;
  throw configError(result.error.issues, env);
}

/** A setting one component cannot run without, although the shared schema allows it to be absent. */
export function requireSetting<K extends keyof Config>(
  config: Config,
  key: K,
  purpose: string,
): NonNullable<Config[K]> {
  const value = config[key];
  if (value === undefined || value === null) throw new ConfigError([`${String(key)}: is required ${purpose}`]);
  return value as NonNullable<Config[K]>;
}
