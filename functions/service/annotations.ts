import { z } from 'zod';
import { ALPN_POLICIES, type AlpnPolicy, isValidElbName } from '../../shared/aws/elbv2-port.ts';
import { clusterTagKey, LEGACY_CLUSTER_TAG } from '../../shared/aws/ownership.ts';
import { parseCidr } from '../../shared/net/cidr.ts';

/**
 * The Service annotations users already write for the AWS cloud provider and the AWS Load Balancer
 * Controller (REFERENCE.md "Services of type LoadBalancer"), parsed and checked with zod into one options
 * object. Every problem names its annotation and says what it expects, so the Event a user reads points at
 * the line to fix. https://kubernetes.io/docs/reference/labels-annotations-taints/#service-beta-kubernetes-io-aws-load-balancer-type
 */
export const ANNOTATION_PREFIX = 'service.beta.kubernetes.io/aws-load-balancer-';

const a = (suffix: string) => `${ANNOTATION_PREFIX}${suffix}`;

export const ANNOTATION = {
  type: a('type'),
  internal: a('internal'),
  scheme: a('scheme'),
  name: a('name'),
  subnets: a('subnets'),
  eipAllocations: a('eip-allocations'),
  privateIpv4Addresses: a('private-ipv4-addresses'),
  nlbTargetType: a('nlb-target-type'),
  sslCert: a('ssl-cert'),
  sslPorts: a('ssl-ports'),
  sslNegotiationPolicy: a('ssl-negotiation-policy'),
  alpnPolicy: a('alpn-policy'),
  ipAddressType: a('ip-address-type'),
  backendProtocol: a('backend-protocol'),
  proxyProtocol: a('proxy-protocol'),
  healthcheckProtocol: a('healthcheck-protocol'),
  healthcheckPort: a('healthcheck-port'),
  healthcheckPath: a('healthcheck-path'),
  healthcheckInterval: a('healthcheck-interval'),
  healthcheckTimeout: a('healthcheck-timeout'),
  healthcheckHealthyThreshold: a('healthcheck-healthy-threshold'),
  healthcheckUnhealthyThreshold: a('healthcheck-unhealthy-threshold'),
  targetGroupAttributes: a('target-group-attributes'),
  attributes: a('attributes'),
  crossZone: a('cross-zone-load-balancing-enabled'),
  accessLogEnabled: a('access-log-enabled'),
  accessLogBucket: a('access-log-s3-bucket-name'),
  accessLogPrefix: a('access-log-s3-bucket-prefix'),
  accessLogEmitInterval: a('access-log-emit-interval'),
  additionalResourceTags: a('additional-resource-tags'),
  securityGroups: a('security-groups'),
  extraSecurityGroups: a('extra-security-groups'),
  targetNodeLabels: a('target-node-labels'),
  connectionIdleTimeout: a('connection-idle-timeout'),
  connectionDrainingEnabled: a('connection-draining-enabled'),
  connectionDrainingTimeout: a('connection-draining-timeout'),
  sourceRanges: 'service.beta.kubernetes.io/load-balancer-source-ranges',
} as const;

export interface HealthCheckOptions {
  protocol?: 'TCP' | 'HTTP' | 'HTTPS';
  port?: 'traffic-port' | number;
  path?: string;
  intervalSeconds?: number;
  timeoutSeconds?: number;
  healthyThreshold?: number;
  unhealthyThreshold?: number;
}

export interface LoadBalancerOptions {
  /** `nlb` (ours), `external` / `nlb-ip` (the AWS Load Balancer Controller's); unset: ours for new Services. */
  type?: 'nlb' | 'external' | 'nlb-ip';
  scheme: 'internet-facing' | 'internal';
  name?: string;
  /** Subnet IDs (`subnet-...`) or `Name` tags, in the order given. */
  subnets?: string[];
  eipAllocations?: string[];
  privateIpv4Addresses?: string[];
  targetType: 'instance' | 'ip';
  /** The first is each TLS listener's default certificate; the others are added to it for SNI. */
  sslCertificates?: string[];
  /** Port numbers or names; `*` (the default once a certificate is set) is every port. */
  sslPorts?: string[] | '*';
  sslPolicy?: string;
  /** TLS listeners' ALPN policy; unset: none. */
  alpnPolicy?: AlpnPolicy;
  /** `dualstack`: IPv4 and IPv6 clients (subnets need IPv6 CIDR blocks). */
  ipAddressType: 'ipv4' | 'dualstack';
  /** TCP listeners' idle timeout in seconds; unset: AWS's 350. */
  idleTimeoutSeconds?: number;
  backendProtocol: 'tcp' | 'ssl';
  proxyProtocol: boolean;
  healthCheck: HealthCheckOptions;
  targetGroupAttributes: Record<string, string>;
  attributes: Record<string, string>;
  additionalTags: Record<string, string>;
  /** Replace the managed security group (never modified by us). IDs or names. */
  securityGroups?: string[];
  extraSecurityGroups?: string[];
  /** Key -> value; undefined: the label must exist with any value. */
  targetNodeLabels?: Record<string, string | undefined>;
  /** From the annotation; `spec.loadBalancerSourceRanges` wins over it. */
  sourceRanges?: string[];
}

export interface AnnotationProblem {
  annotation: string;
  message: string;
}

export interface ParsedAnnotations {
  options: LoadBalancerOptions;
  problems: AnnotationProblem[];
}

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
const SCHEMAS = {
  type: z.enum(['nlb', 'external', 'nlb-ip'], {
    error: 'must be "nlb" (or "external" / "nlb-ip" for another controller)',
  }),
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
    .pipe(z.enum(['tcp', 'ssl'], { error: 'must be "tcp" or "ssl" for a Network Load Balancer' })),
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
  accessLogEmitInterval: z.string(),
  additionalResourceTags: keyValues(),
  securityGroups: list(groupRef),
  extraSecurityGroups: list(groupRef),
  targetNodeLabels: keyValues({ valueOptional: true }),
  // A Network Load Balancer's TCP idle timeout (listener attribute tcp.idle_timeout.seconds), not the
  // Classic ELB's 1-4000. https://docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html
  connectionIdleTimeout: wholeNumber(60, 6000, 'seconds'),
  connectionDrainingEnabled: boolean,
  connectionDrainingTimeout: wholeNumber(0, 3600, 'seconds'),
  sourceRanges: list(cidr),
} satisfies Record<keyof typeof ANNOTATION, z.ZodType<unknown, string>>;

type Parsed = { [K in keyof typeof SCHEMAS]?: z.output<(typeof SCHEMAS)[K]> };

/** Tags that would let a user hand a resource to another Service or cluster; `aws:` is AWS's own prefix. */
function reservedTag(key: string): boolean {
  return (
    key.startsWith('kubernetes.io/cluster/') ||
    key === LEGACY_CLUSTER_TAG ||
    key === 'kubernetes.io/service-name' ||
    // The controller's own marks (the backend group's role tag); IAM also refuses to remove them.
    key.startsWith('serverless-ccm/') ||
    key.toLowerCase().startsWith('aws:')
  );
}

/**
 * Every annotation of ours on the Service, parsed; problems for values that do not parse and for
 * combinations that contradict each other. Options always come back (defaults where a value was bad), so
 * that deletion and garbage collection can still work out names from a Service whose annotations are broken.
 */
export function parseAnnotations(annotations: Readonly<Record<string, string>> = {}): ParsedAnnotations {
  const problems: AnnotationProblem[] = [];
  const parsed: Parsed = {};
  for (const [field, annotation] of Object.entries(ANNOTATION) as [keyof typeof ANNOTATION, string][]) {
    const raw = annotations[annotation];
    if (raw === undefined) continue;
    const result = SCHEMAS[field].safeParse(raw);
    if (result.success) (parsed as Record<string, unknown>)[field] = result.data;
    else problems.push({ annotation, message: `"${raw}" ${result.error.issues[0]?.message ?? 'is not valid'}` });
  }

  // internal / scheme: two ways to say one thing; they must agree.
  let scheme: LoadBalancerOptions['scheme'] = parsed.internal ? 'internal' : 'internet-facing';
  if (parsed.scheme) {
    if (parsed.internal !== undefined && (parsed.internal ? 'internal' : 'internet-facing') !== parsed.scheme) {
      problems.push({
        annotation: ANNOTATION.scheme,
        message: `"${parsed.scheme}" contradicts ${ANNOTATION.internal}: "${annotations[ANNOTATION.internal]}"`,
      });
    }
    scheme = parsed.scheme;
  }
  if (parsed.eipAllocations && scheme !== 'internet-facing') {
    problems.push({
      annotation: ANNOTATION.eipAllocations,
      message: 'Elastic IPs need an internet-facing load balancer',
    });
  }
  if (parsed.privateIpv4Addresses && scheme !== 'internal') {
    problems.push({
      annotation: ANNOTATION.privateIpv4Addresses,
      message: 'private IPv4 addresses need an internal load balancer',
    });
  }
  if (parsed.sslPorts && !parsed.sslCert) {
    problems.push({ annotation: ANNOTATION.sslPorts, message: `needs ${ANNOTATION.sslCert}` });
  }
  if (parsed.sslNegotiationPolicy && !parsed.sslCert) {
    problems.push({ annotation: ANNOTATION.sslNegotiationPolicy, message: `needs ${ANNOTATION.sslCert}` });
  }
  if (parsed.alpnPolicy && !parsed.sslCert) {
    problems.push({
      annotation: ANNOTATION.alpnPolicy,
      message: `needs ${ANNOTATION.sslCert} (ALPN is negotiated by TLS listeners)`,
    });
  }
  if (parsed.sslCert && new Set(parsed.sslCert).size !== parsed.sslCert.length) {
    problems.push({ annotation: ANNOTATION.sslCert, message: 'lists a certificate twice' });
  }
  if (parsed.securityGroups && parsed.extraSecurityGroups) {
    problems.push({
      annotation: ANNOTATION.extraSecurityGroups,
      message: `cannot be combined with ${ANNOTATION.securityGroups}, which replaces every group`,
    });
  }
  const healthProtocol = parsed.healthcheckProtocol;
  if (parsed.healthcheckPath && healthProtocol === 'TCP') {
    problems.push({ annotation: ANNOTATION.healthcheckPath, message: 'cannot be used with a TCP health check' });
  }
  for (const key of Object.keys(parsed.additionalResourceTags ?? {})) {
    if (reservedTag(key)) {
      problems.push({
        annotation: ANNOTATION.additionalResourceTags,
        message: `tag "${key}" is reserved (ownership tags are set by the controller)`,
      });
    }
  }

  // The dedicated annotations and the generic attribute lists both set attributes; a clash is an error
  // rather than a silent precedence rule.
  const attributes: Record<string, string> = { ...(parsed.attributes as Record<string, string> | undefined) };
  const setAttribute = (key: string, value: string, annotation: string) => {
    if (key in attributes && attributes[key] !== value) {
      problems.push({
        annotation,
        message: `sets ${key}=${value}, but ${ANNOTATION.attributes} sets ${attributes[key]}`,
      });
    }
    attributes[key] = value;
  };
  if (parsed.crossZone !== undefined) {
    setAttribute('load_balancing.cross_zone.enabled', String(parsed.crossZone), ANNOTATION.crossZone);
  }
  if (parsed.accessLogEnabled !== undefined) {
    setAttribute('access_logs.s3.enabled', String(parsed.accessLogEnabled), ANNOTATION.accessLogEnabled);
  }
  if (parsed.accessLogBucket !== undefined)
    setAttribute('access_logs.s3.bucket', parsed.accessLogBucket, ANNOTATION.accessLogBucket);
  if (parsed.accessLogPrefix !== undefined)
    setAttribute('access_logs.s3.prefix', parsed.accessLogPrefix, ANNOTATION.accessLogPrefix);
  if (attributes['access_logs.s3.enabled'] === 'true' && !attributes['access_logs.s3.bucket']) {
    problems.push({ annotation: ANNOTATION.accessLogEnabled, message: `needs ${ANNOTATION.accessLogBucket}` });
  }

  const targetGroupAttributes: Record<string, string> = {
    ...(parsed.targetGroupAttributes as Record<string, string> | undefined),
  };
  const setGroupAttribute = (key: string, value: string, annotation: string) => {
    if (key in targetGroupAttributes && targetGroupAttributes[key] !== value) {
      problems.push({
        annotation,
        message: `sets ${key}=${value}, but ${ANNOTATION.targetGroupAttributes} sets ${targetGroupAttributes[key]}`,
      });
    }
    targetGroupAttributes[key] = value;
  };
  // Proxy protocol is a switch: without the annotation it is turned off again.
  if (!('proxy_protocol_v2.enabled' in targetGroupAttributes) || parsed.proxyProtocol) {
    setGroupAttribute('proxy_protocol_v2.enabled', String(parsed.proxyProtocol === '*'), ANNOTATION.proxyProtocol);
  }
  if (parsed.connectionDrainingEnabled === false) {
    setGroupAttribute('deregistration_delay.timeout_seconds', '0', ANNOTATION.connectionDrainingEnabled);
  } else if (parsed.connectionDrainingTimeout !== undefined) {
    setGroupAttribute(
      'deregistration_delay.timeout_seconds',
      String(parsed.connectionDrainingTimeout),
      ANNOTATION.connectionDrainingTimeout,
    );
  }

  const options: LoadBalancerOptions = {
    scheme,
    targetType: parsed.nlbTargetType ?? 'instance',
    ipAddressType: parsed.ipAddressType ?? 'ipv4',
    backendProtocol: parsed.backendProtocol ?? 'tcp',
    proxyProtocol: parsed.proxyProtocol === '*',
    healthCheck: {
      protocol: healthProtocol,
      port: parsed.healthcheckPort,
      path: parsed.healthcheckPath,
      intervalSeconds: parsed.healthcheckInterval,
      timeoutSeconds: parsed.healthcheckTimeout,
      healthyThreshold: parsed.healthcheckHealthyThreshold,
      unhealthyThreshold: parsed.healthcheckUnhealthyThreshold,
    },
    targetGroupAttributes,
    attributes,
    additionalTags: (parsed.additionalResourceTags as Record<string, string> | undefined) ?? {},
  };
  if (parsed.type) options.type = parsed.type;
  if (parsed.name) options.name = parsed.name;
  if (parsed.subnets) options.subnets = parsed.subnets;
  if (parsed.eipAllocations) options.eipAllocations = parsed.eipAllocations;
  if (parsed.privateIpv4Addresses) options.privateIpv4Addresses = parsed.privateIpv4Addresses;
  if (parsed.sslCert) {
    options.sslCertificates = parsed.sslCert;
    options.sslPorts = parsed.sslPorts ?? '*';
  }
  if (parsed.sslNegotiationPolicy) options.sslPolicy = parsed.sslNegotiationPolicy;
  if (parsed.alpnPolicy) options.alpnPolicy = parsed.alpnPolicy;
  if (parsed.connectionIdleTimeout !== undefined) options.idleTimeoutSeconds = parsed.connectionIdleTimeout;
  if (parsed.securityGroups) options.securityGroups = parsed.securityGroups;
  if (parsed.extraSecurityGroups) options.extraSecurityGroups = parsed.extraSecurityGroups;
  if (parsed.targetNodeLabels) options.targetNodeLabels = parsed.targetNodeLabels;
  if (parsed.sourceRanges) options.sourceRanges = parsed.sourceRanges;
  return { options, problems };
}

/** Whether a tag set marks a resource as belonging to this cluster and Service, and owned (deletable). */
export function ownedByService(
  tags: Readonly<Record<string, string>> | undefined,
  clusterName: string,
  serviceKey: string,
): boolean {
  return tags?.[clusterTagKey(clusterName)] === 'owned' && tags['kubernetes.io/service-name'] === serviceKey;
}

export function describeProblems(problems: readonly AnnotationProblem[]): string {
  return problems.map((p) => `${p.annotation}: ${p.message}`).join('; ');
}
