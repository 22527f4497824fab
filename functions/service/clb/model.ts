import type { SecurityGroupRule } from '../../../shared/aws/ec2-port.ts';
import type {
  ClassicAttributes,
  ClassicHealthCheck,
  ClassicListener,
  ClassicPolicy,
} from '../../../shared/aws/elb-port.ts';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import type { Service, ServicePortSpec } from '../../../shared/k8s/types.ts';
import { dedupeRules } from '../../../shared/load-balancers/security-rules.ts';
import { ANNOTATION, type AnnotationProblem, type LoadBalancerOptions } from '../annotations.ts';
import { type LoadBalancerBase, sourceRangesOf } from '../model/spec.ts';
import { type ServiceIdentity, securityGroupName } from '../names.ts';

/**
 * The pure model of a Classic ELB, built the way the reference cloud controller builds one, so a load
 * balancer it made is kept exactly as it was: listeners from the Service ports to their node ports, the
 * health check, attributes, policies, security group rules and tags.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/introduction.html
 */

/** Proxy protocol on every back end, and the SSL negotiation policy of the SSL/HTTPS listeners, by the reference's names. */
export const PROXY_PROTOCOL_POLICY = 'k8s-proxyprotocol-enabled';
export const sslNegotiationPolicyName = (policy: string) => `k8s-SSLNegotiationPolicy-${policy}`;

/** The reference's health check when the Service says nothing. */
export const CLASSIC_HEALTH_CHECK_DEFAULTS = {
  intervalSeconds: 10,
  timeoutSeconds: 5,
  healthyThreshold: 2,
  unhealthyThreshold: 6,
};

export interface ClassicSpec extends LoadBalancerBase {
  listeners: ClassicListener[];
  healthCheck: ClassicHealthCheck;
  attributes: ClassicAttributes;
  /** Policies the load balancer must have (proxy protocol on the back ends, SSL negotiation on the listeners). */
  policies: { proxyProtocol?: ClassicPolicy; sslNegotiation?: ClassicPolicy };
}

export type ClassicSpecResult = { ok: true; spec: ClassicSpec } | { ok: false; problems: AnnotationProblem[] };

export function classicSpec(
  service: Service,
  options: LoadBalancerOptions,
  context: { clusterName: string; loadBalancerName: string; externalManagedTags?: readonly string[] },
): ClassicSpecResult {
  const problems: AnnotationProblem[] = [];
  const identity: ServiceIdentity = {
    clusterName: context.clusterName,
    namespace: service.metadata.namespace ?? 'default',
    name: service.metadata.name,
  };
  const serviceKey = `${identity.namespace}/${identity.name}`;
  checkClassicOnly(options, problems);
  const ports = (service.spec?.ports ?? []).filter((port, index) => usablePort(port, index, problems));
  if (ports.length === 0 && problems.length === 0) {
    problems.push({ annotation: 'spec.ports', message: 'a Classic ELB needs at least one TCP port with a node port' });
  }
  const listeners = ports.map((port) => classicListener(port, options));
  for (const listener of listeners) {
    for (const message of listenerProblems(listener))
      problems.push({ annotation: ANNOTATION.backendProtocol, message });
  }
  const sourceRanges = sourceRangesOf(service, options, problems);
  if (problems.length > 0) return { ok: false, problems };
  const spec: ClassicSpec = {
    identity,
    serviceKey,
    loadBalancerName: context.loadBalancerName,
    securityGroupName: securityGroupName(context.loadBalancerName),
    scheme: options.scheme,
    listeners,
    healthCheck: classicHealthCheck(service, options, listeners),
    attributes: classicAttributes(options),
    policies: classicPolicies(options),
    tags: {
      ...options.additionalTags,
      [clusterTagKey(context.clusterName)]: 'owned',
      [LABEL_SERVICE_NAME]: serviceKey,
    },
    externalManagedTags: [...(context.externalManagedTags ?? [])],
    extraSecurityGroups: options.extraSecurityGroups ?? [],
    managedIngress: options.securityGroups ? [] : classicIngressRules(listeners, sourceRanges),
    sourceRanges,
  };
  if (options.securityGroups) spec.userSecurityGroups = options.securityGroups;
  if (options.subnets) spec.requestedSubnets = options.subnets;
  if (options.targetNodeLabels) spec.targetNodeLabels = options.targetNodeLabels;
  return { ok: true, spec };
}

/** What a Classic ELB cannot do, named by the annotation that asks for it. */
function checkClassicOnly(options: LoadBalancerOptions, problems: AnnotationProblem[]): void {
  const nlbOnly: [unknown, string][] = [
    [options.eipAllocations, ANNOTATION.eipAllocations],
    [options.privateIpv4Addresses, ANNOTATION.privateIpv4Addresses],
    [options.alpnPolicy, ANNOTATION.alpnPolicy],
    [options.targetType === 'ip' ? 'ip' : undefined, ANNOTATION.nlbTargetType],
    [options.ipAddressType === 'dualstack' ? 'dualstack' : undefined, ANNOTATION.ipAddressType],
  ];
  for (const [value, annotation] of nlbOnly) {
    if (value !== undefined)
      problems.push({ annotation, message: 'applies to Network Load Balancers, not Classic ELBs' });
  }
  if (options.idleTimeoutSeconds !== undefined && options.idleTimeoutSeconds > 4000) {
    problems.push({ annotation: ANNOTATION.connectionIdleTimeout, message: 'a Classic ELB takes 1 to 4000 seconds' });
  }
}

/** Classic ELBs carry TCP, and reach the Nodes on the node port. */
function usablePort(port: ServicePortSpec, index: number, problems: AnnotationProblem[]): boolean {
  if ((port.protocol ?? 'TCP') !== 'TCP') {
    problems.push({
      annotation: `spec.ports[${index}]`,
      message: `${port.protocol} is not supported by Classic ELBs (TCP only)`,
    });
    return false;
  }
  if (!port.nodePort) {
    problems.push({ annotation: `spec.ports[${index}]`, message: 'has no nodePort, which a Classic ELB forwards to' });
    return false;
  }
  return true;
}

/**
 * The reference's listener: with a certificate on an `ssl-ports` port (every port by default), an SSL front
 * end to a TCP back end, or HTTPS to HTTP(S), or SSL to SSL, by `backend-protocol`; without one, HTTP on both
 * ends for `backend-protocol: http` and TCP on both ends for anything else. An SSL or HTTPS front end needs a
 * certificate, so `ssl` and `https` cannot apply to a port without one: AWS would refuse the listener, and
 * since a Classic ELB's listener is replaced by deleting it first, the port would be left without any.
 */
export function classicListener(port: ServicePortSpec, options: LoadBalancerOptions): ClassicListener {
  const tls = options.sslCertificates?.length ? (options.sslPorts ?? '*') : undefined;
  const secure =
    tls === '*' || (tls ?? []).some((p) => p === String(port.port) || (port.name !== undefined && p === port.name));
  const backend = options.backendProtocol;
  const listener: ClassicListener = {
    loadBalancerPort: port.port,
    protocol: 'TCP',
    instancePort: port.nodePort!,
    instanceProtocol: 'TCP',
  };
  if (secure) {
    listener.instanceProtocol = backend.toUpperCase() as ClassicListener['instanceProtocol'];
    listener.protocol = backend === 'http' || backend === 'https' ? 'HTTPS' : 'SSL';
    listener.sslCertificateId = options.sslCertificates![0]!;
  } else if (backend === 'http') {
    listener.protocol = 'HTTP';
    listener.instanceProtocol = 'HTTP';
  }
  return listener;
}

/**
 * What AWS refuses in a listener, found before anything is written: a listener is replaced by deleting the one
 * on its port first, so one AWS would refuse must never get that far. An SSL or HTTPS front end needs a
 * certificate; HTTP and HTTPS front ends need an HTTP or HTTPS back end, TCP and SSL ones a TCP or SSL back end.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-listener-config.html
 */
export function listenerProblems(listener: ClassicListener): string[] {
  const problems: string[] = [];
  const httpLayer = (p: string) => p === 'HTTP' || p === 'HTTPS';
  const port = listener.loadBalancerPort;
  if ((listener.protocol === 'SSL' || listener.protocol === 'HTTPS') && !listener.sslCertificateId) {
    problems.push(`port ${port}: a ${listener.protocol} listener needs a certificate (${ANNOTATION.sslCert})`);
  }
  if (httpLayer(listener.protocol) !== httpLayer(listener.instanceProtocol)) {
    problems.push(
      `port ${port}: a ${listener.protocol} front end cannot forward to a ${listener.instanceProtocol} back end (${ANNOTATION.backendProtocol})`,
    );
  }
  return problems;
}

/**
 * `TCP:<first node port>` (`SSL:` with `backend-protocol` `ssl` or `https`, as the reference checks, whether or
 * not that port has a certificate), or kube-proxy's `HTTP:<healthCheckNodePort>/healthz` with
 * `externalTrafficPolicy: Local`; the `healthcheck-*` annotations override each part.
 */
export function classicHealthCheck(
  service: Service,
  options: LoadBalancerOptions,
  listeners: readonly ClassicListener[],
): ClassicHealthCheck {
  const first = listeners[0];
  const annotated = options.healthCheck;
  let protocol = options.backendProtocol === 'ssl' || options.backendProtocol === 'https' ? 'SSL' : 'TCP';
  let port = String(first?.instancePort ?? 0);
  let path: string | undefined;
  const local = service.spec?.externalTrafficPolicy === 'Local' && service.spec.healthCheckNodePort;
  if (local) {
    protocol = 'HTTP';
    port = String(service.spec!.healthCheckNodePort);
    path = '/healthz';
  }
  if (annotated.protocol) protocol = annotated.protocol;
  if (annotated.port !== undefined && annotated.port !== 'traffic-port') port = String(annotated.port);
  if (annotated.path) path = annotated.path;
  const needsPath = protocol === 'HTTP' || protocol === 'HTTPS';
  return {
    target: needsPath ? `${protocol}:${port}${path ?? '/'}` : `${protocol}:${port}`,
    intervalSeconds: annotated.intervalSeconds ?? CLASSIC_HEALTH_CHECK_DEFAULTS.intervalSeconds,
    timeoutSeconds: annotated.timeoutSeconds ?? CLASSIC_HEALTH_CHECK_DEFAULTS.timeoutSeconds,
    healthyThreshold: annotated.healthyThreshold ?? CLASSIC_HEALTH_CHECK_DEFAULTS.healthyThreshold,
    unhealthyThreshold: annotated.unhealthyThreshold ?? CLASSIC_HEALTH_CHECK_DEFAULTS.unhealthyThreshold,
  };
}

/**
 * Every attribute, so an annotation removed puts AWS's default back: cross-zone off, idle timeout 60 s,
 * connection draining off (300 s when on without a timeout), access logs off (every 60 minutes when on).
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_LoadBalancerAttributes.html
 */
export function classicAttributes(options: LoadBalancerOptions): ClassicAttributes {
  const c = options.classicAttributes;
  const accessLog: ClassicAttributes['accessLog'] = { enabled: c.accessLogEnabled ?? false };
  if (accessLog.enabled) {
    if (c.accessLogBucket) accessLog.s3BucketName = c.accessLogBucket;
    if (c.accessLogPrefix) accessLog.s3BucketPrefix = c.accessLogPrefix;
    accessLog.emitIntervalMinutes = c.accessLogEmitIntervalMinutes ?? 60;
  }
  return {
    crossZone: c.crossZone ?? false,
    idleTimeoutSeconds: options.idleTimeoutSeconds ?? 60,
    connectionDraining: {
      enabled: c.connectionDrainingEnabled ?? false,
      timeoutSeconds: c.connectionDrainingTimeoutSeconds ?? 300,
    },
    accessLog,
  };
}

function classicPolicies(options: LoadBalancerOptions): ClassicSpec['policies'] {
  const out: ClassicSpec['policies'] = {};
  if (options.proxyProtocol) {
    out.proxyProtocol = {
      policyName: PROXY_PROTOCOL_POLICY,
      policyTypeName: 'ProxyProtocolPolicyType',
      attributes: { ProxyProtocol: 'true' },
    };
  }
  if (options.sslPolicy) {
    out.sslNegotiation = {
      policyName: sslNegotiationPolicyName(options.sslPolicy),
      policyTypeName: 'SSLNegotiationPolicyType',
      attributes: { 'Reference-Security-Policy': options.sslPolicy },
    };
  }
  return out;
}

/** The managed group: every listener port from every source range, and ICMP fragmentation-needed. */
export function classicIngressRules(
  listeners: readonly ClassicListener[],
  sourceRanges: readonly string[],
): SecurityGroupRule[] {
  const rules: SecurityGroupRule[] = [];
  const source = (range: string) => (range.includes(':') ? { cidrIpv6: range } : { cidrIpv4: range });
  for (const listener of listeners) {
    for (const range of sourceRanges) {
      rules.push({
        protocol: 'tcp',
        fromPort: listener.loadBalancerPort,
        toPort: listener.loadBalancerPort,
        ...source(range),
      });
    }
  }
  for (const range of sourceRanges) {
    if (!range.includes(':')) rules.push({ protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: range });
  }
  return dedupeRules(rules);
}
