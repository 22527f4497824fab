import type { SecurityGroupRule } from '../aws/ec2-port.ts';
import type {
  AlpnPolicy,
  HealthCheck,
  ListenerProtocol,
  TargetGroupIpAddressType,
  TargetGroupProtocol,
  TargetType,
} from '../aws/elbv2-port.ts';
import type { ServicePortSpec } from '../k8s/types.ts';

/**
 * The desired state the resource modules apply: pure values a front end builds from its Kubernetes object
 * (functions/service/model/spec.ts builds them from a Service and its annotations) before anything is read
 * from AWS. Each module takes the narrowest part of it it needs.
 */

/** Who a load balancer is for: the cluster, and the namespace and name of the object that asked for it. */
export interface OwnerIdentity {
  clusterName: string;
  namespace: string;
  name: string;
}

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
  /** Every attribute kept in line: the owner's, and AWS's defaults for the ones it does not set. */
  attributes: Record<string, string>;
  /** The Service port(s) behind it: two for TCP_UDP (one TCP, one UDP entry on the same port number). */
  servicePorts: ServicePortSpec[];
  /** Its own tags over the model's (a tracking tag naming this resource, as the AWS Load Balancer Controller's). */
  tags?: Record<string, string>;
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
  /** Listener attributes kept in line (TCP: the idle timeout, AWS's 350 s unless the owner sets one). */
  attributes: Record<string, string>;
  targetGroupName: string;
  /** Its own tags over the model's. */
  tags?: Record<string, string>;
}

/** What every kind of load balancer is made from: who it is for, its name, groups, tags and reach. */
export interface LoadBalancerModel {
  identity: OwnerIdentity;
  loadBalancerName: string;
  securityGroupName: string;
  scheme: 'internet-facing' | 'internal';
  /** Every resource's tags: ownership, the owner, the user's additional tags. */
  tags: Record<string, string>;
  /** Tag keys another tool manages (SERVICE_EXTERNAL_MANAGED_TAGS): never removed. */
  externalManagedTags: string[];
  /** The user's groups, used instead of a managed group and never modified. IDs or names. */
  userSecurityGroups?: string[];
  extraSecurityGroups: string[];
  /** Inbound rules of the managed group: listener ports from the source ranges, and ICMP for path MTU discovery. */
  managedIngress: SecurityGroupRule[];
  /** Where clients may connect from. */
  sourceRanges: string[];
  requestedSubnets?: string[];
  targetNodeLabels?: Record<string, string | undefined>;
}

/** An Elastic Load Balancing v2 load balancer: its listeners, each forwarding to one target group. */
export interface Elbv2LoadBalancerModel extends LoadBalancerModel {
  ipAddressType: 'ipv4' | 'dualstack';
  targetType: TargetType;
  listeners: DesiredListener[];
  targetGroups: DesiredTargetGroup[];
  /**
   * Load balancer attributes kept in line: the owner's, and AWS's defaults for the switches it does not set
   * (so removing a setting turns it off again). Attributes outside both are left as they are.
   */
  attributes: Record<string, string>;
  eipAllocations?: string[];
  privateIpv4Addresses?: string[];
}
