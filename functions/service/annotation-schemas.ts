import { ALPN_POLICIES, isValidElbName } from '../../shared/aws/elbv2-port.ts';
import type { ANNOTATION } from '../../shared/k8s/service-annotations.ts';
import { parseCidr } from '../../shared/net/cidr.ts';
import * as z from '../../shared/zod.ts';

/**
 * The zod schema of each Service annotation (annotations.ts puts the values together and checks how they
 * combine). A schema takes the annotation's string and gives what the options hold, or an issue whose
 * message says what the annotation expects.
 */

const split = (text: string) =>
  text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);

/** The annotation's string through `fn`, which may add an issue (and return z.NEVER) instead of a value. */
const text = <T>(fn: (value: string, ctx: z.core.ParsePayload<unknown>) => T) => z.pipe(z.string(), z.transform(fn));

/** An issue on the annotation's value, with `message` saying what it expects. */
const problem = (ctx: z.core.ParsePayload<unknown>, input: string, message: string) => {
  ctx.issues.push({ code: 'custom', message, input });
  return z.NEVER;
};

const boolean = () =>
  z.pipe(
    z.pipe(
      text((v) => v.trim().toLowerCase()),
      z.enum(['true', 'false'], { error: 'must be "true" or "false"' }),
    ),
    z.transform((v: 'true' | 'false') => v === 'true'),
  );

const wholeNumber = (min: number, max: number, unit: string) => {
  const message = `must be a whole number of ${unit} from ${min} to ${max}`;
  return z.pipe(
    z.pipe(z.string().check(z.trim(), z.regex(/^\d+$/, message)), z.transform(Number)),
    z.number().check(z.minimum(min, message), z.maximum(max, message)),
  );
};

const list = <T extends z.core.$ZodType<unknown, string>>(item: T) =>
  z.pipe(text(split), z.array(item).check(z.minLength(1, 'must list at least one value')));

/** `key=value,key2=value2` with non-empty keys (the form every AWS controller uses for these annotations). */
const keyValues = (options: { valueOptional?: boolean } = {}) =>
  text((value, ctx) => {
    const out: Record<string, string | undefined> = {};
    for (const entry of split(value)) {
      const at = entry.indexOf('=');
      const key = (at < 0 ? entry : entry.slice(0, at)).trim();
      const v = at < 0 ? undefined : entry.slice(at + 1).trim();
      if (!key || (v === undefined && !options.valueOptional))
        return problem(ctx, value, `"${entry}" is not key=value`);
      if (key in out) return problem(ctx, value, `key "${key}" is given twice`);
      out[key] = v;
    }
    return out;
  });

const cidr = () =>
  z.string().check(
    z.superRefine((value, ctx) => {
      const result = parseCidr(value);
      if (!result.ok) ctx.addIssue({ code: 'custom', message: result.error });
    }),
  );

const matching = (pattern: RegExp, message: string) => z.string().check(z.regex(pattern, message));
const ipv4 = () => z.ipv4({ error: 'each address must be an IPv4 address' });
const reference = () => z.string().check(z.minLength(1), z.maxLength(255));
const certificateArn = () => matching(/^arn:aws[a-z-]*:(acm|iam):/, 'each certificate must be an ACM or IAM ARN');
const upperOrLower = <const V extends readonly [string, ...string[]]>(
  to: 'upper' | 'lower',
  values: V,
  error: string,
) =>
  z.pipe(
    text((v) => (to === 'upper' ? v.trim().toUpperCase() : v.trim().toLowerCase())),
    z.enum(values, { error }),
  );

/**
 * One schema per annotation: the value (a string) to what the options hold. Each is built the first time a
 * Service carries its annotation: a Service has a handful at most, and building all forty-odd took a tenth of the
 * service function's cold start (docs/adr/0010-lambda-cold-start.md, third round).
 */
const MAKE_SCHEMA = {
  // The reference meaning: `nlb` is a Network Load Balancer, `external` / `nlb-ip` are the AWS Load Balancer
  // Controller's, and anything else is a Classic ELB.
  type: () =>
    text((v) => {
      const value = v.trim().toLowerCase();
      return value === 'nlb' || value === 'external' || value === 'nlb-ip' ? value : ('classic' as const);
    }),
  internal: () =>
    text((v, ctx) => {
      const value = v.trim().toLowerCase();
      if (value === 'true') return true;
      if (value === 'false') return false;
      // Older cloud provider docs wrote a CIDR here ("0.0.0.0/0"), which meant internal.
      if (parseCidr(value).ok) return true;
      return problem(ctx, v, 'must be "true" or "false"');
    }),
  scheme: () => z.enum(['internal', 'internet-facing'], { error: 'must be "internal" or "internet-facing"' }),
  name: () =>
    z
      .string()
      .check(
        z.refine(
          isValidElbName,
          'must be 1-32 letters, digits or hyphens, not beginning or ending with a hyphen or beginning with "internal-"',
        ),
      ),
  subnets: () => list(reference()),
  eipAllocations: () => list(matching(/^eipalloc-[0-9a-f]+$/, 'each allocation must be an ID like eipalloc-0123abcd')),
  privateIpv4Addresses: () => list(ipv4()),
  nlbTargetType: () => z.enum(['instance', 'ip'], { error: 'must be "instance" or "ip"' }),
  sslCert: () => list(certificateArn()),
  sslPorts: () => text((v) => (v.trim() === '*' ? ('*' as const) : split(v))),
  sslNegotiationPolicy: () =>
    z
      .string()
      .check(z.trim(), z.minLength(1, 'must name a security policy such as ELBSecurityPolicy-TLS13-1-2-2021-06')),
  alpnPolicy: () => z.enum(ALPN_POLICIES, { error: `must be one of ${ALPN_POLICIES.join(', ')}` }),
  ipAddressType: () => z.enum(['ipv4', 'dualstack'], { error: 'must be "ipv4" or "dualstack"' }),
  backendProtocol: () => upperOrLower('lower', ['tcp', 'ssl', 'http', 'https'], 'must be tcp, ssl, http or https'),
  proxyProtocol: () => z.literal('*', { error: 'must be "*" (proxy protocol v2 on every target group)' }),
  healthcheckProtocol: () => upperOrLower('upper', ['TCP', 'HTTP', 'HTTPS'], 'must be TCP, HTTP or HTTPS'),
  healthcheckPort: () =>
    text((v, ctx) => {
      const value = v.trim();
      if (value === 'traffic-port') return 'traffic-port' as const;
      const port = /^\d+$/.test(value) ? Number(value) : Number.NaN;
      if (port >= 1 && port <= 65535) return port;
      return problem(ctx, v, 'must be "traffic-port" or a port number from 1 to 65535');
    }),
  healthcheckPath: () =>
    z.string().check(z.trim(), z.regex(/^\/\S*$/, 'must be a path beginning with "/"'), z.maxLength(1024)),
  healthcheckInterval: () => wholeNumber(5, 300, 'seconds'),
  healthcheckTimeout: () => wholeNumber(2, 120, 'seconds'),
  healthcheckHealthyThreshold: () => wholeNumber(2, 10, 'checks'),
  healthcheckUnhealthyThreshold: () => wholeNumber(2, 10, 'checks'),
  targetGroupAttributes: () => keyValues(),
  attributes: () => keyValues(),
  crossZone: boolean,
  accessLogEnabled: boolean,
  accessLogBucket: () =>
    z.string().check(z.trim(), z.regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name')),
  accessLogPrefix: () => z.string().check(z.trim()),
  accessLogEmitInterval: () => z.pipe(z.enum(['5', '60'], { error: 'must be 5 or 60 (minutes)' }), z.transform(Number)),
  additionalResourceTags: () => keyValues(),
  securityGroups: () => list(reference()),
  extraSecurityGroups: () => list(reference()),
  targetNodeLabels: () => keyValues({ valueOptional: true }),
  // Each kind checks its own range: a Network Load Balancer's TCP listeners take 60-6000, a Classic ELB 1-4000.
  // https://docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html
  // https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/config-idle-timeout.html
  connectionIdleTimeout: () => wholeNumber(1, 6000, 'seconds'),
  connectionDrainingEnabled: boolean,
  manageBackendSecurityGroupRules: boolean,
  connectionDrainingTimeout: () => wholeNumber(0, 3600, 'seconds'),
  sourceRanges: () => list(cidr()),
} satisfies Record<keyof typeof ANNOTATION, () => z.core.$ZodType<unknown, string>>;

type AnnotationField = keyof typeof MAKE_SCHEMA;
type Schemas = { [K in AnnotationField]: ReturnType<(typeof MAKE_SCHEMA)[K]> };

const built: Partial<Schemas> = {};

/** The schema of one annotation, built on first use. */
export function schemaOf<K extends AnnotationField>(field: K): Schemas[K] {
  built[field] ??= MAKE_SCHEMA[field]() as Schemas[K];
  return built[field] as Schemas[K];
}

export type ParsedAnnotationValues = { [K in AnnotationField]?: z.output<Schemas[K]> };
