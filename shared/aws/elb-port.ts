/**
 * Classic Load Balancers (Elastic Load Balancing, API version 2012-06-01) as the service controller needs
 * them: shaped for the caller, which never pages, never chunks and never sees "not found" for a lookup (a
 * load balancer that does not exist is absent). Classic load balancers are named, not addressed by ARN: every
 * call takes the name.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/Welcome.html
 */

export type ClassicProtocol = 'TCP' | 'SSL' | 'HTTP' | 'HTTPS';

export interface ClassicListener {
  loadBalancerPort: number;
  protocol: ClassicProtocol;
  instancePort: number;
  instanceProtocol: ClassicProtocol;
  /** SSL and HTTPS front ends: the certificate ARN. */
  sslCertificateId?: string;
}

/** `target` is `<PROTOCOL>:<port>[/<path>]`, e.g. `TCP:30080` or `HTTP:32000/healthz`. */
export interface ClassicHealthCheck {
  target: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
}

export interface ClassicLoadBalancer {
  name: string;
  dnsName: string;
  scheme: 'internet-facing' | 'internal';
  vpcId?: string;
  subnets: string[];
  securityGroups: string[];
  /** Each listener with the policies of its front end (SSL negotiation). */
  listeners: (ClassicListener & { policyNames: string[] })[];
  healthCheck: ClassicHealthCheck;
  instanceIds: string[];
  /** Policies of the back ends, by instance port (proxy protocol). */
  backendPolicies: { instancePort: number; policyNames: string[] }[];
}

/** https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_InstanceState.html */
export interface ClassicInstanceHealth {
  instanceId: string;
  state: 'InService' | 'OutOfService' | 'Unknown';
}

export interface ClassicAttributes {
  crossZone: boolean;
  idleTimeoutSeconds: number;
  connectionDraining: { enabled: boolean; timeoutSeconds: number };
  accessLog: { enabled: boolean; s3BucketName?: string; s3BucketPrefix?: string; emitIntervalMinutes?: number };
}

export interface ClassicPolicy {
  policyName: string;
  policyTypeName: string;
  attributes: Record<string, string>;
}

export interface CreateClassicLoadBalancerInput {
  name: string;
  scheme: 'internet-facing' | 'internal';
  subnets: string[];
  securityGroups: string[];
  listeners: ClassicListener[];
  /** Tagged on create: nothing exists untagged, even for a moment. */
  tags: Record<string, string>;
}

export interface ElbPort {
  /** The load balancer of that name, or undefined (LoadBalancerNotFound). */
  findLoadBalancer(name: string): Promise<ClassicLoadBalancer | undefined>;
  /** Every Classic load balancer of the region, all pages: the garbage collector's inventory. */
  listLoadBalancers(): Promise<ClassicLoadBalancer[]>;
  /**
   * Creates it, or answers the existing one's DNS name when one of that name exists with the same
   * listeners (AWS's idempotency); `'name-taken'` when it exists with others (DuplicateLoadBalancerName).
   */
  createLoadBalancer(input: CreateClassicLoadBalancerInput): Promise<{ dnsName: string } | 'name-taken'>;
  /** Success when it is already gone. */
  deleteLoadBalancer(name: string): Promise<void>;
  createListeners(name: string, listeners: readonly ClassicListener[]): Promise<void>;
  deleteListeners(name: string, loadBalancerPorts: readonly number[]): Promise<void>;
  attachSubnets(name: string, subnets: readonly string[]): Promise<void>;
  detachSubnets(name: string, subnets: readonly string[]): Promise<void>;
  applySecurityGroups(name: string, securityGroups: readonly string[]): Promise<void>;
  configureHealthCheck(name: string, healthCheck: ClassicHealthCheck): Promise<void>;
  describeAttributes(name: string): Promise<ClassicAttributes>;
  modifyAttributes(name: string, attributes: ClassicAttributes): Promise<void>;
  registerInstances(name: string, instanceIds: readonly string[]): Promise<void>;
  deregisterInstances(name: string, instanceIds: readonly string[]): Promise<void>;
  /** Health of every registered instance (DescribeInstanceHealth): a successor serves once one is InService. */
  describeInstanceHealth(name: string): Promise<ClassicInstanceHealth[]>;
  /** Tags by load balancer name; names AWS does not know are absent (DescribeTags takes 20 names a call). */
  describeTags(names: readonly string[]): Promise<Map<string, Record<string, string>>>;
  addTags(name: string, tags: Readonly<Record<string, string>>): Promise<void>;
  removeTags(name: string, keys: readonly string[]): Promise<void>;
  /** The load balancer's own policies (not AWS's sample policies). */
  describePolicies(name: string): Promise<ClassicPolicy[]>;
  /** Success when a policy of that name exists already. */
  createPolicy(name: string, policy: ClassicPolicy): Promise<void>;
  /** Replaces the policies of a back end (instance port); empty removes them. */
  setBackendPolicies(name: string, instancePort: number, policyNames: readonly string[]): Promise<void>;
  /** Replaces the policies of a listener (load balancer port); empty removes them. */
  setListenerPolicies(name: string, loadBalancerPort: number, policyNames: readonly string[]): Promise<void>;
  deletePolicy(name: string, policyName: string): Promise<void>;
}

/** DescribeTags takes at most 20 load balancer names; DescribeLoadBalancers pages hold at most 400. */
export const CLASSIC_TAGS_NAMES_PER_CALL = 20;
export const CLASSIC_PAGE_SIZE = 400;
