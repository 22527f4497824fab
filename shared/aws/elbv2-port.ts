/**
 * Elastic Load Balancing v2 as the controllers need it (Network Load Balancers for Services; Application Load
 * Balancers, their HTTP/HTTPS listeners and listener rules for Ingresses): shaped for the caller. Callers never page, never chunk, and never see AWS's "not found" errors for lookups: a missing
 * load balancer or target group is simply absent. Create calls follow AWS's documented idempotency (the
 * same name with the same settings answers the existing resource); the same name with other settings is
 * an explicit `'name-taken'` answer, never an exception, because the caller must decide whose name it is.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
 */

export type LoadBalancerScheme = 'internet-facing' | 'internal';

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancerState.html */
export type LoadBalancerStateCode = 'provisioning' | 'active' | 'active_impaired' | 'failed';

/** TCP, UDP, TCP_UDP and TLS on Network Load Balancers; HTTP and HTTPS on Application Load Balancers. */
export type ListenerProtocol = 'TCP' | 'UDP' | 'TCP_UDP' | 'TLS' | 'HTTP' | 'HTTPS';
export type TargetGroupProtocol = 'TCP' | 'UDP' | 'TCP_UDP' | 'TLS' | 'HTTP' | 'HTTPS';
/**
 * How an Application Load Balancer speaks to the targets of an HTTP or HTTPS target group (default HTTP1).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-target-groups.html#target-group-protocol-version
 */
export type TargetGroupProtocolVersion = 'HTTP1' | 'HTTP2' | 'GRPC';
/** `network` (the default of this port) or `application`. */
export type LoadBalancerType = 'network' | 'application';
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
  /** `network` (Services) or `application` (Ingresses); load balancers of other types are never touched. */
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
  /**
   * Default `network`. An `application` load balancer needs subnets in at least two zones and takes no Elastic IP
   * or private address; created without security groups it gets the VPC's default group.
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
   */
  type?: LoadBalancerType;
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
  /** HTTP and HTTPS listeners only: the default actions, in AWS's normal form (see RuleAction). */
  defaultActions?: RuleAction[];
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

/**
 * A listener of an Application Load Balancer. HTTPS needs the default certificate; `sslPolicy` undefined leaves
 * AWS's default policy. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateListener.html
 */
export interface ApplicationListenerSpec {
  port: number;
  protocol: 'HTTP' | 'HTTPS';
  certificateArn?: string;
  sslPolicy?: string;
  /** The default rule's actions: one forward, fixed-response or redirect. */
  defaultActions: RuleAction[];
}

/**
 * A condition of a listener rule; `values` match as AWS documents: `host-header` case-insensitive with `*` and `?`,
 * `path-pattern` case-sensitive with `*` and `?` (the path only, not the query), `http-header` values
 * case-insensitive with wildcards, `http-request-method` exact, `query-string` pairs (a missing key matches any
 * key) case-insensitive with wildcards, `source-ip` CIDR blocks. Within one condition any value matches; all
 * conditions of a rule must match.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-condition-types.html
 */
export type RuleCondition =
  | {
      field: 'host-header' | 'path-pattern' | 'http-request-method' | 'source-ip';
      values: string[];
      /** `host-header`, `path-pattern` (and `http-header`): regular expressions, sent as `RegexValues` instead. */
      regexValues?: string[];
    }
  | { field: 'http-header'; headerName: string; values: string[]; regexValues?: string[] }
  | { field: 'query-string'; values: QueryStringPair[] };

export interface QueryStringPair {
  key?: string;
  value: string;
}

/** One target group of a forward action and its weight (0-999; AWS states 1 when none was given). */
export interface WeightedTargetGroup {
  arn: string;
  weight: number;
}

/**
 * An action of a listener rule or a listener's default rule, in the normal form AWS answers it: a forward lists
 * its groups with weights and its stickiness (off unless enabled); a redirect states every component
 * (`#{host}`, `#{path}`... for those kept from the request).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Action.html
 */
export type RuleAction =
  | {
      type: 'forward';
      targetGroups: WeightedTargetGroup[];
      /** Group-level stickiness: a weighted forward keeps a client on one group for `durationSeconds` (1-604800). */
      stickiness: { enabled: boolean; durationSeconds?: number };
    }
  | { type: 'fixed-response'; statusCode: string; contentType?: string; messageBody?: string }
  | {
      type: 'redirect';
      statusCode: 'HTTP_301' | 'HTTP_302';
      protocol: string;
      host: string;
      port: string;
      path: string;
      query: string;
    };

/** A listener rule; the default rule has priority `default`, no conditions, and the listener's default actions. */
export interface Rule {
  arn: string;
  priority: number | 'default';
  isDefault: boolean;
  conditions: RuleCondition[];
  actions: RuleAction[];
}

export interface RuleSpec {
  /** 1-50000, unique on the listener (PriorityInUse). */
  priority: number;
  conditions: RuleCondition[];
  actions: RuleAction[];
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
  /**
   * HTTP and HTTPS target groups (Application Load Balancers) only: the codes a healthy target answers, HTTP codes
   * (`200`, `200-299`, `200,202`) or, for GRPC groups, gRPC codes (`12`). Left out, AWS's default.
   */
  matcher?: { httpCode?: string; grpcCode?: string };
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
  /** HTTP and HTTPS target groups only. */
  protocolVersion?: TargetGroupProtocolVersion;
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
  /** HTTP and HTTPS only; default HTTP1. */
  protocolVersion?: TargetGroupProtocolVersion;
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
  /** ELB's words for the reason (`Target registration is in progress`), when it gives some. */
  description?: string;
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
  /** An HTTP or HTTPS listener of an Application Load Balancer, tagged on create as createListener. */
  createApplicationListener(
    loadBalancerArn: string,
    spec: ApplicationListenerSpec,
    tags: Readonly<Record<string, string>>,
  ): Promise<Listener>;
  modifyApplicationListener(listenerArn: string, spec: ApplicationListenerSpec): Promise<void>;
  /** Every certificate of a TLS listener, the default one included (all pages). */
  describeListenerCertificates(listenerArn: string): Promise<ListenerCertificate[]>;
  /** Extra (SNI) certificates; the default one is set with the listener. */
  addListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void>;
  removeListenerCertificates(listenerArn: string, certificateArns: readonly string[]): Promise<void>;
  /** Every listener attribute, as AWS states them (`tcp.idle_timeout.seconds` on TCP listeners). */
  describeListenerAttributes(listenerArn: string): Promise<Record<string, string>>;
  modifyListenerAttributes(listenerArn: string, attributes: Readonly<Record<string, string>>): Promise<void>;

  /**
   * The rules of a listener in priority order, the default rule last (all pages).
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeRules.html
   */
  describeRules(listenerArn: string): Promise<Rule[]>;
  /** Tagged on create as listeners are (none: untagged). PriorityInUse, TooManyRules... are terminal errors. */
  createRule(listenerArn: string, spec: RuleSpec, tags: Readonly<Record<string, string>>): Promise<Rule>;
  /**
   * Replaces the rule's conditions and actions (its priority moves with setRulePriorities). The default rule takes
   * actions only: `conditions: []` sends none.
   */
  modifyRule(ruleArn: string, change: Omit<RuleSpec, 'priority'>): Promise<Rule>;
  /** `not-found`: someone deleted it first, which is what was wanted. */
  deleteRule(ruleArn: string): Promise<'deleted' | 'not-found'>;
  /**
   * One call: AWS checks the priorities "in the new order", so rules may trade priorities in one call (moto does
   * not: docs/emulator-differences.md `elbv2.rule-priorities-swap`).
   * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetRulePriorities.html
   */
  setRulePriorities(priorities: readonly { ruleArn: string; priority: number }[]): Promise<void>;

  /** Target groups by name; names AWS does not know are absent from the answer. */
  findTargetGroups(names: readonly string[]): Promise<TargetGroup[]>;
  /** Target groups by ARN; ARNs AWS does not know are absent from the answer. */
  describeTargetGroupsByArn(arns: readonly string[]): Promise<TargetGroup[]>;
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

  /** Tags of load balancers, target groups, listeners and rules, by ARN; ARNs AWS does not know are absent. */
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

/**
 * Listener rule limits of an Application Load Balancer: priorities 1-50000; 100 rules per load balancer (default
 * rules not counted); per rule at most 5 condition values, 5 wildcards, and 3 values in one condition; 5 target
 * groups per forward action.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/rule-condition-types.html
 */
export const RULE_LIMITS = {
  minPriority: 1,
  maxPriority: 50_000,
  rulesPerLoadBalancer: 100,
  conditionValuesPerRule: 5,
  wildcardsPerRule: 5,
  valuesPerCondition: 3,
  targetGroupsPerAction: 5,
} as const;

export function isValidElbName(name: string): boolean {
  return ELB_NAME_PATTERN.test(name) && !name.toLowerCase().startsWith('internal-');
}
