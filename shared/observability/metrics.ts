/**
 * Metric names every component shares, so dashboards and alarms are written once.
 * Emitted as CloudWatch EMF by Powertools in Lambda; kept in memory by RecordingMetrics in tests.
 */
export const MetricName = {
  Reconciles: 'Reconciles',
  ReconcileErrors: 'ReconcileErrors',
  ReconcileDuration: 'ReconcileDuration',
  Requeues: 'Requeues',
  MalformedMessages: 'MalformedMessages',
  CoalescedMessages: 'CoalescedMessages',
  TerminalErrors: 'TerminalErrors',
  AwsCalls: 'AwsCalls',
  AwsThrottles: 'AwsThrottles',
  NodesInitialized: 'NodesInitialized',
  NodeAddressesUpdated: 'NodeAddressesUpdated',
  NodesDeleted: 'NodesDeleted',
  NodesTainted: 'NodesTainted',
  NodesUntainted: 'NodesUntainted',
  RoutesCreated: 'RoutesCreated',
  RoutesReplaced: 'RoutesReplaced',
  /** Dimension `reason`: `blackhole` or `orphan` (no Node claims the pod CIDR any more). */
  RoutesDeleted: 'RoutesDeleted',
  /** A Node's route could not be created or replaced (dimension `reason`). */
  RouteFailures: 'RouteFailures',
  SourceDestChecksDisabled: 'SourceDestChecksDisabled',
  /** Routes the route table holds after a pass, against the quota: the value to graph. */
  RouteTableRoutes: 'RouteTableRoutes',
  /** 1 per pass that ends with the route table at or above the warning level: the value to alarm on. */
  RouteTableNearLimit: 'RouteTableNearLimit',
  /** A Network Load Balancer created (dimension `reason`: `new` or `replaced`). */
  LoadBalancersCreated: 'LoadBalancersCreated',
  LoadBalancersDeleted: 'LoadBalancersDeleted',
  /** A pass that changed a load balancer's configuration (listeners, target groups, groups, attributes, subnets). */
  LoadBalancersUpdated: 'LoadBalancersUpdated',
  /**
   * Targets named in RegisterTargets / RegisterInstancesWithLoadBalancer calls: the new ones, except in a pass of
   * Nodes that only joined, which names every wanted target (registered again, idempotently, to save the read).
   */
  TargetsRegistered: 'TargetsRegistered',
  /**
   * Targets named in DeregisterTargets / DeregisterInstancesFromLoadBalancer calls: the registered ones no longer
   * wanted, except in a pass of Nodes that only left, which names every listed Node's instance no longer wanted
   * (whether registered or not, to save the read).
   */
  TargetsDeregistered: 'TargetsDeregistered',
  /** A Service whose load balancer could not be synced (dimension `reason`: an AWS error code or `InvalidAnnotation`). */
  LoadBalancerSyncFailures: 'LoadBalancerSyncFailures',
  /** A delete pass that must wait (dimension `reason`: `DependencyViolation`, `ResourceInUse`). */
  LoadBalancerCleanupPending: 'LoadBalancerCleanupPending',
  /** Resources the garbage collector removed (dimension `resource`: `LoadBalancer`, `TargetGroup`, `SecurityGroup`, `SecurityGroupRule`). */
  LoadBalancerGarbageCollected: 'LoadBalancerGarbageCollected',
  /** A pass tried again shortly because a security group or target group just made is not visible yet (dimension `reason`: the AWS code). */
  FreshResourceNotVisible: 'FreshResourceNotVisible',
  /** Interruption notices the EC2 events router put on the interruption queue (shared/queue/interruption.ts). */
  InterruptionNoticesSent: 'InterruptionNoticesSent',
  /** A Node marked for an interruption notice (dimension `kind`). */
  Interruptions: 'Interruptions',
  /** Pods evicted while draining a Node. */
  PodsEvicted: 'PodsEvicted',
  /** Evictions a PodDisruptionBudget refused for now (429): tried again on the next pass. */
  PdbWaits: 'PdbWaits',
  /** Seconds from the notice to the Node drained (dimension `kind`), or to the deadline when it was not. */
  DrainSeconds: 'DrainSeconds',
  /** Drains the deadline cut short, Pods still on the Node. */
  DrainTimeouts: 'DrainTimeouts',
  /** A Service left to someone else (dimension `reason`: `classic`, `other-controller`, `other-class`). */
  ServicesSkipped: 'ServicesSkipped',
  /** IPAM: addresses EC2 gave a Node's pool (a prefix counts 16). */
  IpamAddressesAllocated: 'IpamAddressesAllocated',
  /** IPAM: addresses given back to the subnet (a prefix counts 16). */
  IpamAddressesReleased: 'IpamAddressesReleased',
  /** IPAM: Pods annotated with an address. */
  IpamAddressesAssigned: 'IpamAddressesAssigned',
  /** IPAM, per pass: addresses of the Node's pool held by Pods (the value to graph). */
  IpamAddressesInUse: 'IpamAddressesInUse',
  /** IPAM, per pass: addresses ready to hand out. */
  IpamAddressesFree: 'IpamAddressesFree',
  /** IPAM, per pass: released addresses still in their cooldown. */
  IpamAddressesCooling: 'IpamAddressesCooling',
  /** IPAM, per pass: the pool size the warm-pool settings ask for. */
  IpamWarmTarget: 'IpamWarmTarget',
  /** IPAM: an allocation refused because the subnet has no free address or /28 block. */
  IpamSubnetExhausted: 'IpamSubnetExhausted',
  /** IPAM: input it could not use (dimension `input`: `ConfigMap` for a setting, `PodAnnotation` for an address). */
  IpamInvalidInput: 'IpamInvalidInput',
  /** IPAM: network interfaces of ours deleted after being seen available on two sweeps. */
  IpamInterfacesDeleted: 'IpamInterfacesDeleted',
  Ec2Events: 'Ec2Events',
  UnknownInstanceEvents: 'UnknownInstanceEvents',
  KeysSent: 'KeysSent',
  /** A resync round whose node sweep failed (throttled...) and sent every Node key instead. */
  NodeSweepFallbacks: 'NodeSweepFallbacks',
  KeySendFailures: 'KeySendFailures',
} as const;
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

export type Dimensions = Record<string, string>;

export interface MetricsPort {
  count(name: MetricName, dimensions?: Dimensions, value?: number): void;
  /** A duration in milliseconds. */
  timing(name: MetricName, milliseconds: number, dimensions?: Dimensions): void;
}

interface Entry {
  name: MetricName;
  value: number;
  dimensions: Dimensions;
}

export class RecordingMetrics implements MetricsPort {
  readonly entries: Entry[] = [];
  count(name: MetricName, dimensions: Dimensions = {}, value = 1) {
    this.entries.push({ name, value, dimensions });
  }
  timing(name: MetricName, milliseconds: number, dimensions: Dimensions = {}) {
    this.entries.push({ name, value: milliseconds, dimensions });
  }
  /** Sum of `name` over entries whose dimensions include every pair in `where`. */
  total(name: MetricName, where: Dimensions = {}): number {
    return this.entries
      .filter((e) => e.name === name && Object.entries(where).every(([k, v]) => e.dimensions[k] === v))
      .reduce((sum, e) => sum + e.value, 0);
  }
  reset() {
    this.entries.length = 0;
  }
}
