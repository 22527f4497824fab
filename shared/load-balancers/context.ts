import type { AvailabilityZone, Ec2LoadBalancerNetworkPort, Instance, SecurityGroup } from '../aws/ec2-port.ts';
import type { Elbv2Port, Target } from '../aws/elbv2-port.ts';
import type { EndpointSlice, Node } from '../k8s/types.ts';
import type { MetricsPort } from '../observability/metrics.ts';
import type { DesiredTargetGroup } from './model.ts';
import type { PortRange } from './security-rules.ts';

/**
 * What the resource modules of this folder need from the front end that calls them (a Service's load balancer
 * today; an Ingress's or a TargetGroupBinding's later), and nothing more: the AWS ports, where the resources go,
 * whose they are, the reads a batch shares, and how to speak about what happened. A front end adapts its own pass
 * to it (functions/service/context.ts for Services), so these modules never know what kind of Kubernetes object
 * asked for the load balancer, nor how that object names its settings or words its Events.
 */

/** The ports writes go through: a front end's may record them (its Events, its metrics), or be the raw ones. */
export interface AwsPorts {
  ec2: Ec2LoadBalancerNetworkPort;
  elbv2: Elbv2Port;
}

/** The tag that says whose a resource is, with the cluster tag `owned`: `kubernetes.io/service-name` for a Service. */
export interface OwnerTag {
  key: string;
  value: string;
}

/**
 * Reads every load balancer of one batch shares, each made once on first use (functions/service/batch.ts): the
 * Nodes, their instances, the security groups of their primary interfaces, the VPC's zones.
 */
export interface SharedReads {
  nodes(): Promise<Node[]>;
  instances(): Promise<Map<string, Instance>>;
  nodeSecurityGroups(): Promise<SecurityGroup[]>;
  zones(): Promise<AvailabilityZone[]>;
}

/**
 * How the front end's user names each setting the modules may have to complain about (a Service: its
 * annotations), so that a problem's wording points at what the user wrote.
 */
export interface SettingNames {
  subnets: string;
  ipAddressType: string;
  eipAllocations: string;
  privateIpv4Addresses: string;
  securityGroups: string;
  extraSecurityGroups: string;
}

/** The model's own names, for a caller that gives none (pure plans called from tests). */
export const MODEL_SETTING_NAMES: SettingNames = {
  subnets: 'subnets',
  ipAddressType: 'ipAddressType',
  eipAllocations: 'eipAllocations',
  privateIpv4Addresses: 'privateIpv4Addresses',
  securityGroups: 'securityGroups',
  extraSecurityGroups: 'extraSecurityGroups',
};

/**
 * A setting the user got wrong: `annotation` is where they wrote it (a Service's or an Ingress's annotation, or a
 * spec field), as the front end names it (`SettingNames`).
 */
export interface SettingProblem {
  annotation: string;
  message: string;
}

/** A change worth telling the owner's user about, which the front end words (a Service: an Event). */
export type ResourceChange = {
  kind: 'target-group-replaced';
  listenerPort: number;
  from: string;
  to: string;
  /** What AWS cannot change in place, and so made a new target group. */
  differences: { what: 'protocol' | 'target type' | 'address family'; from: string; to: string }[];
};

export interface LoadBalancerContext extends AwsPorts {
  clusterName: string;
  /** The VPC the load balancers, target groups and security groups go in. */
  vpcId: string;
  /** kube-apiserver's `--service-node-port-range`; 30000-32767 when unset. */
  nodePortRange?: PortRange;
  /** Whose the resources are: only those carrying this tag (and the cluster's `owned`) are changed or deleted. */
  owner: OwnerTag;
  reads: SharedReads;
  /** The EndpointSlices of a Service (IP targets). */
  endpointSlices(namespace: string, serviceName: string): Promise<EndpointSlice[]>;
  /**
   * IP targets of one target group beyond its ready endpoints: the Pods held back only by the readiness gate of the
   * group's stack binding (gated-targets.ts), whose target's health is what meets the gate. Every pass that works
   * out a group's targets (`desiredTargets`) asks it, so none deregisters what another registered. Absent: none.
   */
  gateWaitingTargets?(group: DesiredTargetGroup, slices: readonly EndpointSlice[]): Promise<Target[]>;
  metrics: MetricsPort;
  settings: SettingNames;
  /** The error to throw for what the user asked for and cannot be built: retrying will not help until they change it. */
  userError(message: string): Error;
  /** Says a change on the owner. */
  announce(change: ResourceChange): Promise<void>;
}
