import type { Instance, RouteOrigin, RouteState, RouteTableAssociation, RouteTarget } from '../../ec2-port.ts';

/**
 * A route as the fake stores it. `state` is normally left out and worked out on every describe from the target
 * (a route to a terminated instance or a vanished interface is a blackhole, as in EC2); set it to pin a state,
 * e.g. a blackhole left by a deleted NAT gateway.
 */
export interface FakeRoute {
  destination: string;
  target: RouteTarget;
  origin: RouteOrigin;
  state?: RouteState;
}

export interface FakeRouteTable {
  routeTableId: string;
  vpcId?: string;
  tags: Record<string, string>;
  routes: FakeRoute[];
  /** Subnet associations and `main` (see RouteTable.associations); left out, the table reports none. */
  associations?: RouteTableAssociation[];
}

/**
 * A network interface as `putNetworkInterface` takes it: one the IP address manager (or anyone) created. Without
 * `attachment` it is a standalone interface, `available`; with one it goes on that instance (which must exist) as
 * an attached interface, listed by DescribeInstances too. Without addresses it gets the first free one of its subnet
 * as its primary address.
 */
export interface FakeNetworkInterface {
  networkInterfaceId: string;
  subnetId: string;
  attachment?: { instanceId: string; deviceIndex: number };
  /** The primary first. */
  privateIpAddresses: { address: string; primary: boolean }[];
  ipv4Prefixes: string[];
  tags: Record<string, string>;
}

/**
 * One network interface as the API calls see it, wherever the fake keeps it (an instance's, or a standalone one).
 * Its arrays and tags are the stored ones: changing them changes the account.
 */
export interface InterfaceRecord {
  networkInterfaceId: string;
  subnetId: string;
  vpcId?: string;
  availabilityZone?: string;
  /** `in-use` while attached, `available` otherwise. */
  status: string;
  /** The instance it is attached to, and where. */
  instance?: Instance;
  deviceIndex?: number;
  privateIpAddresses: { address: string; primary: boolean; privateDnsName?: string }[];
  ipv4Prefixes: string[];
  tags: Record<string, string>;
  sourceDestCheck?: boolean;
  securityGroupIds?: string[];
}
