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
}

export interface Ec2Port {
  /**
   * Instances by ID. Malformed and unknown IDs are simply absent from the result (they never fail
   * the others); up to 1000 IDs go in one DescribeInstances call.
   */
  describeInstances(instanceIds: readonly string[]): Promise<Map<string, Instance>>;
  /** Instances in a live state (not terminated) whose private DNS name is one of `names`. */
  findInstancesByPrivateDnsName(names: readonly string[]): Promise<Instance[]>;
  describeAvailabilityZones(): Promise<AvailabilityZone[]>;
  describeInstanceTypes(instanceTypes: readonly string[]): Promise<InstanceTypeInfo[]>;
}

/** `i-` followed by 8 or 17 hex digits. */
export const INSTANCE_ID_PATTERN = /^i-(?:[0-9a-f]{8}|[0-9a-f]{17})$/;
