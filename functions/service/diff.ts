import type {
  AvailabilityZone,
  RouteTable,
  SecurityGroup,
  SecurityGroupRule,
  Subnet,
} from '../../shared/aws/ec2-port.ts';
import type {
  AlpnPolicy,
  HealthCheck,
  Listener,
  ListenerCertificate,
  ListenerProtocol,
  ListenerSpec,
  SubnetMapping,
  Target,
  TargetGroupIpAddressType,
  TargetGroupProtocol,
  TargetHealth,
  TargetType,
} from '../../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../../shared/aws/ownership.ts';
import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import { isNodeReady } from '../../shared/k8s/node-helpers.ts';
import {
  FINALIZER_LOAD_BALANCER_CLEANUP,
  LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS,
  LABEL_SERVICE_NAME,
  TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
} from '../../shared/k8s/service-port.ts';
import type { EndpointSlice, Node, Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import { cidrContains, parseCidr, tryParseCidr } from '../../shared/net/cidr.ts';
import { ANNOTATION, type AnnotationProblem, type LoadBalancerOptions } from './annotations.ts';
import {
  backendRuleDescription,
  loadBalancerName,
  type ServiceIdentity,
  securityGroupName,
  targetGroupName,
} from './names.ts';

// ---- which Services are ours ----------------------------------------------------------------------------

export type ServiceDecision =
  | { action: 'ensure' }
  | { action: 'delete'; why: 'deleting' | 'not-ours-any-more' }
  | { action: 'ignore'; why: 'not-a-load-balancer' | 'other-class' | 'other-controller' | 'classic' | 'deleting' };

/**
 * What to do with a Service. Ours: `type: LoadBalancer`, no `loadBalancerClass` or the configured one, and
 * not handed to the AWS Load Balancer Controller (`aws-load-balancer-type: external` / `nlb-ip`). A Service
 * that carries the cleanup finalizer but is no longer ours (type changed, handed over, being deleted) has its
 * load balancer removed. A Service whose status names a Classic ELB (made by the in-tree provider) is left
 * alone: Classic ELBs are a later issue, and touching one would break it.
 */
export function decide(service: Service, loadBalancerClass: string | undefined): ServiceDecision {
  const hasFinalizer = (service.metadata.finalizers ?? []).includes(FINALIZER_LOAD_BALANCER_CLEANUP);
  if (service.metadata.deletionTimestamp) {
    return hasFinalizer ? { action: 'delete', why: 'deleting' } : { action: 'ignore', why: 'deleting' };
  }
  const type = service.metadata.annotations?.[ANNOTATION.type];
  const isLoadBalancer = service.spec?.type === 'LoadBalancer';
  const serviceClass = service.spec?.loadBalancerClass;
  const ourClass = serviceClass === undefined || serviceClass === loadBalancerClass;
  const otherController = type === 'external' || type === 'nlb-ip';
  if (isLoadBalancer && ourClass && type === undefined && isClassicHostname(ingressHostname(service))) {
    return { action: 'ignore', why: 'classic' };
  }
  if (isLoadBalancer && ourClass && !otherController) return { action: 'ensure' };
  if (hasFinalizer) return { action: 'delete', why: 'not-ours-any-more' };
  if (!isLoadBalancer) return { action: 'ignore', why: 'not-a-load-balancer' };
  return { action: 'ignore', why: ourClass ? 'other-controller' : 'other-class' };
}

export function ingressHostname(service: Service): string | undefined {
  return service.status?.loadBalancer?.ingress?.[0]?.hostname;
}

/** Classic ELB DNS names are `<name>-<n>.<region>.elb.amazonaws.com`; NLBs are `<name>-<id>.elb.<region>.amazonaws.com`. */
export function isClassicHostname(hostname: string | undefined): boolean {
  return hostname !== undefined && /\.[a-z]{2}(-[a-z]+)+-\d\.elb\.amazonaws\.com(\.cn)?$/.test(hostname);
}

// ---- the desired load balancer ------------------------------------------------------------------------

export interface DesiredTargetGroup {
  name: string;
  listenerPort: number;
  protocol: TargetGroupProtocol;
  /** The target group's own port: the node port (instance targets) or the target port (IP targets). */
  port: number;
  targetType: TargetType;
  /** `ipv6`: IP targets of an IPv6 Service (IPv6 EndpointSlices); instance targets are always `ipv4`. */
  ipAddressType: TargetGroupIpAddressType;
  healthCheck: HealthCheck;
  /** Every attribute kept in line: the Service's, and AWS's defaults for the ones it does not set. */
  attributes: Record<string, string>;
  /** The Service port(s) behind it: two for TCP_UDP (one TCP, one UDP entry on the same port number). */
  servicePorts: ServicePortSpec[];
}

export interface DesiredListener {
  port: number;
  protocol: ListenerProtocol;
  /** TLS: the default certificate. */
  certificateArn?: string;
  /** TLS: the other certificates, served by SNI. */
  extraCertificateArns: string[];
  sslPolicy?: string;
  alpnPolicy?: AlpnPolicy;
  /** Listener attributes kept in line (TCP: the idle timeout, AWS's 350 s unless the Service sets one). */
  attributes: Record<string, string>;
  targetGroupName: string;
}

export interface LoadBalancerSpec {
  identity: ServiceIdentity;
  /** `namespace/name`: the value of the `kubernetes.io/service-name` tag. */
  serviceKey: string;
  loadBalancerName: string;
  securityGroupName: string;
  scheme: 'internet-facing' | 'internal';
  ipAddressType: 'ipv4' | 'dualstack';
  targetType: TargetType;
  listeners: DesiredListener[];
  targetGroups: DesiredTargetGroup[];
  /**
   * Load balancer attributes kept in line: the Service's, and AWS's defaults for the switches it does not set
   * (so removing an annotation turns its setting off again). Attributes outside both are left as they are.
   */
  attributes: Record<string, string>;
  /** Every resource's tags: ownership, the Service, the user's additional tags. */
  tags: Record<string, string>;
  /** Tag keys another tool manages (SERVICE_EXTERNAL_MANAGED_TAGS): never removed. */
  externalManagedTags: string[];
  /** `security-groups`: used instead of a managed group, and never modified. IDs or names. */
  userSecurityGroups?: string[];
  extraSecurityGroups: string[];
  /** Inbound rules of the managed group: listener ports from the source ranges, and ICMP for path MTU discovery. */
  managedIngress: SecurityGroupRule[];
  requestedSubnets?: string[];
  eipAllocations?: string[];
  privateIpv4Addresses?: string[];
  targetNodeLabels?: Record<string, string | undefined>;
}

export interface SpecContext {
  clusterName: string;
  /** SERVICE_EXTERNAL_MANAGED_TAGS: tag keys a Service may not set and the controller never removes. */
  externalManagedTags?: readonly string[];
  /** The account's "inbound rules per security group" quota. */
  securityGroupRuleLimit?: number;
}

/**
 * Health check defaults for Network Load Balancer target groups, as the reference controllers set them:
 * TCP on the traffic port; with `externalTrafficPolicy: Local` and instance targets, kube-proxy's health
 * check node port answers HTTP `/healthz` (200 only on Nodes with a ready endpoint), checked more often
 * so traffic leaves a Node quickly. Timeouts are AWS's defaults per protocol (10 s TCP, 6 s HTTP).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/target-group-health-checks.html
 */
export const DEFAULT_HEALTH_CHECK: HealthCheck = {
  protocol: 'TCP',
  port: 'traffic-port',
  intervalSeconds: 30,
  timeoutSeconds: 10,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
};
export const LOCAL_HEALTH_CHECK = {
  protocol: 'HTTP',
  path: '/healthz',
  intervalSeconds: 10,
  timeoutSeconds: 6,
  healthyThreshold: 2,
  unhealthyThreshold: 2,
} as const;

/** ICMP "destination unreachable / fragmentation needed": path MTU discovery through the load balancer. */
const ICMP_FRAGMENTATION_NEEDED = { protocol: 'icmp', fromPort: 3, toPort: 4 } as const;
/** ICMPv6 "packet too big" (type 2, code 0): the same for IPv6 clients. */
const ICMPV6_PACKET_TOO_BIG = { protocol: 'icmpv6', fromPort: 2, toPort: 0 } as const;

/**
 * The load balancer switches a Service may set and AWS's value for each when it does not: kept in line on
 * every pass, so an annotation removed turns its setting off and a console change is put back. Values that
 * only mean something while a switch is on (the access log bucket and prefix) are left as they are.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#load-balancer-attributes
 */
export const LOAD_BALANCER_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'load_balancing.cross_zone.enabled': 'false',
  'access_logs.s3.enabled': 'false',
  'deletion_protection.enabled': 'false',
  'dns_record.client_routing_policy': 'any_availability_zone',
};

/**
 * The same for target groups. `preserve_client_ip.enabled` depends on the group: on for instance targets and
 * UDP, off for IP targets over TCP or TLS.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/edit-target-group-attributes.html
 */
export const TARGET_GROUP_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deregistration_delay.timeout_seconds': '300',
  'deregistration_delay.connection_termination.enabled': 'false',
  'proxy_protocol_v2.enabled': 'false',
  'stickiness.enabled': 'false',
};

/** A TCP listener's idle timeout when the Service does not set one. */
export const TCP_IDLE_TIMEOUT_ATTRIBUTE = 'tcp.idle_timeout.seconds';
export const DEFAULT_TCP_IDLE_TIMEOUT_SECONDS = 350;

/** The attributes AWS gives a new listener of this protocol (TCP: the idle timeout; others have none to set). */
export function defaultListenerAttributes(protocol: ListenerProtocol): Record<string, string> {
  return protocol === 'TCP' ? { [TCP_IDLE_TIMEOUT_ATTRIBUTE]: String(DEFAULT_TCP_IDLE_TIMEOUT_SECONDS) } : {};
}

export type SpecResult = { ok: true; spec: LoadBalancerSpec } | { ok: false; problems: AnnotationProblem[] };

/**
 * The load balancer a Service asks for, from its spec and parsed annotations, before anything is observed
 * in AWS. Listeners: one per Service port number (TCP and UDP entries on one number become TCP_UDP; ports
 * named by `ssl-ports` become TLS). Target groups: one per listener.
 */
export function loadBalancerSpec(service: Service, options: LoadBalancerOptions, context: SpecContext): SpecResult {
  const problems: AnnotationProblem[] = [];
  const identity: ServiceIdentity = {
    clusterName: context.clusterName,
    namespace: service.metadata.namespace ?? 'default',
    name: service.metadata.name,
  };
  const serviceKey = `${identity.namespace}/${identity.name}`;
  const lbName = loadBalancerName(identity, options.name);
  const ports = service.spec?.ports ?? [];
  const local = service.spec?.externalTrafficPolicy === 'Local';
  const externalManagedTags = [...(context.externalManagedTags ?? [])];
  for (const key of Object.keys(options.additionalTags)) {
    if (externalManagedTags.includes(key)) {
      problems.push({
        annotation: ANNOTATION.additionalResourceTags,
        message: `tag "${key}" is managed by another tool (SERVICE_EXTERNAL_MANAGED_TAGS)`,
      });
    }
  }
  // IP targets follow the Service's primary address family; IPv6 target groups need a dual-stack load balancer.
  const groupFamily: TargetGroupIpAddressType =
    options.targetType === 'ip' && service.spec?.ipFamilies?.[0] === 'IPv6' ? 'ipv6' : 'ipv4';
  if (groupFamily === 'ipv6' && options.ipAddressType !== 'dualstack') {
    problems.push({
      annotation: ANNOTATION.ipAddressType,
      message: 'must be "dualstack" for IP targets of an IPv6 Service (spec.ipFamilies[0]: IPv6)',
    });
  }
  if (options.idleTimeoutSeconds !== undefined && !ports.some((p) => (p.protocol ?? 'TCP') === 'TCP')) {
    problems.push({
      annotation: ANNOTATION.connectionIdleTimeout,
      message: 'applies to TCP listeners only, and the Service has no TCP port',
    });
  }
  if (ports.length === 0)
    problems.push({ annotation: 'spec.ports', message: 'a load balancer needs at least one port' });

  // Group the Service ports by number: TCP + UDP on one number is one TCP_UDP listener.
  const byNumber = new Map<number, ServicePortSpec[]>();
  ports.forEach((port, index) => {
    const protocol = port.protocol ?? 'TCP';
    if (protocol === 'SCTP') {
      problems.push({ annotation: `spec.ports[${index}]`, message: 'SCTP is not supported by Network Load Balancers' });
      return;
    }
    byNumber.set(port.port, [...(byNumber.get(port.port) ?? []), port]);
  });

  const tls = options.sslCertificates?.length ? options.sslPorts : undefined;
  const tlsPort = (port: ServicePortSpec) =>
    tls === '*' || (tls ?? []).some((p) => p === String(port.port) || (port.name !== undefined && p === port.name));
  if (Array.isArray(tls)) {
    for (const wanted of tls) {
      if (!ports.some((p) => p.name === wanted || String(p.port) === wanted)) {
        problems.push({ annotation: ANNOTATION.sslPorts, message: `"${wanted}" is not a port of the Service` });
      }
    }
  }

  const listeners: DesiredListener[] = [];
  const targetGroups: DesiredTargetGroup[] = [];
  for (const [number, entries] of [...byNumber].sort(([a], [b]) => a - b)) {
    const protocols = new Set(entries.map((p) => p.protocol ?? 'TCP'));
    const where = `spec.ports (port ${number})`;
    if (entries.length > 2 || entries.length !== protocols.size) {
      problems.push({ annotation: where, message: 'the same port and protocol is listed twice' });
      continue;
    }
    let listenerProtocol: ListenerProtocol;
    let groupProtocol: TargetGroupProtocol;
    const wantsTls = entries.some(tlsPort);
    if (protocols.size === 2) {
      listenerProtocol = 'TCP_UDP';
      groupProtocol = 'TCP_UDP';
      if (wantsTls && tls !== '*') {
        problems.push({ annotation: ANNOTATION.sslPorts, message: `port ${number} carries UDP too and cannot be TLS` });
      }
    } else if (protocols.has('UDP')) {
      listenerProtocol = 'UDP';
      groupProtocol = 'UDP';
      if (wantsTls && tls !== '*') {
        problems.push({ annotation: ANNOTATION.sslPorts, message: `port ${number} is UDP and cannot be TLS` });
      }
    } else if (wantsTls) {
      listenerProtocol = 'TLS';
      groupProtocol = options.backendProtocol === 'ssl' ? 'TLS' : 'TCP';
    } else {
      listenerProtocol = 'TCP';
      groupProtocol = 'TCP';
    }

    let groupPort: number;
    if (options.targetType === 'instance') {
      const nodePorts = new Set(entries.map((p) => p.nodePort));
      if (entries.some((p) => !p.nodePort)) {
        problems.push({
          annotation: where,
          message: `has no nodePort: instance targets need node ports (allocateLoadBalancerNodePorts), or set ${ANNOTATION.nlbTargetType}: ip`,
        });
        continue;
      }
      if (nodePorts.size > 1) {
        problems.push({
          annotation: where,
          message: 'TCP and UDP on one port need the same nodePort for a TCP_UDP listener',
        });
        continue;
      }
      groupPort = entries[0]!.nodePort!;
    } else {
      const targetPorts = new Set(entries.map((p) => p.targetPort ?? p.port));
      if (targetPorts.size > 1) {
        problems.push({
          annotation: where,
          message: 'TCP and UDP on one port need the same targetPort for a TCP_UDP listener',
        });
        continue;
      }
      const targetPort = entries[0]!.targetPort ?? entries[0]!.port;
      groupPort = typeof targetPort === 'number' ? targetPort : number;
    }

    const healthCheck = healthCheckFor(service, options, local, problems);
    const preserveClientIp =
      options.targetType === 'instance' || groupProtocol === 'UDP' || groupProtocol === 'TCP_UDP';
    const attributes: Record<string, string> = {
      ...TARGET_GROUP_ATTRIBUTE_DEFAULTS,
      'preserve_client_ip.enabled': String(preserveClientIp),
      ...options.targetGroupAttributes,
    };
    if (groupProtocol === 'UDP' || groupProtocol === 'TCP_UDP') {
      if (attributes['proxy_protocol_v2.enabled'] === 'true') {
        problems.push({
          annotation: ANNOTATION.proxyProtocol,
          message: `proxy protocol is not available on UDP port ${number}`,
        });
      }
      // Client IP preservation cannot be turned off for UDP; leave it out rather than fail.
      delete attributes['preserve_client_ip.enabled'];
    }
    const name = targetGroupName(identity, {
      loadBalancerName: lbName,
      listenerPort: number,
      protocol: groupProtocol,
      targetType: options.targetType,
      ipAddressType: groupFamily,
    });
    targetGroups.push({
      name,
      listenerPort: number,
      protocol: groupProtocol,
      port: groupPort,
      targetType: options.targetType,
      ipAddressType: groupFamily,
      healthCheck,
      attributes,
      servicePorts: entries,
    });
    const listener: DesiredListener = {
      port: number,
      protocol: listenerProtocol,
      targetGroupName: name,
      extraCertificateArns: [],
      attributes: {},
    };
    if (listenerProtocol === 'TLS') {
      const [first, ...others] = options.sslCertificates!;
      listener.certificateArn = first!;
      listener.extraCertificateArns = others;
      if (options.sslPolicy) listener.sslPolicy = options.sslPolicy;
      if (options.alpnPolicy) listener.alpnPolicy = options.alpnPolicy;
    }
    // Only TCP listeners have an idle timeout to set (TLS is fixed at 350 s, UDP at 120 s).
    if (listenerProtocol === 'TCP') {
      listener.attributes[TCP_IDLE_TIMEOUT_ATTRIBUTE] = String(
        options.idleTimeoutSeconds ?? DEFAULT_TCP_IDLE_TIMEOUT_SECONDS,
      );
    }
    listeners.push(listener);
  }

  const sourceRanges = sourceRangesOf(service, options, problems);
  if (options.alpnPolicy && !listeners.some((l) => l.protocol === 'TLS')) {
    problems.push({ annotation: ANNOTATION.alpnPolicy, message: 'the Service has no TLS port' });
  }
  const managedIngress = options.securityGroups ? [] : managedIngressRules(listeners, sourceRanges);
  const limit = context.securityGroupRuleLimit ?? 60;
  if (managedIngress.length > limit) {
    problems.push({
      annotation: service.spec?.loadBalancerSourceRanges?.length
        ? 'spec.loadBalancerSourceRanges'
        : ANNOTATION.sourceRanges,
      message: `${sourceRanges.length} source ranges for ${listeners.length} listeners need ${managedIngress.length} security group rules; a group holds ${limit}`,
    });
  }

  if (problems.length > 0) return { ok: false, problems };
  const spec: LoadBalancerSpec = {
    identity,
    serviceKey,
    loadBalancerName: lbName,
    securityGroupName: securityGroupName(lbName),
    scheme: options.scheme,
    ipAddressType: options.ipAddressType,
    targetType: options.targetType,
    listeners,
    targetGroups,
    attributes: { ...LOAD_BALANCER_ATTRIBUTE_DEFAULTS, ...options.attributes },
    tags: {
      ...options.additionalTags,
      [clusterTagKey(context.clusterName)]: 'owned',
      [LABEL_SERVICE_NAME]: serviceKey,
    },
    externalManagedTags,
    extraSecurityGroups: options.extraSecurityGroups ?? [],
    managedIngress,
  };
  if (options.securityGroups) spec.userSecurityGroups = options.securityGroups;
  if (options.subnets) spec.requestedSubnets = options.subnets;
  if (options.eipAllocations) spec.eipAllocations = options.eipAllocations;
  if (options.privateIpv4Addresses) spec.privateIpv4Addresses = options.privateIpv4Addresses;
  if (options.targetNodeLabels) spec.targetNodeLabels = options.targetNodeLabels;
  return { ok: true, spec };
}

function healthCheckFor(
  service: Service,
  options: LoadBalancerOptions,
  local: boolean,
  problems: AnnotationProblem[],
): HealthCheck {
  const annotated = options.healthCheck;
  let base: HealthCheck = { ...DEFAULT_HEALTH_CHECK };
  // With IP targets traffic goes straight to Pods: kube-proxy's per-Node health check says nothing about them.
  if (local && options.targetType === 'instance') {
    const port = service.spec?.healthCheckNodePort;
    if (!port) {
      problems.push({
        annotation: 'spec.healthCheckNodePort',
        message: 'externalTrafficPolicy: Local needs a health check node port',
      });
    } else {
      base = { ...LOCAL_HEALTH_CHECK, port: String(port) };
    }
  }
  const protocol = annotated.protocol ?? base.protocol;
  const check: HealthCheck = {
    protocol,
    port: annotated.port === undefined ? base.port : String(annotated.port),
    intervalSeconds: annotated.intervalSeconds ?? base.intervalSeconds,
    timeoutSeconds:
      annotated.timeoutSeconds ?? (protocol === base.protocol ? base.timeoutSeconds : protocol === 'HTTP' ? 6 : 10),
    healthyThreshold: annotated.healthyThreshold ?? base.healthyThreshold,
    unhealthyThreshold: annotated.unhealthyThreshold ?? base.unhealthyThreshold,
  };
  if (protocol !== 'TCP') check.path = annotated.path ?? base.path ?? '/';
  return check;
}

function sourceRangesOf(service: Service, options: LoadBalancerOptions, problems: AnnotationProblem[]): string[] {
  const fromSpec = service.spec?.loadBalancerSourceRanges;
  if (fromSpec && fromSpec.length > 0) {
    const ranges: string[] = [];
    for (const range of fromSpec) {
      const parsed = parseCidr(range.trim());
      if (parsed.ok) ranges.push(range.trim());
      else problems.push({ annotation: 'spec.loadBalancerSourceRanges', message: parsed.error });
    }
    return ranges;
  }
  return options.sourceRanges ?? (options.ipAddressType === 'dualstack' ? ['0.0.0.0/0', '::/0'] : ['0.0.0.0/0']);
}

/**
 * The managed group's inbound rules: every listener port from every source range (TLS and TCP_UDP need TCP,
 * UDP and TCP_UDP need UDP), plus ICMP fragmentation-needed from the IPv4 ranges.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
 */
export function managedIngressRules(
  listeners: readonly DesiredListener[],
  sourceRanges: readonly string[],
): SecurityGroupRule[] {
  const rules: SecurityGroupRule[] = [];
  const source = (range: string) => (range.includes(':') ? { cidrIpv6: range } : { cidrIpv4: range });
  for (const listener of listeners) {
    for (const protocol of transportProtocols(listener.protocol)) {
      for (const range of sourceRanges) {
        rules.push({ protocol, fromPort: listener.port, toPort: listener.port, ...source(range) });
      }
    }
  }
  for (const range of sourceRanges) {
    if (range.includes(':')) rules.push({ ...ICMPV6_PACKET_TOO_BIG, cidrIpv6: range });
    else rules.push({ ...ICMP_FRAGMENTATION_NEEDED, cidrIpv4: range });
  }
  return dedupeRules(rules);
}

function transportProtocols(protocol: ListenerProtocol | TargetGroupProtocol): ('tcp' | 'udp')[] {
  if (protocol === 'TCP_UDP') return ['tcp', 'udp'];
  return protocol === 'UDP' ? ['udp'] : ['tcp'];
}

// ---- targets -------------------------------------------------------------------------------------------

/**
 * Nodes that may take load balancer traffic: not being deleted, not excluded by label, not about to be
 * removed by the cluster autoscaler, Ready, with an instance ID, and matching `target-node-labels`.
 * https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers
 */
export function eligibleNodes(nodes: readonly Node[], selector?: Readonly<Record<string, string | undefined>>): Node[] {
  return nodes.filter((node) => {
    if (node.metadata.deletionTimestamp) return false;
    const labels = node.metadata.labels ?? {};
    if (LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS in labels) return false;
    if ((node.spec?.taints ?? []).some((t) => t.key === TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER)) return false;
    if (!isNodeReady(node)) return false;
    if (!instanceIdFromProviderId(node.spec?.providerID)) return false;
    return Object.entries(selector ?? {}).every(
      ([key, value]) => key in labels && (value === undefined || labels[key] === value),
    );
  });
}

export function instanceIdsOf(nodes: readonly Node[]): string[] {
  return [...new Set(nodes.flatMap((n) => instanceIdFromProviderId(n.spec?.providerID) ?? []))].sort();
}

/** Instance targets of one target group: every eligible instance on the group's node port. */
export function instanceTargets(group: DesiredTargetGroup, instanceIds: readonly string[]): Target[] {
  return instanceIds.map((id) => ({ id, port: group.port }));
}

/**
 * IP targets of one target group: the ready addresses of the Service's EndpointSlices of the group's family, on the port the
 * slice gives for the Service port (by name, which also resolves named target ports). Terminating and
 * not-ready endpoints are left out; `ready` unset counts as ready.
 */
export function ipTargets(group: DesiredTargetGroup, slices: readonly EndpointSlice[]): Target[] {
  const servicePort = group.servicePorts.find((p) => (p.protocol ?? 'TCP') === 'TCP') ?? group.servicePorts[0]!;
  const protocol = servicePort.protocol ?? 'TCP';
  const targets = new Map<string, Target>();
  for (const slice of slices) {
    if (slice.addressType !== (group.ipAddressType === 'ipv6' ? 'IPv6' : 'IPv4')) continue;
    const port = (slice.ports ?? []).find(
      (p) => (p.name ?? '') === (servicePort.name ?? '') && (p.protocol ?? 'TCP') === protocol,
    )?.port;
    if (port === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false || endpoint.conditions?.terminating === true) continue;
      for (const address of endpoint.addresses) targets.set(`${address}:${port}`, { id: address, port });
    }
  }
  return [...targets.values()].sort((x, y) => (x.id === y.id ? x.port - y.port : x.id < y.id ? -1 : 1));
}

const DRAINING: ReadonlySet<string> = new Set(['draining', 'unhealthy.draining']);

/**
 * Register what is missing, deregister what is no longer wanted; draining targets are on their way out and
 * count as absent (one that is wanted again is registered again).
 */
export function planTargets(
  desired: readonly Target[],
  current: readonly TargetHealth[],
): { register: Target[]; deregister: Target[] } {
  const key = (t: Target) => `${t.id}:${t.port}`;
  const registered = new Map(current.filter((h) => !DRAINING.has(h.state)).map((h) => [key(h.target), h.target]));
  const wanted = new Map(desired.map((t) => [key(t), t]));
  return {
    register: [...wanted].filter(([k]) => !registered.has(k)).map(([, t]) => t),
    deregister: [...registered].filter(([k]) => !wanted.has(k)).map(([, t]) => t),
  };
}

// ---- listeners, attributes, health checks, tags ------------------------------------------------------------

export interface ListenerPlan {
  create: ListenerSpec[];
  modify: { arn: string; spec: ListenerSpec; was: Listener }[];
  remove: Listener[];
}

/** Listeners by port: create missing ones, modify those that differ, delete ports the Service no longer has. */
export function planListeners(desired: readonly ListenerSpec[], current: readonly Listener[]): ListenerPlan {
  const plan: ListenerPlan = { create: [], modify: [], remove: [] };
  const byPort = new Map(current.map((l) => [l.port, l]));
  for (const spec of desired) {
    const existing = byPort.get(spec.port);
    if (!existing) plan.create.push(spec);
    else if (!listenerMatches(existing, spec)) plan.modify.push({ arn: existing.arn, spec, was: existing });
  }
  const wanted = new Set(desired.map((s) => s.port));
  plan.remove = current.filter((l) => !wanted.has(l.port));
  return plan;
}

function listenerMatches(listener: Listener, spec: ListenerSpec): boolean {
  return (
    listener.protocol === spec.protocol &&
    listener.targetGroupArn === spec.targetGroupArn &&
    (spec.protocol !== 'TLS' ||
      ((listener.certificateArns[0] ?? '') === (spec.certificateArn ?? '') &&
        (spec.sslPolicy === undefined || listener.sslPolicy === spec.sslPolicy) &&
        (listener.alpnPolicy ?? 'None') === (spec.alpnPolicy ?? 'None')))
  );
}

/**
 * The listener to send for a change: an ALPN policy the Service no longer sets is turned off explicitly
 * (`None`), since leaving it out of ModifyListener keeps the old one.
 */
export function listenerUpdate(spec: ListenerSpec, was: Listener): ListenerSpec {
  if (spec.protocol !== 'TLS' || spec.alpnPolicy || (was.alpnPolicy ?? 'None') === 'None') return spec;
  return { ...spec, alpnPolicy: 'None' };
}

/**
 * SNI certificates to remove from a TLS listener's certificate list (before the listener's default changes)
 * and to add (after). The default certificate is the listener's own and not wanted in the list; a listed
 * copy of the current default is left alone, since AWS refuses to remove the default (it goes on a later
 * pass, once it is no longer the default).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeListenerCertificates.html
 */
export function planListenerCertificates(
  wanted: readonly string[],
  current: readonly ListenerCertificate[],
  defaults: { current?: string; next?: string } = {},
): { add: string[]; remove: string[] } {
  const listed = new Set(current.filter((c) => !c.isDefault).map((c) => c.certificateArn));
  const want = new Set(wanted.filter((arn) => arn !== defaults.next));
  return {
    add: [...want].filter((arn) => !listed.has(arn)),
    remove: [...listed].filter((arn) => !want.has(arn) && arn !== defaults.current),
  };
}

/**
 * The wanted entries (attributes to set, tags to add or overwrite) whose current value differs; entries not
 * wanted are left alone.
 */
export function changedEntries(
  desired: Readonly<Record<string, string>>,
  current: Readonly<Record<string, string>>,
): Record<string, string> {
  return Object.fromEntries(Object.entries(desired).filter(([key, value]) => current[key] !== value));
}

export function healthCheckMatches(current: HealthCheck, desired: HealthCheck): boolean {
  return (
    current.protocol === desired.protocol &&
    current.port === desired.port &&
    (desired.protocol === 'TCP' || (current.path ?? '/') === (desired.path ?? '/')) &&
    current.intervalSeconds === desired.intervalSeconds &&
    current.timeoutSeconds === desired.timeoutSeconds &&
    current.healthyThreshold === desired.healthyThreshold &&
    current.unhealthyThreshold === desired.unhealthyThreshold
  );
}

/**
 * Tag keys to remove: everything the resource carries that is not wanted (an entry dropped from
 * `additional-resource-tags`), except AWS's own `aws:` tags, which cannot be removed, and the keys another
 * tool manages (SERVICE_EXTERNAL_MANAGED_TAGS). This is the AWS Load Balancer Controller's rule, so tagging
 * tools that write to these resources need to be listed there.
 */
export function staleTagKeys(
  desired: Readonly<Record<string, string>>,
  current: Readonly<Record<string, string>>,
  externalManaged: readonly string[],
): string[] {
  return Object.keys(current)
    .filter((key) => !(key in desired) && !key.toLowerCase().startsWith('aws:') && !externalManaged.includes(key))
    .sort();
}

// ---- security groups -----------------------------------------------------------------------------------

/** EC2's identity of a rule: protocol, ports and source (not the description). */
export function ruleKey(rule: SecurityGroupRule): string {
  const ports = rule.protocol === '-1' ? '-1:-1' : `${rule.fromPort}:${rule.toPort}`;
  return `${rule.protocol}:${ports}:${rule.cidrIpv4 ?? ''}:${rule.cidrIpv6 ?? ''}:${rule.sourceGroupId ?? ''}`;
}

function dedupeRules(rules: readonly SecurityGroupRule[]): SecurityGroupRule[] {
  const seen = new Map<string, SecurityGroupRule>();
  for (const rule of rules) if (!seen.has(ruleKey(rule))) seen.set(ruleKey(rule), rule);
  return [...seen.values()];
}

/**
 * Rules to add and remove. `owned` says which current rules are ours to remove: every rule of the managed
 * group, only our described rules on a Node group. A wanted rule that exists already under another
 * description (a user's) is left as it is, since EC2 would refuse a duplicate.
 */
export function planRules(
  desired: readonly SecurityGroupRule[],
  current: readonly SecurityGroupRule[],
  owned: (rule: SecurityGroupRule) => boolean,
): { authorize: SecurityGroupRule[]; revoke: SecurityGroupRule[] } {
  const wanted = new Map(dedupeRules(desired).map((r) => [ruleKey(r), r]));
  const present = new Set(current.map(ruleKey));
  return {
    authorize: [...wanted].filter(([key]) => !present.has(key)).map(([, r]) => r),
    revoke: current.filter((r) => owned(r) && !wanted.has(ruleKey(r))),
  };
}

/** The Service node port range (kube-apiserver `--service-node-port-range`). */
export interface PortRange {
  from: number;
  to: number;
}

export const DEFAULT_NODE_PORT_RANGE: PortRange = { from: 30000, to: 32767 };

/**
 * Rules a load balancer needs on the Nodes' groups, all from the cluster's backend group: the ports traffic
 * arrives on (node ports, or Pod ports for IP targets) and the health check ports. A port inside the node
 * port range is allowed as the whole range, so instance targets of every Service of the cluster share two
 * rules (TCP and UDP). Referencing the load balancers' group works even with client IP preservation on.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
 */
export function nodeRules(
  spec: LoadBalancerSpec,
  targetsByGroup: ReadonlyMap<string, readonly Target[]>,
  backendGroupId: string,
  nodePortRange: PortRange = DEFAULT_NODE_PORT_RANGE,
): SecurityGroupRule[] {
  const description = backendRuleDescription(spec.identity.clusterName);
  const rules: SecurityGroupRule[] = [];
  const add = (protocol: 'tcp' | 'udp', port: number) => {
    const inRange = port >= nodePortRange.from && port <= nodePortRange.to;
    const [fromPort, toPort] = inRange ? [nodePortRange.from, nodePortRange.to] : [port, port];
    rules.push({ protocol, fromPort, toPort, sourceGroupId: backendGroupId, description });
  };
  for (const group of spec.targetGroups) {
    const trafficPorts =
      group.targetType === 'instance'
        ? [group.port]
        : [...new Set((targetsByGroup.get(group.name) ?? []).map((t) => t.port))].sort((a, b) => a - b);
    const healthPorts = group.healthCheck.port === 'traffic-port' ? trafficPorts : [Number(group.healthCheck.port)];
    for (const port of trafficPorts) for (const protocol of transportProtocols(group.protocol)) add(protocol, port);
    // Health checks are TCP, HTTP or HTTPS: always TCP underneath.
    for (const port of healthPorts) add('tcp', port);
  }
  return dedupeRules(rules);
}

/** Whether a rule on a Node group is one this controller added for the cluster's load balancers. */
export function isOurNodeRule(rule: SecurityGroupRule, clusterName: string): boolean {
  return rule.description === backendRuleDescription(clusterName);
}

/**
 * The Nodes' security groups we may add rules to: on each instance's primary interface, the groups carrying
 * our cluster tag (owned or shared: rules are added, the group is never deleted). Untagged groups are never
 * touched.
 */
export function clusterNodeGroups(
  primaryGroupIds: readonly string[],
  groups: readonly SecurityGroup[],
  clusterName: string,
): SecurityGroup[] {
  const wanted = new Set(primaryGroupIds);
  return groups.filter((g) => wanted.has(g.groupId) && clusterTagKey(clusterName) in g.tags);
}

// ---- subnets -------------------------------------------------------------------------------------------

/** A subnet is public when its route table (explicit association, else the VPC's main table) routes to an internet gateway. */
export function isPublicSubnet(subnetId: string, routeTables: readonly RouteTable[]): boolean {
  const table =
    routeTables.find((t) => t.associations?.some((a) => a.subnetId === subnetId)) ??
    routeTables.find((t) => t.associations?.some((a) => a.main));
  return (table?.routes ?? []).some((r) => r.state === 'active' && r.target.gatewayId?.startsWith('igw-'));
}

export type SubnetChoice = { ok: true; subnets: Subnet[] } | { ok: false; problem: AnnotationProblem };

/**
 * The load balancer's subnets. Named in the annotation (IDs or Name tags): exactly those. Else discovered:
 * subnets of the VPC tagged for this cluster or for no cluster, not in Local or Wavelength Zones, public
 * ones only for an internet-facing load balancer; one per zone, preferring the role tag
 * (`kubernetes.io/role/elb` or `kubernetes.io/role/internal-elb`), then our cluster tag, then the lowest ID.
 */
export function chooseSubnets(input: {
  scheme: 'internet-facing' | 'internal';
  clusterName: string;
  subnets: readonly Subnet[];
  routeTables: readonly RouteTable[];
  zones: readonly AvailabilityZone[];
  requested?: readonly string[];
  /** A dual-stack load balancer: every subnet needs an IPv6 CIDR block. */
  dualstack?: boolean;
}): SubnetChoice {
  const hasIpv6 = (s: Subnet) => (s.ipv6CidrBlocks ?? []).length > 0;
  if (input.requested) {
    const chosen: Subnet[] = [];
    for (const ref of input.requested) {
      const matches = input.subnets.filter((s) => s.subnetId === ref || s.tags.Name === ref);
      if (matches.length !== 1) {
        return {
          ok: false,
          problem: {
            annotation: ANNOTATION.subnets,
            message:
              matches.length === 0 ? `no subnet "${ref}" in the VPC` : `${matches.length} subnets are named "${ref}"`,
          },
        };
      }
      if (input.dualstack && !hasIpv6(matches[0]!)) {
        return {
          ok: false,
          problem: {
            annotation: ANNOTATION.subnets,
            message: `subnet "${ref}" has no IPv6 CIDR block, which a dualstack load balancer (${ANNOTATION.ipAddressType}) needs`,
          },
        };
      }
      if (!chosen.includes(matches[0]!)) chosen.push(matches[0]!);
    }
    const zones = new Set(chosen.map((s) => s.availabilityZone));
    if (zones.size < chosen.length) {
      return {
        ok: false,
        problem: { annotation: ANNOTATION.subnets, message: 'names two subnets in one availability zone' },
      };
    }
    return { ok: true, subnets: chosen };
  }

  const ours = clusterTagKey(input.clusterName);
  const roleTag = input.scheme === 'internal' ? 'kubernetes.io/role/internal-elb' : 'kubernetes.io/role/elb';
  const zoneType = new Map(input.zones.map((z) => [z.zoneName, z.zoneType ?? 'availability-zone']));
  const hasRole = (s: Subnet) => roleTag in s.tags && s.tags[roleTag] !== '0' && s.tags[roleTag] !== 'false';
  const byZone = new Map<string, Subnet>();
  for (const subnet of [...input.subnets].sort((a, b) => (a.subnetId < b.subnetId ? -1 : 1))) {
    const clusterTags = Object.keys(subnet.tags).filter((k) => k.startsWith('kubernetes.io/cluster/'));
    if (clusterTags.length > 0 && !clusterTags.includes(ours)) continue;
    const type = zoneType.get(subnet.availabilityZone) ?? 'availability-zone';
    if (type === 'local-zone' || type === 'wavelength-zone') continue;
    if (input.dualstack && !hasIpv6(subnet)) continue;
    if (input.scheme === 'internet-facing' && !isPublicSubnet(subnet.subnetId, input.routeTables)) continue;
    const existing = byZone.get(subnet.availabilityZone);
    if (!existing) {
      byZone.set(subnet.availabilityZone, subnet);
      continue;
    }
    // Sorted by ID, so an equal rank keeps the lower ID already chosen.
    if (hasRole(existing) !== hasRole(subnet)) {
      if (hasRole(subnet)) byZone.set(subnet.availabilityZone, subnet);
      continue;
    }
    const existingOurs = ours in existing.tags;
    const subnetOurs = ours in subnet.tags;
    if (existingOurs !== subnetOurs && subnetOurs) byZone.set(subnet.availabilityZone, subnet);
  }
  const chosen = [...byZone.values()].sort((a, b) => (a.availabilityZone < b.availabilityZone ? -1 : 1));
  if (chosen.length === 0) {
    const what = `${input.scheme === 'internal' ? 'internal' : 'public (routed to an internet gateway)'}${input.dualstack ? ' IPv6-enabled' : ''}`;
    return {
      ok: false,
      problem: {
        annotation: ANNOTATION.subnets,
        message: `no ${what} subnet found for an ${input.scheme} load balancer: tag subnets ${roleTag}=1 and ${ours}=shared, or list them in this annotation`,
      },
    };
  }
  return { ok: true, subnets: chosen };
}

/** Subnets with their Elastic IPs (in the order given) or private addresses (each inside its subnet). */
export function subnetMappings(
  subnets: readonly Subnet[],
  spec: Pick<LoadBalancerSpec, 'eipAllocations' | 'privateIpv4Addresses'>,
): { ok: true; mappings: SubnetMapping[] } | { ok: false; problem: AnnotationProblem } {
  if (spec.eipAllocations && spec.eipAllocations.length !== subnets.length) {
    return {
      ok: false,
      problem: {
        annotation: ANNOTATION.eipAllocations,
        message: `lists ${spec.eipAllocations.length} allocations for ${subnets.length} subnets: one per subnet`,
      },
    };
  }
  const mappings: SubnetMapping[] = [];
  for (const [index, subnet] of subnets.entries()) {
    const mapping: SubnetMapping = { subnetId: subnet.subnetId };
    if (spec.eipAllocations) mapping.allocationId = spec.eipAllocations[index]!;
    if (spec.privateIpv4Addresses) {
      const block = tryParseCidr(subnet.cidrBlock);
      const inside = spec.privateIpv4Addresses.filter((ip) => {
        const address = tryParseCidr(`${ip}/32`);
        return block && address && cidrContains(block, address);
      });
      if (inside.length !== 1) {
        return {
          ok: false,
          problem: {
            annotation: ANNOTATION.privateIpv4Addresses,
            message: `needs exactly one address inside subnet ${subnet.subnetId} (${subnet.cidrBlock ?? 'unknown CIDR'}), found ${inside.length}`,
          },
        };
      }
      mapping.privateIPv4Address = inside[0]!;
    }
    mappings.push(mapping);
  }
  if (spec.privateIpv4Addresses && spec.privateIpv4Addresses.length !== subnets.length) {
    return {
      ok: false,
      problem: {
        annotation: ANNOTATION.privateIpv4Addresses,
        message: `lists ${spec.privateIpv4Addresses.length} addresses for ${subnets.length} subnets: one per subnet`,
      },
    };
  }
  return { ok: true, mappings };
}

export type SubnetPlan =
  | { action: 'none' }
  /** Zones added or removed, every remaining zone as it is: one SetSubnets. */
  | { action: 'set'; mappings: SubnetMapping[] }
  /**
   * Some zones keep their place but change subnet or address, which AWS does only by removing the zone and
   * adding it again later: first SetSubnets without them (`mappings`), then a later pass adds them back.
   */
  | { action: 'remove-first'; mappings: SubnetMapping[]; zones: string[] }
  /** Every zone changes: nothing could stay while they are removed, so the load balancer is made again. */
  | { action: 'replace'; zones: string[] };

type CurrentSubnet = SubnetMapping & { zoneName?: string };

/**
 * How to move a load balancer from its current subnets to the wanted ones. A zone stays as it is when its
 * subnet is the same and each address the Service names (Elastic IP, private IPv4) is the one in use;
 * addresses the Service does not name are whatever AWS assigned and are kept. Zones are the subnets' zones
 * (`zoneOf`, from DescribeSubnets) so that a subnet moving within a zone is seen as a change of that zone.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/availability-zones.html
 */
export function planSubnets(
  current: readonly CurrentSubnet[],
  wanted: readonly SubnetMapping[],
  zoneOf: (subnetId: string) => string | undefined,
): SubnetPlan {
  const zone = (m: CurrentSubnet) => m.zoneName ?? zoneOf(m.subnetId) ?? m.subnetId;
  const currentByZone = new Map(current.map((m) => [zone(m), m]));
  const wantedByZone = new Map(wanted.map((m) => [zoneOf(m.subnetId) ?? m.subnetId, m]));
  const keep = (have: CurrentSubnet, want: SubnetMapping) =>
    have.subnetId === want.subnetId &&
    (want.allocationId === undefined || have.allocationId === want.allocationId) &&
    (want.privateIPv4Address === undefined || have.privateIPv4Address === want.privateIPv4Address);
  // A staying zone is sent as it is (AWS wants the existing configuration of every zone that remains).
  const asIs = (m: CurrentSubnet): SubnetMapping => {
    const { zoneName: _zone, ...mapping } = m;
    return mapping;
  };
  const changed: string[] = [];
  const next: SubnetMapping[] = [];
  for (const [name, want] of wantedByZone) {
    const have = currentByZone.get(name);
    if (!have) next.push(want);
    else if (keep(have, want)) next.push(asIs(have));
    else changed.push(name);
  }
  const removed = [...currentByZone.keys()].filter((name) => !wantedByZone.has(name));
  if (changed.length === 0) {
    return removed.length === 0 && next.length === current.length
      ? { action: 'none' }
      : { action: 'set', mappings: next };
  }
  changed.sort();
  if (next.length === 0) return { action: 'replace', zones: changed };
  return { action: 'remove-first', mappings: next, zones: changed };
}
