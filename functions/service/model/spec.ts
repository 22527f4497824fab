import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import type { Service, ServicePortSpec } from '../../../shared/k8s/types.ts';
import { LOAD_BALANCER_ATTRIBUTE_DEFAULTS } from '../../../shared/load-balancers/aws-defaults.ts';
import type {
  DesiredListener,
  DesiredTargetGroup,
  Elbv2LoadBalancerModel,
  LoadBalancerModel,
} from '../../../shared/load-balancers/model.ts';
import { managedIngressRules } from '../../../shared/load-balancers/security-rules.ts';
import { parseCidr } from '../../../shared/net/cidr.ts';
import { ANNOTATION, type AnnotationProblem, type LoadBalancerOptions } from '../annotations.ts';
import { LBC_RESOURCE, LBC_TAG, lbcSecurityGroupName, lbcStackTags } from '../lbc/names.ts';
import { preferredLoadBalancerName, type ServiceIdentity, securityGroupName } from '../names.ts';
import { checkSslPorts, type PortContext, portListenerAndGroup } from './ports.ts';

/**
 * The pure model step: a Service and its parsed annotations -> the load balancer it asks for, before
 * anything is observed in AWS: the model the resource modules (shared/load-balancers) apply. Every front end
 * module plans from this, never from the Service itself.
 */

/**
 * What every kind of load balancer of a Service is made from: the resource modules' model (who it is for, its name,
 * groups, tags and reach), for a Service.
 */
export interface LoadBalancerBase extends LoadBalancerModel {
  identity: ServiceIdentity;
  /** `namespace/name`: the value of the `kubernetes.io/service-name` tag. */
  serviceKey: string;
}

/** A Network Load Balancer: the model the resource modules apply (listeners, target groups, attributes), for a Service. */
export type LoadBalancerSpec = LoadBalancerBase & Elbv2LoadBalancerModel & { lbc?: LbcSpec };

/** What a Service the AWS Load Balancer Controller serves adds: its resources' own tracking tags, its backend rules. */
export interface LbcSpec {
  /** Over `tags`, on the load balancer. */
  loadBalancerTags: Record<string, string>;
  /** Over `tags`, on the managed security group. */
  securityGroupTags: Record<string, string>;
  manageBackendSecurityGroupRules: boolean;
}

export interface SpecContext {
  clusterName: string;
  /** SERVICE_EXTERNAL_MANAGED_TAGS: tag keys a Service may not set and the controller never removes. */
  externalManagedTags?: readonly string[];
  /** The account's "inbound rules per security group" quota. */
  securityGroupRuleLimit?: number;
  /**
   * The name of the load balancer being built, when it is not the one the Service asks for: the successor of
   * a load balancer being replaced, or one adopted from the reference controller. Target group and security
   * group names follow it, since they belong to one load balancer.
   */
  loadBalancerName?: string;
}

export type SpecResult = { ok: true; spec: LoadBalancerSpec } | { ok: false; problems: AnnotationProblem[] };

/**
 * The load balancer a Service asks for, from its spec and parsed annotations. Listeners: one per Service port
 * number (TCP and UDP entries on one number become TCP_UDP; ports named by `ssl-ports` become TLS). Target
 * groups: one per listener.
 */
export function loadBalancerSpec(service: Service, options: LoadBalancerOptions, context: SpecContext): SpecResult {
  const problems: AnnotationProblem[] = [];
  const identity: ServiceIdentity = {
    clusterName: context.clusterName,
    namespace: service.metadata.namespace ?? 'default',
    name: service.metadata.name,
  };
  const serviceKey = `${identity.namespace}/${identity.name}`;
  const lbName = context.loadBalancerName ?? preferredLoadBalancerName(identity, options);
  const externalManagedTags = [...(context.externalManagedTags ?? [])];
  checkServiceWide(service, options, externalManagedTags, problems);

  const portContext: PortContext = {
    service,
    options,
    identity,
    loadBalancerName: lbName,
    // IP targets follow the Service's primary address family; IPv6 target groups need a dual-stack load balancer.
    groupFamily: options.targetType === 'ip' && service.spec?.ipFamilies?.[0] === 'IPv6' ? 'ipv6' : 'ipv4',
    problems,
  };
  const listeners: DesiredListener[] = [];
  const targetGroups: DesiredTargetGroup[] = [];
  for (const [number, entries] of portsByNumber(service, problems)) {
    const built = portListenerAndGroup(number, entries, portContext);
    if (!built) continue;
    listeners.push(built.listener);
    targetGroups.push(built.group);
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
    securityGroupName: options.lbc
      ? lbcSecurityGroupName({ ...identity, uid: options.lbc.uid })
      : securityGroupName(lbName),
    scheme: options.scheme,
    ipAddressType: options.ipAddressType,
    targetType: options.targetType,
    listeners,
    targetGroups,
    attributes: { ...LOAD_BALANCER_ATTRIBUTE_DEFAULTS, ...options.attributes },
    tags: options.lbc
      ? { ...options.additionalTags, ...lbcStackTags(context.clusterName, serviceKey) }
      : {
          ...options.additionalTags,
          [clusterTagKey(context.clusterName)]: 'owned',
          [LABEL_SERVICE_NAME]: serviceKey,
        },
    externalManagedTags,
    extraSecurityGroups: options.extraSecurityGroups ?? [],
    managedIngress,
    sourceRanges,
  };
  if (options.securityGroups) spec.userSecurityGroups = options.securityGroups;
  if (options.subnets) spec.requestedSubnets = options.subnets;
  if (options.eipAllocations) spec.eipAllocations = options.eipAllocations;
  if (options.privateIpv4Addresses) spec.privateIpv4Addresses = options.privateIpv4Addresses;
  if (options.targetNodeLabels) spec.targetNodeLabels = options.targetNodeLabels;
  if (options.lbc) {
    spec.lbc = {
      loadBalancerTags: { [LBC_TAG.resource]: LBC_RESOURCE.loadBalancer },
      securityGroupTags: { [LBC_TAG.resource]: LBC_RESOURCE.managedSecurityGroup },
      manageBackendSecurityGroupRules: options.lbc.manageBackendSecurityGroupRules,
    };
  }
  return { ok: true, spec };
}

/** Problems of the Service as a whole, before its ports are looked at. */
function checkServiceWide(
  service: Service,
  options: LoadBalancerOptions,
  externalManagedTags: readonly string[],
  problems: AnnotationProblem[],
): void {
  for (const key of Object.keys(options.additionalTags)) {
    if (externalManagedTags.includes(key)) {
      problems.push({
        annotation: ANNOTATION.additionalResourceTags,
        message: `tag "${key}" is managed by another tool (SERVICE_EXTERNAL_MANAGED_TAGS)`,
      });
    }
  }
  const ipv6Targets = options.targetType === 'ip' && service.spec?.ipFamilies?.[0] === 'IPv6';
  if (ipv6Targets && options.ipAddressType !== 'dualstack') {
    problems.push({
      annotation: ANNOTATION.ipAddressType,
      message: 'must be "dualstack" for IP targets of an IPv6 Service (spec.ipFamilies[0]: IPv6)',
    });
  }
  const ports = service.spec?.ports ?? [];
  if (options.idleTimeoutSeconds !== undefined && !ports.some((p) => (p.protocol ?? 'TCP') === 'TCP')) {
    problems.push({
      annotation: ANNOTATION.connectionIdleTimeout,
      message: 'applies to TCP listeners only, and the Service has no TCP port',
    });
  }
  if (ports.length === 0)
    problems.push({ annotation: 'spec.ports', message: 'a load balancer needs at least one port' });
  if (options.backendProtocol === 'http' || options.backendProtocol === 'https') {
    problems.push({
      annotation: ANNOTATION.backendProtocol,
      message: `"${options.backendProtocol}" is for Classic ELBs; a Network Load Balancer takes "tcp" or "ssl"`,
    });
  }
  if (options.idleTimeoutSeconds !== undefined && options.idleTimeoutSeconds < 60) {
    problems.push({
      annotation: ANNOTATION.connectionIdleTimeout,
      message: `${options.idleTimeoutSeconds} s is below the 60 s a Network Load Balancer's TCP listeners take`,
    });
  }
  checkSslPorts(service, options, problems);
}

/** The Service ports grouped by number, in port order: TCP + UDP on one number is one TCP_UDP listener. */
function portsByNumber(service: Service, problems: AnnotationProblem[]): [number, ServicePortSpec[]][] {
  const byNumber = new Map<number, ServicePortSpec[]>();
  (service.spec?.ports ?? []).forEach((port, index) => {
    if ((port.protocol ?? 'TCP') === 'SCTP') {
      problems.push({ annotation: `spec.ports[${index}]`, message: 'SCTP is not supported by Network Load Balancers' });
      return;
    }
    byNumber.set(port.port, [...(byNumber.get(port.port) ?? []), port]);
  });
  return [...byNumber].sort(([a], [b]) => a - b);
}

export function sourceRangesOf(
  service: Service,
  options: LoadBalancerOptions,
  problems: AnnotationProblem[],
): string[] {
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
