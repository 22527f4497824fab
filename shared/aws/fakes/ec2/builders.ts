import type { Instance, Subnet } from '../../ec2-port.ts';
import type { FakeNetworkInterface, FakeRoute, FakeRouteTable } from './records.ts';

/**
 * A VPC route table as EC2 creates it (the local route), plus a default route to an internet gateway;
 * tagged with the test cluster unless told otherwise.
 */
export function makeRouteTable(
  overrides: Partial<FakeRouteTable> & { clusterName?: string; extraRoutes?: FakeRoute[] } = {},
): FakeRouteTable {
  const { clusterName, extraRoutes = [], ...rest } = overrides;
  const cluster = clusterName ?? 'test-cluster';
  return {
    routeTableId: 'rtb-0123456789abcdef0',
    vpcId: 'vpc-0a1b2c3d',
    tags: cluster ? { [`kubernetes.io/cluster/${cluster}`]: 'owned' } : {},
    routes: [
      { destination: '10.0.0.0/16', target: { gatewayId: 'local' }, origin: 'CreateRouteTable' },
      { destination: '0.0.0.0/0', target: { gatewayId: 'igw-0a1b2c3d' }, origin: 'CreateRoute' },
      ...extraRoutes,
    ],
    ...rest,
  };
}

let counter = 0;

/** A realistic instance for tests: one in-use ENI in the given zone, cluster-tagged unless told otherwise. */
export function makeInstance(overrides: Partial<Instance> & { clusterName?: string; index?: number } = {}): Instance {
  const index = overrides.index ?? ++counter;
  const octet3 = Math.floor(index / 250) % 250;
  const octet4 = (index % 250) + 4;
  const ip = `10.0.${octet3}.${octet4}`;
  const zone = overrides.availabilityZone ?? 'eu-west-1a';
  const region = zone.slice(0, -1);
  const { clusterName, index: _index, ...rest } = overrides;
  const instanceId = rest.instanceId ?? `i-${index.toString(16).padStart(17, '0')}`;
  return {
    instanceId,
    state: 'running',
    instanceType: 'm5.large',
    availabilityZone: zone,
    vpcId: 'vpc-0a1b2c3d',
    subnetId: 'subnet-0a1b2c3d',
    privateDnsName: `ip-${ip.replaceAll('.', '-')}.${region}.compute.internal`,
    privateIpAddress: ip,
    sourceDestCheck: true,
    networkInterfaces: [
      {
        networkInterfaceId: `eni-${index.toString(16).padStart(17, '0')}`,
        deviceIndex: 0,
        status: 'in-use',
        subnetId: 'subnet-0a1b2c3d',
        privateIpAddresses: [{ address: ip, primary: true }],
        ipv6Addresses: [],
      },
    ],
    tags:
      clusterName === undefined
        ? { 'kubernetes.io/cluster/test-cluster': 'owned' }
        : clusterName
          ? { [`kubernetes.io/cluster/${clusterName}`]: 'owned' }
          : {},
    ...rest,
  };
}

/**
 * A subnet of the fake VPC (10.0.<index>.0/24) in the given zone, tagged as told. Whether it is public is
 * decided by the route table it is associated with (see `makeRouteTable` and its `associations`). `ipv6: true`
 * associates 2001:db8:0:<index>::/64 (or pass `ipv6CidrBlocks`), as a dualstack load balancer needs.
 */
export function makeSubnet(
  overrides: Partial<Subnet> & { index: number; zone?: string; ipv6?: boolean } = { index: 1 },
): Subnet {
  const { index, zone, ipv6, ...rest } = overrides;
  const availabilityZone = zone ?? rest.availabilityZone ?? 'eu-west-1a';
  return {
    subnetId: `subnet-${index.toString(16).padStart(17, '0')}`,
    vpcId: 'vpc-0a1b2c3d',
    availabilityZone,
    availabilityZoneId: `euw1-az${availabilityZone.endsWith('a') ? 3 : availabilityZone.endsWith('b') ? 1 : 2}`,
    cidrBlock: `10.0.${index}.0/24`,
    ...(ipv6 ? { ipv6CidrBlocks: [`2001:db8:0:${index.toString(16)}::/64`] } : {}),
    tags: {},
    ...rest,
  };
}

/**
 * A network interface for `putNetworkInterface`: standalone (`available`) in `makeSubnet({ index: 1 })`'s subnet
 * unless told otherwise, without addresses (the fake gives it the first free one of its subnet as its primary),
 * prefixes or tags. Pass `attachment` to put it on an instance.
 */
export function makeNetworkInterface(
  overrides: Partial<FakeNetworkInterface> & { index?: number } = {},
): FakeNetworkInterface {
  const { index: given, ...rest } = overrides;
  const index = given ?? ++counter;
  return {
    networkInterfaceId: `eni-${(0xe0000 + index).toString(16).padStart(17, '0')}`,
    subnetId: makeSubnet({ index: 1 }).subnetId,
    privateIpAddresses: [],
    ipv4Prefixes: [],
    tags: {},
    ...rest,
  };
}
