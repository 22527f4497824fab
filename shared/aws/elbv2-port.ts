/**
 * Elastic Load Balancing v2 (Network Load Balancers) as the service controller needs it: shaped for the
 * caller. Callers never page, never chunk, and never see AWS's "not found" errors for lookups: a missing
 * load balancer or target group is simply absent. Create calls follow AWS's documented idempotency (the
 * same name with the same settings answers the existing resource); the same name with other settings is
 * an explicit `'name-taken'` answer, never an exception, because the caller must decide whose name it is.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
 */

export type LoadBalancerScheme = 'internet-facing' | 'internal';

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancerState.html */
export type LoadBalancerStateCode = 'provisioning' | 'active' | 'active_impaired' | 'failed';

export type ListenerProtocol = 'TCP' | 'UDP' | 'TCP_UDP' | 'TLS';
export type TargetGroupProtocol = 'TCP' | 'UDP' | 'TCP_UDP' | 'TLS';
export type HealthCheckProtocol = 'TCP' | 'HTTP' | 'HTTPS';
export type TargetType = 'instance' | 'ip';
/** `dualstack`: IPv4 and IPv6 clients; every subnet needs an IPv6 CIDR block. */
export type LoadBalancerIpAddressType = 'ipv4' | 'dualstack';
/** The address family of a target group's IP targets (instance targets use `ipv4`). */
export type TargetGroupIpAddressType = 'ipv4' | 'ipv6';
/** TLS listeners only. https://docs.aws.amazon.com/elasticloadbalancing/latest/network/tls-listener.html#alpn-policies */
export const ALPN_POLICIES = ['HTTP1Only', 'HTTP2Only', 'HTTP2Optional', 'HTTP2Preferred', 'None'] as const;
export type AlpnPolicy = (typeof ALPN_POLICIES)[number];

/** One subnet of a load balancer, with the Elastic IP (internet-facing) or private address (internal) it uses there. */
export interface SubnetMapping {
  subnetId: string;
  allocationId?: string;
  privateIPv4Address?: string;
}

export interface LoadBalancer {
  arn: string;
  name: string;
  dnsName: string;
  scheme: LoadBalancerScheme;
  /** `network` for the load balancers this project makes; others are never touched. */
  type: string;
  ipAddressType: LoadBalancerIpAddressType;
  state: LoadBalancerStateCode;
  stateReason?: string;
  vpcId?: string;
  /** One entry per zone the load balancer is in. */
  subnets: (SubnetMapping & { zoneName?: string })[];
  securityGroups: string[];
}

export interface CreateLoadBalancerInput {
  name: string;
  scheme: LoadBalancerScheme;
  subnetMappings: SubnetMapping[];
  /**
   * A Network Load Balancer created without security groups can never get any, so the controller always
   * passes at least one. https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
   */
  securityGroups: string[];
  /** Default `ipv4`. */
  ipAddressType?: LoadBalancerIpAddressType;
  tags: Record<string, string>;
}

export interface Listener {
  arn: string;
  loadBalancerArn: string;
  port: number;
  protocol: ListenerProtocol;
  /** The default certificate only: DescribeListeners does not list the extra (SNI) ones. */
  certificateArns: string[];
  sslPolicy?: string;
  /** TLS only; undefined when AWS reports none. */
  alpnPolicy?: AlpnPolicy;
  /** The target group of the single `forward` default action; undefined for any other action. */
  targetGroupArn?: string;
}

export interface ListenerSpec {
  port: number;
  protocol: ListenerProtocol;
  /** TLS only: the default certificate. */
  certificateArn?: string;
  /** TLS only; undefined leaves AWS's default policy. */
  sslPolicy?: string;
  /** TLS only; undefined sends none (AWS keeps `None`). */
  alpnPolicy?: AlpnPolicy;
  targetGroupArn: string;
}

/** One certificate of a TLS listener, as DescribeListenerCertificates states it. */
export interface ListenerCertificate {
  certificateArn: string;
  /** The listener's default certificate (the one in the listener itself). */
  isDefault: boolean;
}

export interface HealthCheck {
  protocol: HealthCheckProtocol;
  /** `traffic-port` or a port number as a string, as AWS states it. */
  port: string;
  /** HTTP and HTTPS only. */
  path?: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
}

export interface TargetGroup {
  arn: string;
  name: string;
  protocol: TargetGroupProtocol;
  port: number;
  targetType: TargetType;
  ipAddressType: TargetGroupIpAddressType;
  vpcId?: string;
  healthCheck: HealthCheck;
  /** The load balancers whose listeners forward to it (a Network Load Balancer target group has at most one). */
  loadBalancerArns: string[];
}

export interface CreateTargetGroupInput {
  name: string;
  protocol: TargetGroupProtocol;
  port: number;
  targetType: TargetType;
  /** Default `ipv4`; `ipv6` only with IP targets. */
  ipAddressType?: TargetGroupIpAddressType;
  vpcId: string;
  healthCheck: HealthCheck;
  tags: Record<string, string>;
}

/** An instance ID or an IP address, and the port traffic goes to on it. */
export interface Target {
  id: string;
  port: number;
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetHealth.html */
export type TargetHealthState =
  | 'initial'
  | 'healthy'
  | 'unhealthy'
  | 'unhealthy.draining'
  | 'unused'
  | 'draining'
  | 'unavailable';

export interface TargetHealth {
  target: Target;
  state: TargetHealthState;
  reason?: string;
}

export interface Elbv2Port {
  /** The load balancer of that name, or undefined (LoadBalancerNotFound). */
  findLoadBalancer(name: string): Promise<LoadBalancer | undefined>;
  /** Every load balancer of the region, all pages: the garbage collector's inventory. */
  listLoadBalancers(): Promise<LoadBalancer[]>;
  /** A `network` load balancer. `'name-taken'`: the name is in use with other settings (DuplicateLoadBalancerName). */
  createLoadBalancer(input: CreateLoadBalancerInput): Promise<LoadBalancer | 'name-taken'>;
  /** Also deletes its listeners. AWS answers success for a load balancer that is already gone. */
  deleteLoadBalancer(arn: string): Promise<void>;
  setSecurityGroups(arn: string, securityGroups: readonly string[]): Promise<void>;
  /**
   * The complete new set. A Network Load Balancer can gain and lose zones, but a zone's subnet or address
   * cannot change in one call: the zone is removed first (which takes up to minutes), then added again.
   */
  setSubnets(arn: string, subnetMappings: readonly SubnetMapping[]): Promise<void>;
  setIpAddressType(arn: string, ipAddressType: LoadBalancerIpAddressType): Promise<void>;
  /** Every attribute, as AWS states them (strings). */
  describeLoadBalancerAttributes(arn: string): Promise<Record<string, string>>;
  modifyLoadBalancerAttributes(arn: string, attributes: Readonly<Record<string, string>>): Promise<void>;

  describeListeners(loadBalancerArn: string): Promise<Listener[]>;
  /**
   * Tagged on create (the ownership tags, so IAM can confine later listener writes to listeners we own);
   * no tags leaves it untagged, as listeners of earlier versions were.
   */
  createListener(
    loadBalancerArn: string,
    spec: ListenerSpec,
    tags: Readonly<Record<string, string>>,
  ): Promise<Listener>;
  modifyListener(listenerArn: string, spec: ListenerSpec): Promise<void>;
  /** `not-found`: someone deleted it first, which is what was wanted. */
  deleteListener(listenerArn: string): Promise<'deleted' | 'not-found'>;
  /** Every certificate of a TLS listener, the default one included (all pages). */
  describeListenerCertificates(listenerArn: string): Promise<ListenerCertificate[]>;
  /** Extra (SNI) certificates; the default one is set with the listener. */
  addListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void>;
  removeListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void>;
  /** Every listener attribute, as AWS states them (`tcp.idle_timeout.seconds` on TCP listeners). */
  describeListenerAttributes(listenerArn: string): Promise<Record<string, string>>;
  modifyListenerAttributes(listenerArn: string, attributes: Readonly<Record<string, string>>): Promise<void>;

  /** Target groups by name; names AWS does not know are absent from the answer. */
  findTargetGroups(names: readonly string[]): Promise<TargetGroup[]>;
  /** The target groups a load balancer's listeners forward to. */
  describeTargetGroupsOfLoadBalancer(loadBalancerArn: string): Promise<TargetGroup[]>;
  /** Every target group of the region, all pages. */
  listTargetGroups(): Promise<TargetGroup[]>;
  /** `'name-taken'`: the name is in use with other settings (DuplicateTargetGroupName). */
  createTargetGroup(input: CreateTargetGroupInput): Promise<TargetGroup | 'name-taken'>;
  modifyTargetGroupHealthCheck(arn: string, healthCheck: HealthCheck): Promise<void>;
  /** ResourceInUse (a listener still forwards to it) is a retryable error; `not-found` is success. */
  deleteTargetGroup(arn: string): Promise<'deleted' | 'not-found'>;
  describeTargetGroupAttributes(arn: string): Promise<Record<string, string>>;
  modifyTargetGroupAttributes(arn: string, attributes: Readonly<Record<string, string>>): Promise<void>;

  /** Every registered target, draining ones included. */
  describeTargetHealth(targetGroupArn: string): Promise<TargetHealth[]>;
  registerTargets(targetGroupArn: string, targets: readonly Target[]): Promise<void>;
  deregisterTargets(targetGroupArn: string, targets: readonly Target[]): Promise<void>;

  /** Tags of load balancers, target groups and listeners, by ARN; ARNs AWS does not know are absent. */
  describeTags(arns: readonly string[]): Promise<Map<string, Record<string, string>>>;
  addTags(arn: string, tags: Readonly<Record<string, string>>): Promise<void>;
  removeTags(arn: string, keys: readonly string[]): Promise<void>;
}

/** DescribeTags takes at most 20 ARNs; DescribeLoadBalancers / DescribeTargetGroups pages hold at most 400. */
export const TAGS_ARNS_PER_CALL = 20;
export const ELBV2_PAGE_SIZE = 400;
/** DescribeTargetGroups accepts at most 20 names per call. */
export const TARGET_GROUP_NAMES_PER_CALL = 20;

/**
 * Load balancer and target group names: 1-32 letters, digits and hyphens, no hyphen first or last, and a
 * load balancer name must not begin with `internal-`.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
 */
export const ELB_NAME_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$/;
export const ELB_NAME_MAX = 32;

export function isValidElbName(name: string): boolean {
  return ELB_NAME_PATTERN.test(name) && !name.toLowerCase().startsWith('internal-');
}
