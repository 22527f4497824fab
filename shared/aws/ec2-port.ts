/**
 * EC2 as the reconcilers need it: shaped for the caller, not for the SDK. Callers never page,
 * never chunk and never see a whole batch fail because one ID in it is unknown.
 */
export type InstanceState = 'pending' | 'running' | 'shutting-down' | 'terminated' | 'stopping' | 'stopped';

export const LIVE_INSTANCE_STATES: readonly InstanceState[] = [
  'pending',
  'running',
  'shutting-down',
  'stopping',
  'stopped',
];

export interface NetworkInterface {
  networkInterfaceId: string;
  deviceIndex: number;
  /** `in-use` for an attached interface; others are skipped when building addresses. */
  status: string;
  subnetId?: string;
  /** In the order EC2 lists them; the primary address first. */
  privateIpAddresses: { address: string; primary: boolean; privateDnsName?: string }[];
  ipv6Addresses: string[];
  /** Per interface: an instance with several ENIs has its check set on each one (the primary's is the instance's). */
  sourceDestCheck?: boolean;
  /** The security groups of the interface, when EC2 reported them. */
  securityGroupIds?: string[];
}

export interface Instance {
  instanceId: string;
  state: InstanceState;
  instanceType: string;
  availabilityZone: string;
  vpcId?: string;
  subnetId?: string;
  privateDnsName?: string;
  privateIpAddress?: string;
  publicDnsName?: string;
  publicIpAddress?: string;
  sourceDestCheck?: boolean;
  networkInterfaces: NetworkInterface[];
  tags: Record<string, string>;
}

export interface AvailabilityZone {
  zoneName: string;
  zoneId: string;
  zoneType?: string;
}

export interface InstanceTypeInfo {
  instanceType: string;
  maximumNetworkInterfaces: number;
  ipv4AddressesPerInterface: number;
  ipv6AddressesPerInterface: number;
  /** `nitro` or `xen`; EC2 names none for a bare-metal type. Prefix delegation needs Nitro (or bare metal). */
  hypervisor?: string;
  bareMetal?: boolean;
}

/** How EC2 states a route's destination: a CIDR of either family, or a managed prefix list. */
export type RouteDestinationType = 'ipv4' | 'ipv6' | 'prefix-list';

/**
 * `CreateRouteTable` is the VPC's local route, `EnableVgwRoutePropagation` a route propagated by a virtual
 * private gateway, `CreateRoute` one somebody added. `unknown` (an origin this code does not know) is never
 * treated as ours.
 */
export type RouteOrigin = 'CreateRouteTable' | 'CreateRoute' | 'EnableVgwRoutePropagation' | 'unknown';

/** `blackhole`: the target is gone (a terminated instance, a deleted interface or gateway). */
export type RouteState = 'active' | 'blackhole';

/** Where a route sends traffic, as EC2 reports it. A route to an attached ENI names both ENI and instance. */
export interface RouteTarget {
  instanceId?: string;
  networkInterfaceId?: string;
  /** Internet or virtual private gateway, a gateway VPC endpoint, or `local`. */
  gatewayId?: string;
  natGatewayId?: string;
  transitGatewayId?: string;
  vpcPeeringConnectionId?: string;
  egressOnlyInternetGatewayId?: string;
  localGatewayId?: string;
  carrierGatewayId?: string;
  coreNetworkArn?: string;
}

export interface Route {
  /** The CIDR (or prefix list ID) exactly as EC2 prints it. */
  destination: string;
  destinationType: RouteDestinationType;
  target: RouteTarget;
  state: RouteState;
  origin: RouteOrigin;
}

export interface RouteTable {
  routeTableId: string;
  vpcId?: string;
  tags: Record<string, string>;
  routes: Route[];
  /**
   * Which subnets use the table: explicit associations, and `main` for the VPC's main table (used by every
   * subnet without an explicit association). Present when EC2 reported associations.
   */
  associations?: RouteTableAssociation[];
}

export interface RouteTableAssociation {
  subnetId?: string;
  main: boolean;
}

export interface Subnet {
  subnetId: string;
  vpcId: string;
  availabilityZone: string;
  availabilityZoneId?: string;
  cidrBlock?: string;
  /** Associated IPv6 CIDR blocks; a dual-stack load balancer needs one in every subnet. */
  ipv6CidrBlocks?: string[];
  tags: Record<string, string>;
}

/** `-1` is every protocol. For ICMP, `fromPort` is the type and `toPort` the code (-1: all). */
export type IpProtocol = 'tcp' | 'udp' | 'icmp' | 'icmpv6' | '-1';

/**
 * One inbound rule with one source, as EC2 counts rules against the "rules per security group" quota.
 * The description is not part of a rule's identity (EC2 refuses a second rule that differs only in it),
 * but it is how the controller recognises its own rules in groups it does not own.
 */
export interface SecurityGroupRule {
  protocol: IpProtocol;
  fromPort: number;
  toPort: number;
  cidrIpv4?: string;
  cidrIpv6?: string;
  sourceGroupId?: string;
  description?: string;
}

export interface SecurityGroup {
  groupId: string;
  groupName: string;
  vpcId?: string;
  description: string;
  tags: Record<string, string>;
  ingress: SecurityGroupRule[];
}

/** Filters for finding security groups; every given field must match (EC2 ANDs filters). */
export interface SecurityGroupQuery {
  groupIds?: readonly string[];
  vpcId?: string;
  groupNames?: readonly string[];
  /** Tag key -> value; `undefined` value: any value (`tag-key`). */
  tags?: Readonly<Record<string, string | undefined>>;
  /** Groups with an inbound rule whose source is one of these groups (`ip-permission.group-id`). */
  referencingGroupIds?: readonly string[];
}

/**
 * A network interface as the IP address manager reads it (DescribeNetworkInterfaces): its secondary IPv4
 * addresses and /28 prefixes, where it is attached, and its tags (to recognise interfaces we created).
 */
export interface NetworkInterfaceDetail {
  networkInterfaceId: string;
  /** `available` (attached to nothing), `in-use`, `attaching`, `detaching`, `associated`. */
  status: string;
  subnetId: string;
  vpcId?: string;
  availabilityZone?: string;
  /** Present while attached. */
  attachment?: { instanceId?: string; deviceIndex: number; status?: string };
  /** Every private IPv4 address, the primary first (as EC2 lists them). */
  privateIpAddresses: { address: string; primary: boolean }[];
  /** Delegated IPv4 prefixes (`10.0.1.16/28`), in the order EC2 lists them. */
  ipv4Prefixes: string[];
  tags: Record<string, string>;
  /** The security groups of the interface, when EC2 reported them. */
  securityGroupIds?: string[];
}

/** Filters for finding network interfaces; every given field must match (EC2 ANDs filters). */
export interface NetworkInterfaceQuery {
  networkInterfaceIds?: readonly string[];
  vpcId?: string;
  status?: string;
  /** Tag key -> value; `undefined` value: any value (`tag-key`). */
  tags?: Readonly<Record<string, string | undefined>>;
}

/**
 * What AssignPrivateIpAddresses gave: the new addresses (or prefixes), straight from its answer (a describe
 * right after may not show them yet). `subnet-full`: InsufficientFreeAddressesInSubnet or InsufficientCidrBlocks
 * (no free address, or no free aligned /28, left in the subnet). `interface-full`: PrivateIpAddressLimitExceeded
 * (the instance type allows no more addresses on this interface).
 */
export type AssignResult = { addresses: string[]; prefixes: string[] } | 'subnet-full' | 'interface-full';

/** What the controllers point a route at: an instance (one ENI) or a specific network interface. */
export type RouteTargetSpec = { instanceId: string } | { networkInterfaceId: string };

/** The instance and zone reads alone: all the node, lifecycle, resync and interruption functions ask of EC2. */
export interface Ec2InstanceReadPort {
  /**
   * Instances by ID. Malformed and unknown IDs are simply absent from the result (they never fail
   * the others); up to 1000 IDs go in one DescribeInstances call.
   */
  describeInstances(instanceIds: readonly string[]): Promise<Map<string, Instance>>;
  /**
   * Instances whose private DNS name is one of `names`, in one of `states` (default: the live ones, not terminated;
   * EC2 shows a terminated instance for about an hour).
   */
  findInstancesByPrivateDnsName(names: readonly string[], states?: readonly InstanceState[]): Promise<Instance[]>;
  /**
   * Every instance of the cluster, in any state (terminated ones while EC2 still shows them): tagged
   * `kubernetes.io/cluster/<clusterName>` (any value) or with the legacy `KubernetesCluster=<clusterName>`. Pages of
   * 1000, every page: a cluster-wide sweep costs one call per 1000 instances.
   */
  findClusterInstances(clusterName: string): Promise<Instance[]>;
  describeAvailabilityZones(): Promise<AvailabilityZone[]>;
}

/** Subnets and tags on top of the instance reads: what the service function and the IP address manager share. */
export interface Ec2SubnetTagPort extends Ec2InstanceReadPort {
  /** Subnets of a VPC, or those with the given IDs or `Name` tags; unknown IDs and names are simply absent. */
  describeSubnets(query: {
    vpcId?: string;
    subnetIds?: readonly string[];
    names?: readonly string[];
  }): Promise<Subnet[]>;
  /** Add or overwrite tags on EC2 resources. */
  createTags(resourceIds: readonly string[], tags: Readonly<Record<string, string>>): Promise<void>;
  /** Removes these tag keys (whatever their values) from the resources. */
  deleteTags(resourceIds: readonly string[], keys: readonly string[]): Promise<void>;
}

/** What the service function asks of EC2: subnets and tags, route tables and security groups. */
export interface Ec2LoadBalancerNetworkPort extends Ec2SubnetTagPort {
  /** Every route table of a VPC, with its subnet associations (to tell public subnets from private ones). */
  findRouteTablesByVpc(vpcId: string): Promise<RouteTable[]>;

  /** Security groups matching every filter given, all pages; unknown IDs are simply absent. */
  findSecurityGroups(query: SecurityGroupQuery): Promise<SecurityGroup[]>;
  /**
   * A new group, tagged in the same call (so it never exists untagged). `'name-taken'`: the VPC has a group
   * of that name already (InvalidGroup.Duplicate); the caller decides whose it is.
   */
  createSecurityGroup(input: {
    groupName: string;
    description: string;
    vpcId: string;
    tags: Record<string, string>;
  }): Promise<{ groupId: string } | 'name-taken'>;
  /** Add inbound rules; rules the group already has (whatever their description) are not an error. */
  authorizeSecurityGroupIngress(groupId: string, rules: readonly SecurityGroupRule[]): Promise<void>;
  /** Remove inbound rules; rules the group does not have are not an error. */
  revokeSecurityGroupIngress(groupId: string, rules: readonly SecurityGroupRule[]): Promise<void>;
  /**
   * The network interfaces holding any of these private IPv4 addresses (primary or secondary), with their security
   * groups: the interfaces behind IP targets. Addresses no interface holds are simply absent; all pages.
   */
  findNetworkInterfacesByPrivateIp(addresses: readonly string[]): Promise<NetworkInterfaceDetail[]>;
  /**
   * `not-found`: already gone. DependencyViolation (network interfaces of a deleted load balancer still
   * use it, or another group's rule references it) is a retryable error: it clears once they are gone.
   */
  deleteSecurityGroup(groupId: string): Promise<'deleted' | 'not-found'>;
}

/** What the route function asks of EC2: the instance reads, route tables, routes and source/destination checks. */
export interface Ec2RoutePort extends Ec2InstanceReadPort {
  /** One route table with every route; undefined when EC2 does not know the ID (InvalidRouteTableID.NotFound). */
  describeRouteTable(routeTableId: string): Promise<RouteTable | undefined>;
  /** Route tables carrying a tag: any value when `value` is omitted (`tag-key`), else exactly that value. */
  findRouteTablesByTag(tag: { key: string; value?: string }): Promise<RouteTable[]>;
  /**
   * Add a route to an IPv4 or IPv6 destination (the family is read from the CIDR).
   * `already-exists`: the table has a route to that destination already (RouteAlreadyExists), whatever its target.
   */
  createRoute(
    routeTableId: string,
    destination: string,
    target: RouteTargetSpec,
  ): Promise<'created' | 'already-exists'>;
  /** Point an existing route elsewhere. `not-found`: the table has no route to that destination. */
  replaceRoute(routeTableId: string, destination: string, target: RouteTargetSpec): Promise<'replaced' | 'not-found'>;
  /** `not-found` (InvalidRoute.NotFound) means someone else deleted it first: the caller's goal is reached. */
  deleteRoute(routeTableId: string, destination: string): Promise<'deleted' | 'not-found'>;
  /**
   * ModifyInstanceAttribute SourceDestCheck. EC2 refuses it for an instance with several network interfaces
   * ("There are multiple interfaces attached"); use the interface form for those.
   */
  modifyInstanceSourceDestCheck(instanceId: string, enabled: boolean): Promise<void>;
  /** ModifyNetworkInterfaceAttribute SourceDestCheck on one interface. */
  modifyNetworkInterfaceSourceDestCheck(networkInterfaceId: string, enabled: boolean): Promise<void>;
}

/** What the IP address manager asks of EC2: subnets and tags, instance type limits and network interfaces. */
export interface Ec2InterfacePort extends Ec2SubnetTagPort {
  describeInstanceTypes(instanceTypes: readonly string[]): Promise<InstanceTypeInfo[]>;

  /** Network interfaces matching every filter given, all pages; unknown IDs are simply absent. */
  describeNetworkInterfaces(query: NetworkInterfaceQuery): Promise<NetworkInterfaceDetail[]>;
  /**
   * AssignPrivateIpAddresses on one interface: `count` secondary addresses (SecondaryPrivateIpAddressCount)
   * or `prefixes` /28 prefixes (Ipv4PrefixCount), chosen by EC2 from the interface's subnet.
   */
  assignPrivateIpAddresses(
    networkInterfaceId: string,
    request: { count: number } | { prefixes: number },
  ): Promise<AssignResult>;
  /**
   * UnassignPrivateIpAddresses: give secondary addresses and/or prefixes back to the subnet. Addresses the
   * interface no longer has are not an error (someone released them first: the goal is reached).
   */
  unassignPrivateIpAddresses(
    networkInterfaceId: string,
    release: { addresses?: readonly string[]; prefixes?: readonly string[] },
  ): Promise<void>;
  /** `not-found`: already gone. An attached interface is refused (InvalidParameterValue), a retryable error. */
  deleteNetworkInterface(networkInterfaceId: string): Promise<'deleted' | 'not-found'>;
}

/** Every EC2 call this project makes. */
export interface Ec2Port extends Ec2LoadBalancerNetworkPort, Ec2RoutePort, Ec2InterfacePort {}

/** `i-` followed by 8 or 17 hex digits. */
export const INSTANCE_ID_PATTERN = /^i-(?:[0-9a-f]{8}|[0-9a-f]{17})$/;
