import type { AlpnPolicy } from '../../shared/aws/elbv2-port.ts';
import { LEGACY_CLUSTER_TAG } from '../../shared/aws/ownership.ts';
import { ANNOTATION } from '../../shared/k8s/service-annotations.ts';
import { LABEL_SERVICE_NAME } from '../../shared/k8s/service-port.ts';
import type { OwnerTag, SettingProblem } from '../../shared/load-balancers/context.ts';
import { isOwnedBy } from '../../shared/load-balancers/tags.ts';
import { type ParsedAnnotationValues, schemaOf } from './annotation-schemas.ts';
import type { LbcOptions } from './lbc/options.ts';

/**
 * The Service annotations users already write for the AWS cloud provider and the AWS Load Balancer
 * Controller (docs/reference.md), parsed and checked with zod (annotation-schemas.ts) into one options
 * object. Every problem names its annotation and says what it expects, so the Event a user reads points at
 * the line to fix. The names are shared with the relay (shared/k8s/service-annotations.ts).
 */
export { ANNOTATION, ANNOTATION_PREFIX } from '../../shared/k8s/service-annotations.ts';

export interface HealthCheckOptions {
  protocol?: 'TCP' | 'HTTP' | 'HTTPS';
  port?: 'traffic-port' | number;
  path?: string;
  intervalSeconds?: number;
  timeoutSeconds?: number;
  healthyThreshold?: number;
  unhealthyThreshold?: number;
}

export interface ClassicAttributeOptions {
  crossZone?: boolean;
  accessLogEnabled?: boolean;
  accessLogBucket?: string;
  accessLogPrefix?: string;
  accessLogEmitIntervalMinutes?: number;
  connectionDrainingEnabled?: boolean;
  connectionDrainingTimeoutSeconds?: number;
}

export interface LoadBalancerOptions {
  /**
   * `nlb` and `classic` (any other value, as in the reference) are ours; `external` / `nlb-ip` the AWS Load
   * Balancer Controller's; unset: SERVICE_DEFAULT_LOAD_BALANCER_TYPE for new Services.
   */
  type?: 'nlb' | 'classic' | 'external' | 'nlb-ip';
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
  /** NLBs take `tcp` and `ssl`; Classic ELBs also `http` and `https`. */
  backendProtocol: 'tcp' | 'ssl' | 'http' | 'https';
  /** Classic ELB attributes as the annotations set them (Network Load Balancers read `attributes`). */
  classicAttributes: ClassicAttributeOptions;
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
  /** A Service the AWS Load Balancer Controller serves: built its way (functions/service/lbc/). */
  lbc?: LbcOptions;
}

/** A Service's problems are the resource modules' setting problems, each naming the annotation or spec field. */
export type AnnotationProblem = SettingProblem;

/**
 * What a Service gets without the annotations: the in-tree defaults (internet-facing, instance targets), or the
 * AWS Load Balancer Controller's for the Services it serves (functions/service/lbc/options.ts).
 */
export interface AnnotationDefaults {
  scheme?: LoadBalancerOptions['scheme'];
  targetType?: LoadBalancerOptions['targetType'];
}

export interface ParsedAnnotations {
  options: LoadBalancerOptions;
  problems: AnnotationProblem[];
}

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
export function parseAnnotations(
  annotations: Readonly<Record<string, string>> = {},
  defaults: AnnotationDefaults = {},
): ParsedAnnotations {
  const problems: AnnotationProblem[] = [];
  const parsed: ParsedAnnotationValues = {};
  for (const [field, annotation] of Object.entries(ANNOTATION) as [keyof typeof ANNOTATION, string][]) {
    const raw = annotations[annotation];
    if (raw === undefined) continue;
    const result = schemaOf(field).safeParse(raw);
    if (result.success) (parsed as Record<string, unknown>)[field] = result.data;
    else problems.push({ annotation, message: `"${raw}" ${result.error.issues[0]?.message ?? 'is not valid'}` });
  }
  const scheme = schemeOf(parsed, annotations, problems, defaults.scheme ?? 'internet-facing');
  checkCombinations(parsed, scheme, problems);
  const options: LoadBalancerOptions = {
    scheme,
    targetType: parsed.nlbTargetType ?? defaults.targetType ?? 'instance',
    ipAddressType: parsed.ipAddressType ?? 'ipv4',
    backendProtocol: parsed.backendProtocol ?? 'tcp',
    proxyProtocol: parsed.proxyProtocol === '*',
    healthCheck: {
      protocol: parsed.healthcheckProtocol,
      port: parsed.healthcheckPort,
      path: parsed.healthcheckPath,
      intervalSeconds: parsed.healthcheckInterval,
      timeoutSeconds: parsed.healthcheckTimeout,
      healthyThreshold: parsed.healthcheckHealthyThreshold,
      unhealthyThreshold: parsed.healthcheckUnhealthyThreshold,
    },
    classicAttributes: classicAttributesOf(parsed),
    targetGroupAttributes: targetGroupAttributesOf(parsed, problems),
    attributes: loadBalancerAttributesOf(parsed, problems),
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

function classicAttributesOf(parsed: ParsedAnnotationValues): ClassicAttributeOptions {
  const out: ClassicAttributeOptions = {};
  if (parsed.crossZone !== undefined) out.crossZone = parsed.crossZone;
  if (parsed.accessLogEnabled !== undefined) out.accessLogEnabled = parsed.accessLogEnabled;
  if (parsed.accessLogBucket !== undefined) out.accessLogBucket = parsed.accessLogBucket;
  if (parsed.accessLogPrefix !== undefined) out.accessLogPrefix = parsed.accessLogPrefix;
  if (parsed.accessLogEmitInterval !== undefined) out.accessLogEmitIntervalMinutes = parsed.accessLogEmitInterval;
  if (parsed.connectionDrainingEnabled !== undefined) out.connectionDrainingEnabled = parsed.connectionDrainingEnabled;
  if (parsed.connectionDrainingTimeout !== undefined) {
    out.connectionDrainingTimeoutSeconds = parsed.connectionDrainingTimeout;
  }
  return out;
}

/** `internal` and `scheme`: two ways to say one thing; they must agree. Neither: `byDefault`. */
function schemeOf(
  parsed: ParsedAnnotationValues,
  annotations: Readonly<Record<string, string>>,
  problems: AnnotationProblem[],
  byDefault: LoadBalancerOptions['scheme'],
): LoadBalancerOptions['scheme'] {
  const fromInternal: LoadBalancerOptions['scheme'] =
    parsed.internal === undefined ? byDefault : parsed.internal ? 'internal' : 'internet-facing';
  if (!parsed.scheme) return fromInternal;
  if (parsed.internal !== undefined && fromInternal !== parsed.scheme) {
    problems.push({
      annotation: ANNOTATION.scheme,
      message: `"${parsed.scheme}" contradicts ${ANNOTATION.internal}: "${annotations[ANNOTATION.internal]}"`,
    });
  }
  return parsed.scheme;
}

/** Annotations that only mean something together, or never together. */
function checkCombinations(
  parsed: ParsedAnnotationValues,
  scheme: LoadBalancerOptions['scheme'],
  problems: AnnotationProblem[],
): void {
  const problem = (annotation: string, message: string) => problems.push({ annotation, message });
  if (parsed.eipAllocations && scheme !== 'internet-facing') {
    problem(ANNOTATION.eipAllocations, 'Elastic IPs need an internet-facing load balancer');
  }
  if (parsed.privateIpv4Addresses && scheme !== 'internal') {
    problem(ANNOTATION.privateIpv4Addresses, 'private IPv4 addresses need an internal load balancer');
  }
  if (parsed.sslPorts && !parsed.sslCert) problem(ANNOTATION.sslPorts, `needs ${ANNOTATION.sslCert}`);
  if (parsed.sslNegotiationPolicy && !parsed.sslCert) {
    problem(ANNOTATION.sslNegotiationPolicy, `needs ${ANNOTATION.sslCert}`);
  }
  if (parsed.alpnPolicy && !parsed.sslCert) {
    problem(ANNOTATION.alpnPolicy, `needs ${ANNOTATION.sslCert} (ALPN is negotiated by TLS listeners)`);
  }
  if (parsed.sslCert && new Set(parsed.sslCert).size !== parsed.sslCert.length) {
    problem(ANNOTATION.sslCert, 'lists a certificate twice');
  }
  if (parsed.securityGroups && parsed.extraSecurityGroups) {
    problem(
      ANNOTATION.extraSecurityGroups,
      `cannot be combined with ${ANNOTATION.securityGroups}, which replaces every group`,
    );
  }
  if (parsed.healthcheckPath && parsed.healthcheckProtocol === 'TCP') {
    problem(ANNOTATION.healthcheckPath, 'cannot be used with a TCP health check');
  }
  for (const key of Object.keys(parsed.additionalResourceTags ?? {})) {
    if (reservedTag(key)) {
      problem(ANNOTATION.additionalResourceTags, `tag "${key}" is reserved (ownership tags are set by the controller)`);
    }
  }
}

/**
 * Attributes from a generic list annotation plus the dedicated annotations: a clash between the two is an
 * error rather than a silent precedence rule.
 */
function attributeSetter(
  attributes: Record<string, string>,
  listAnnotation: string,
  problems: AnnotationProblem[],
): (key: string, value: string, annotation: string) => void {
  return (key, value, annotation) => {
    if (key in attributes && attributes[key] !== value) {
      problems.push({ annotation, message: `sets ${key}=${value}, but ${listAnnotation} sets ${attributes[key]}` });
    }
    attributes[key] = value;
  };
}

function loadBalancerAttributesOf(
  parsed: ParsedAnnotationValues,
  problems: AnnotationProblem[],
): Record<string, string> {
  const attributes: Record<string, string> = { ...(parsed.attributes as Record<string, string> | undefined) };
  const set = attributeSetter(attributes, ANNOTATION.attributes, problems);
  if (parsed.crossZone !== undefined) {
    set('load_balancing.cross_zone.enabled', String(parsed.crossZone), ANNOTATION.crossZone);
  }
  if (parsed.accessLogEnabled !== undefined) {
    set('access_logs.s3.enabled', String(parsed.accessLogEnabled), ANNOTATION.accessLogEnabled);
  }
  if (parsed.accessLogBucket !== undefined)
    set('access_logs.s3.bucket', parsed.accessLogBucket, ANNOTATION.accessLogBucket);
  if (parsed.accessLogPrefix !== undefined)
    set('access_logs.s3.prefix', parsed.accessLogPrefix, ANNOTATION.accessLogPrefix);
  if (attributes['access_logs.s3.enabled'] === 'true' && !attributes['access_logs.s3.bucket']) {
    problems.push({ annotation: ANNOTATION.accessLogEnabled, message: `needs ${ANNOTATION.accessLogBucket}` });
  }
  return attributes;
}

function targetGroupAttributesOf(
  parsed: ParsedAnnotationValues,
  problems: AnnotationProblem[],
): Record<string, string> {
  const attributes: Record<string, string> = {
    ...(parsed.targetGroupAttributes as Record<string, string> | undefined),
  };
  const set = attributeSetter(attributes, ANNOTATION.targetGroupAttributes, problems);
  // Proxy protocol is a switch: without the annotation it is turned off again.
  if (!('proxy_protocol_v2.enabled' in attributes) || parsed.proxyProtocol) {
    set('proxy_protocol_v2.enabled', String(parsed.proxyProtocol === '*'), ANNOTATION.proxyProtocol);
  }
  if (parsed.connectionDrainingEnabled === false) {
    set('deregistration_delay.timeout_seconds', '0', ANNOTATION.connectionDrainingEnabled);
  } else if (parsed.connectionDrainingTimeout !== undefined) {
    set(
      'deregistration_delay.timeout_seconds',
      String(parsed.connectionDrainingTimeout),
      ANNOTATION.connectionDrainingTimeout,
    );
  }
  return attributes;
}

/** Whether a tag set marks a resource as belonging to this cluster and Service, and owned (deletable). */
export function ownedByService(
  tags: Readonly<Record<string, string>> | undefined,
  clusterName: string,
  serviceKey: string,
): boolean {
  return isOwnedBy(tags, clusterName, serviceOwner(serviceKey));
}

/** The owner tag of everything a Service's load balancer consists of: `kubernetes.io/service-name=<namespace>/<name>`. */
export function serviceOwner(serviceKey: string): OwnerTag {
  return { key: LABEL_SERVICE_NAME, value: serviceKey };
}

export function describeProblems(problems: readonly AnnotationProblem[]): string {
  return problems.map((p) => `${p.annotation}: ${p.message}`).join('; ');
}
