import type {
  CreateRouteRequest,
  DeleteRouteRequest,
  DescribeRouteTablesRequest,
  DescribeRouteTablesResult,
  ReplaceRouteRequest,
  Route as SdkRoute,
  RouteTable as SdkRouteTable,
} from '@aws-sdk/client-ec2';
import type { Instance, NetworkInterface, Route, RouteTarget } from '../../ec2-port.ts';
import { interfaceNotFound, liveInstance } from './instances.ts';
import type { FakeRouteTable } from './records.ts';
import type { Ec2State } from './state.ts';
import { acceptOnly, checkFilters, ec2Error, FAKE_ACCOUNT_ID, matchesFilters, page, sdkTags } from './wire.ts';

const ROUTE_TABLE_FILTERS = [
  'route-table-id',
  'vpc-id',
  'association.subnet-id',
  'association.main',
  'route.destination-cidr-block',
  'route.instance-id',
];

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeRouteTables.html
 * A listed ID EC2 does not know fails the whole call (InvalidRouteTableID.NotFound); pages of 5 to 100. Route
 * states are worked out from the targets now (see `FakeRoute`). A table put without associations reports none.
 */
export function describeRouteTables(ec2: Ec2State, input: DescribeRouteTablesRequest): DescribeRouteTablesResult {
  acceptOnly('DescribeRouteTables', input, ['RouteTableIds', 'Filters', 'MaxResults', 'NextToken']);
  checkFilters(input.Filters, ROUTE_TABLE_FILTERS);
  const tables = input.RouteTableIds?.length
    ? [...new Set(input.RouteTableIds)].map((id) => tableOrThrow(ec2, id))
    : [...ec2.routeTables.values()];
  const matching = tables
    .map((table) => ({ table, routes: ec2.currentRoutes(table) }))
    .filter(({ table, routes }) => matchesFilters(input.Filters, tableFields(table, routes), table.tags));
  const { items, NextToken } = page('DescribeRouteTables', input, matching, { min: 5, max: 100 });
  return {
    RouteTables: items.map(({ table, routes }) => toSdkRouteTable(table, routes)),
    ...(NextToken ? { NextToken } : {}),
  };
}

function tableFields(table: FakeRouteTable, routes: readonly Route[]) {
  return {
    'route-table-id': [table.routeTableId],
    'vpc-id': [table.vpcId],
    'association.subnet-id': (table.associations ?? []).map((a) => a.subnetId),
    'association.main': (table.associations ?? []).map((a) => String(a.main)),
    'route.destination-cidr-block': routes.filter((r) => r.destinationType === 'ipv4').map((r) => r.destination),
    'route.instance-id': routes.map((r) => r.target.instanceId),
  };
}

function toSdkRouteTable(table: FakeRouteTable, routes: readonly Route[]): SdkRouteTable {
  return {
    RouteTableId: table.routeTableId,
    VpcId: table.vpcId,
    OwnerId: FAKE_ACCOUNT_ID,
    Tags: sdkTags(table.tags),
    Routes: routes.map(toSdkRoute),
    PropagatingVgws: [],
    ...(table.associations
      ? {
          Associations: table.associations.map((a, i) => ({
            Main: a.main,
            SubnetId: a.subnetId,
            RouteTableId: table.routeTableId,
            RouteTableAssociationId: `rtbassoc-${table.routeTableId.slice(4)}${i}`,
            AssociationState: { State: 'associated' },
          })),
        }
      : {}),
  };
}

function toSdkRoute(route: Route): SdkRoute {
  const t = route.target;
  return {
    ...(route.destinationType === 'ipv4'
      ? { DestinationCidrBlock: route.destination }
      : route.destinationType === 'ipv6'
        ? { DestinationIpv6CidrBlock: route.destination }
        : { DestinationPrefixListId: route.destination }),
    GatewayId: t.gatewayId,
    InstanceId: t.instanceId,
    ...(t.instanceId ? { InstanceOwnerId: FAKE_ACCOUNT_ID } : {}),
    NetworkInterfaceId: t.networkInterfaceId,
    NatGatewayId: t.natGatewayId,
    TransitGatewayId: t.transitGatewayId,
    VpcPeeringConnectionId: t.vpcPeeringConnectionId,
    EgressOnlyInternetGatewayId: t.egressOnlyInternetGatewayId,
    LocalGatewayId: t.localGatewayId,
    CarrierGatewayId: t.carrierGatewayId,
    CoreNetworkArn: t.coreNetworkArn,
    State: route.state,
    Origin: route.origin as SdkRoute['Origin'],
  };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateRoute.html
 * A route to that destination already (whatever its target) is RouteAlreadyExists. Beyond the table's quota of
 * routes (propagated ones do not count) it is RouteLimitExceeded.
 */
export function createRoute(ec2: Ec2State, input: CreateRouteRequest): object {
  acceptOnly('CreateRoute', input, [
    'RouteTableId',
    'DestinationCidrBlock',
    'DestinationIpv6CidrBlock',
    'InstanceId',
    'NetworkInterfaceId',
  ]);
  const table = tableOrThrow(ec2, input.RouteTableId ?? '');
  const destination = destinationOf(input);
  if (table.routes.some((r) => r.destination === destination)) {
    throw ec2Error('RouteAlreadyExists', `The route identified by ${destination} already exists.`);
  }
  const target = resolveTarget(ec2, table, input);
  const counted = table.routes.filter((r) => r.origin !== 'EnableVgwRoutePropagation').length;
  if (counted >= ec2.routeLimit) {
    throw ec2Error('RouteLimitExceeded', 'The maximum number of routes has been reached.');
  }
  table.routes.push({ destination, target, origin: 'CreateRoute' });
  return { Return: true };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ReplaceRoute.html
 * A destination the table has no route to is InvalidParameterValue ("There is no route defined for ..."), not
 * InvalidRoute.NotFound; the local route cannot be replaced.
 */
export function replaceRoute(ec2: Ec2State, input: ReplaceRouteRequest): object {
  acceptOnly('ReplaceRoute', input, [
    'RouteTableId',
    'DestinationCidrBlock',
    'DestinationIpv6CidrBlock',
    'InstanceId',
    'NetworkInterfaceId',
  ]);
  const table = tableOrThrow(ec2, input.RouteTableId ?? '');
  const destination = destinationOf(input);
  const route = table.routes.find((r) => r.destination === destination);
  if (!route) {
    throw ec2Error(
      'InvalidParameterValue',
      `There is no route defined for '${destination}' in the route table. Use CreateRoute instead.`,
    );
  }
  if (route.origin === 'CreateRouteTable') {
    throw ec2Error(
      'InvalidParameterValue',
      `cannot replace local route ${destination} in route table ${table.routeTableId}`,
    );
  }
  route.target = resolveTarget(ec2, table, input);
  route.state = undefined;
  return { Return: true };
}

/** https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteRoute.html */
export function deleteRoute(ec2: Ec2State, input: DeleteRouteRequest): object {
  acceptOnly('DeleteRoute', input, ['RouteTableId', 'DestinationCidrBlock', 'DestinationIpv6CidrBlock']);
  const table = tableOrThrow(ec2, input.RouteTableId ?? '');
  const destination = destinationOf(input);
  const index = table.routes.findIndex((r) => r.destination === destination);
  if (index < 0) {
    const field = destination.includes(':') ? 'destination-ipv6-cidr-block' : 'destination-cidr-block';
    throw ec2Error(
      'InvalidRoute.NotFound',
      `No route with ${field} ${destination} in route table ${table.routeTableId}`,
    );
  }
  if (table.routes[index]!.origin === 'CreateRouteTable') {
    throw ec2Error(
      'InvalidParameterValue',
      `cannot remove local route ${destination} in route table ${table.routeTableId}`,
    );
  }
  table.routes.splice(index, 1);
  return { Return: true };
}

function tableOrThrow(ec2: Ec2State, routeTableId: string): FakeRouteTable {
  const table = ec2.routeTables.get(routeTableId);
  if (table) return table;
  if (!ec2.isWellFormed('rtb', routeTableId)) {
    throw ec2Error('InvalidRouteTableId.Malformed', `Invalid id: "${routeTableId}"`);
  }
  throw ec2Error('InvalidRouteTableID.NotFound', `The routeTable ID '${routeTableId}' does not exist`);
}

/** Exactly one destination, each family in its own field: EC2 refuses an IPv6 block in DestinationCidrBlock. */
function destinationOf(input: { DestinationCidrBlock?: string; DestinationIpv6CidrBlock?: string }): string {
  const { DestinationCidrBlock: v4, DestinationIpv6CidrBlock: v6 } = input;
  if (v4 !== undefined && v6 !== undefined) {
    throw ec2Error(
      'InvalidParameterCombination',
      'Only one of destinationCidrBlock and destinationIpv6CidrBlock may be given',
    );
  }
  if (v4 === undefined && v6 === undefined) {
    throw ec2Error(
      'MissingParameter',
      'The request must contain the parameter destinationCidrBlock or destinationIpv6CidrBlock',
    );
  }
  if (v4 !== undefined && (v4.includes(':') || !v4.includes('/'))) {
    throw ec2Error(
      'InvalidParameterValue',
      `Value (${v4}) for parameter destinationCidrBlock is invalid. This is not a valid IPv4 CIDR block.`,
    );
  }
  if (v6 !== undefined && (!v6.includes(':') || !v6.includes('/'))) {
    throw ec2Error(
      'InvalidParameterValue',
      `Value (${v6}) for parameter destinationIpv6CidrBlock is invalid. This is not a valid IPv6 CIDR block.`,
    );
  }
  return (v4 ?? v6)!;
}

/**
 * EC2 records both the instance and its interface for a route to either (when the interface is attached). An
 * instance with several attached interfaces cannot be a target: EC2 wants the interface then. Target and table
 * must be in the same VPC.
 */
function resolveTarget(
  ec2: Ec2State,
  table: FakeRouteTable,
  input: { InstanceId?: string; NetworkInterfaceId?: string },
): RouteTarget {
  if ((input.InstanceId === undefined) === (input.NetworkInterfaceId === undefined)) {
    throw ec2Error('InvalidParameterCombination', 'The request must contain exactly one route target');
  }
  let instance: Instance;
  let eni: NetworkInterface | undefined;
  if (input.InstanceId !== undefined) {
    instance = liveInstance(ec2, input.InstanceId);
    const attached = instance.networkInterfaces.filter((e) => e.status === 'in-use');
    if (attached.length > 1) {
      throw ec2Error(
        'InvalidInstanceID',
        `There are multiple interfaces attached to instance '${instance.instanceId}'. Please specify an interface ID for the operation instead.`,
      );
    }
    eni = attached[0];
  } else {
    const found = ec2.findInterface(input.NetworkInterfaceId!);
    if (!found) throw interfaceNotFound(ec2, input.NetworkInterfaceId!);
    ({ instance, eni } = found);
  }
  if (table.vpcId && instance.vpcId && table.vpcId !== instance.vpcId) {
    throw ec2Error(
      'InvalidParameterValue',
      `route table ${table.routeTableId} and network interface ${eni?.networkInterfaceId} belong to different networks`,
    );
  }
  return { instanceId: instance.instanceId, networkInterfaceId: eni?.networkInterfaceId };
}
