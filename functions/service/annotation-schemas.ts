import * as z from 'zod';
import { ALPN_POLICIES, isValidElbName } from '../../shared/aws/elbv2-port.ts';
import type { ANNOTATION } from '../../shared/k8s/service-annotations.ts';
import { parseCidr } from '../../shared/net/cidr.ts';

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

const boolean = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .pipe(z.enum(['true', 'false'], { error: 'must be "true" or "false"' }))
  .transform((v) => v === 'true');

const wholeNumber = (min: number, max: number, unit: string) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, `must be a whole number of ${unit} from ${min} to ${max}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .min(min, `must be a whole number of ${unit} from ${min} to ${max}`)
        .max(max, `must be a whole number of ${unit} from ${min} to ${max}`),
    );

const list = <T extends z.ZodType<unknown, string>>(item: T) =>
  z.string().transform(split).pipe(z.array(item).min(1, 'must list at least one value'));

/** `key=value,key2=value2` with non-empty keys (the form every AWS controller uses for these annotations). */
const keyValues = (options: { valueOptional?: boolean } = {}) =>
  z.string().transform((text, ctx) => {
    const out: Record<string, string | undefined> = {};
    for (const entry of split(text)) {
      const at = entry.indexOf('=');
      const key = (at < 0 ? entry : entry.slice(0, at)).trim();
      const value = at < 0 ? undefined : entry.slice(at + 1).trim();
      if (!key || (value === undefined && !options.valueOptional)) {
        ctx.addIssue({ code: 'custom', message: `"${entry}" is not key=value` });
        return z.NEVER;
      }
      if (key in out) {
        ctx.addIssue({ code: 'custom', message: `key "${key}" is given twice` });
        return z.NEVER;
      }
      out[key] = value;
    }
    return out;
  });

const cidr = z.string().superRefine((value, ctx) => {
  const result = parseCidr(value);
  if (!result.ok) ctx.addIssue({ code: 'custom', message: result.error });
});

const ipv4 = z.ipv4({ error: 'each address must be an IPv4 address' });
const subnetRef = z.string().min(1).max(255);
const groupRef = z.string().min(1).max(255);
const certificateArn = z.string().regex(/^arn:aws[a-z-]*:(acm|iam):/, 'each certificate must be an ACM or IAM ARN');

/** One schema per annotation: the value (a string) to what the options hold. */
export const SCHEMAS = {
  // The reference meaning: `nlb` is a Network Load Balancer, `external` / `nlb-ip` are the AWS Load Balancer
  // Controller's, and anything else is a Classic ELB.
  type: z
    .string()
    .transform((v) => v.trim().toLowerCase())
    .transform((v) => (v === 'nlb' || v === 'external' || v === 'nlb-ip' ? v : ('classic' as const))),
  internal: z.string().transform((v, ctx) => {
    const value = v.trim().toLowerCase();
    if (value === 'true') return true;
    if (value === 'false') return false;
    // Older cloud provider docs wrote a CIDR here ("0.0.0.0/0"), which meant internal.
    if (parseCidr(value).ok) return true;
    ctx.addIssue({ code: 'custom', message: 'must be "true" or "false"' });
    return z.NEVER;
  }),
  scheme: z.enum(['internal', 'internet-facing'], { error: 'must be "internal" or "internet-facing"' }),
  name: z
    .string()
    .refine(
      isValidElbName,
      'must be 1-32 letters, digits or hyphens, not beginning or ending with a hyphen or beginning with "internal-"',
    ),
  subnets: list(subnetRef),
  eipAllocations: list(
    z.string().regex(/^eipalloc-[0-9a-f]+$/, 'each allocation must be an ID like eipalloc-0123abcd'),
  ),
  privateIpv4Addresses: list(ipv4),
  nlbTargetType: z.enum(['instance', 'ip'], { error: 'must be "instance" or "ip"' }),
  sslCert: list(certificateArn),
  sslPorts: z.string().transform((v) => (v.trim() === '*' ? ('*' as const) : split(v))),
  sslNegotiationPolicy: z
    .string()
    .trim()
    .min(1, 'must name a security policy such as ELBSecurityPolicy-TLS13-1-2-2021-06'),
  alpnPolicy: z.enum(ALPN_POLICIES, { error: `must be one of ${ALPN_POLICIES.join(', ')}` }),
  ipAddressType: z.enum(['ipv4', 'dualstack'], { error: 'must be "ipv4" or "dualstack"' }),
  backendProtocol: z
    .string()
    .transform((v) => v.trim().toLowerCase())
    .pipe(z.enum(['tcp', 'ssl', 'http', 'https'], { error: 'must be tcp, ssl, http or https' })),
  proxyProtocol: z.literal('*', { error: 'must be "*" (proxy protocol v2 on every target group)' }),
  healthcheckProtocol: z
    .string()
    .transform((v) => v.trim().toUpperCase())
    .pipe(z.enum(['TCP', 'HTTP', 'HTTPS'], { error: 'must be TCP, HTTP or HTTPS' })),
  healthcheckPort: z.string().transform((v, ctx) => {
    const value = v.trim();
    if (value === 'traffic-port') return 'traffic-port' as const;
    const port = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (port >= 1 && port <= 65535) return port;
    ctx.addIssue({ code: 'custom', message: 'must be "traffic-port" or a port number from 1 to 65535' });
    return z.NEVER;
  }),
  healthcheckPath: z
    .string()
    .trim()
    .regex(/^\/\S*$/, 'must be a path beginning with "/"')
    .max(1024),
  healthcheckInterval: wholeNumber(5, 300, 'seconds'),
  healthcheckTimeout: wholeNumber(2, 120, 'seconds'),
  healthcheckHealthyThreshold: wholeNumber(2, 10, 'checks'),
  healthcheckUnhealthyThreshold: wholeNumber(2, 10, 'checks'),
  targetGroupAttributes: keyValues(),
  attributes: keyValues(),
  crossZone: boolean,
  accessLogEnabled: boolean,
  accessLogBucket: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name'),
  accessLogPrefix: z.string().trim(),
  accessLogEmitInterval: z.enum(['5', '60'], { error: 'must be 5 or 60 (minutes)' }).transform(Number),
  additionalResourceTags: keyValues(),
  securityGroups: list(groupRef),
  extraSecurityGroups: list(groupRef),
  targetNodeLabels: keyValues({ valueOptional: true }),
  // Each kind checks its own range: a Network Load Balancer's TCP listeners take 60-6000, a Classic ELB 1-4000.
  // https://docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html
  // https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/config-idle-timeout.html
  connectionIdleTimeout: wholeNumber(1, 6000, 'seconds'),
  connectionDrainingEnabled: boolean,
  connectionDrainingTimeout: wholeNumber(0, 3600, 'seconds'),
  sourceRanges: list(cidr),
} satisfies Record<keyof typeof ANNOTATION, z.ZodType<unknown, string>>;

export type ParsedAnnotationValues = { [K in keyof typeof SCHEMAS]?: z.output<(typeof SCHEMAS)[K]> };
