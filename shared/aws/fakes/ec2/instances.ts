import type {
  _InstanceType,
  DescribeAvailabilityZonesRequest,
  DescribeAvailabilityZonesResult,
  DescribeInstancesRequest,
  DescribeInstancesResult,
  DescribeInstanceTypesRequest,
  DescribeInstanceTypesResult,
  InstanceStateName,
  InstanceTypeHypervisor,
  ModifyInstanceAttributeRequest,
  ModifyNetworkInterfaceAttributeRequest,
  Instance as SdkInstance,
  InstanceNetworkInterface as SdkNetworkInterface,
} from '@aws-sdk/client-ec2';
import type { Instance, NetworkInterface } from '../../ec2-port.ts';
import type { Ec2State } from './state.ts';
import { acceptOnly, checkFilters, ec2Error, FAKE_ACCOUNT_ID, matchesFilters, page, sdkTags } from './wire.ts';

/**
 * DescribeInstances accepts at most 1000 explicitly listed IDs ("you should not specify more than 1,000 IDs in a
 * single call": https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-pagination.html). What EC2 answers beyond
 * that is not documented; the fake refuses with InvalidParameterValue so that a caller sending more fails loudly.
 */
export const MAX_INSTANCE_IDS = 1000;

/** DescribeInstanceTypes takes at most 100 instance types, and pages of 5 to 100. */
export const MAX_INSTANCE_TYPES = 100;

const INSTANCE_FILTERS = [
  'instance-id',
  'instance-state-name',
  'instance-type',
  'private-dns-name',
  'private-ip-address',
  'vpc-id',
  'subnet-id',
  'availability-zone',
  'network-interface.network-interface-id',
];

/** https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceState.html */
const STATE_CODES: Record<Instance['state'], number> = {
  pending: 0,
  running: 16,
  'shutting-down': 32,
  terminated: 48,
  stopping: 64,
  stopped: 80,
};

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html
 * Listed IDs: an ID of the wrong format fails the whole call (InvalidInstanceID.Malformed), then any ID EC2 does
 * not know, or does not show yet (a new instance, see `putInstance`'s `invisibleForCalls`), fails it naming all of
 * them (InvalidInstanceID.NotFound). InstanceIds and MaxResults cannot go together; filtered calls page by 5..1000.
 * Terminated instances are still described (EC2 shows them for about an hour).
 */
export function describeInstances(ec2: Ec2State, input: DescribeInstancesRequest): DescribeInstancesResult {
  acceptOnly('DescribeInstances', input, ['InstanceIds', 'Filters', 'MaxResults', 'NextToken']);
  const ids = input.InstanceIds ?? [];
  if (ids.length > 0 && input.MaxResults !== undefined) {
    throw ec2Error(
      'InvalidParameterCombination',
      'The parameter instancesSet cannot be used with the parameter maxResults',
    );
  }
  if (ids.length > MAX_INSTANCE_IDS) {
    throw ec2Error(
      'InvalidParameterValue',
      `The maximum number of instance IDs in a single call is ${MAX_INSTANCE_IDS}`,
    );
  }
  checkFilters(input.Filters, INSTANCE_FILTERS);
  const candidates = ids.length > 0 ? listedInstances(ec2, ids) : [...ec2.instances.values()];
  const matching = candidates.filter(
    (i) =>
      matchesFilters(input.Filters, instanceFields(i), i.tags) && (ids.length > 0 || ec2.visibleInstance(i.instanceId)),
  );
  const { items, NextToken } = page('DescribeInstances', input, matching, { min: 5, max: 1000 });
  return {
    Reservations: items.map((instance) => ({
      ReservationId: `r-${instance.instanceId.slice(2)}`,
      OwnerId: FAKE_ACCOUNT_ID,
      Instances: [toSdkInstance(ec2, instance)],
    })),
    ...(NextToken ? { NextToken } : {}),
  };
}

/** The listed instances, in the order asked, each once; or the error EC2 gives for the whole call. */
function listedInstances(ec2: Ec2State, ids: readonly string[]): Instance[] {
  const unique = [...new Set(ids)];
  const malformed = unique.find((id) => !ec2.isWellFormed('i', id));
  if (malformed) throw ec2Error('InvalidInstanceID.Malformed', `Invalid id: "${malformed}"`);
  const found: Instance[] = [];
  const missing: string[] = [];
  for (const id of unique) {
    const instance = ec2.visibleInstance(id);
    if (instance) found.push(instance);
    else missing.push(id);
  }
  if (missing.length === 1) {
    throw ec2Error('InvalidInstanceID.NotFound', `The instance ID '${missing[0]}' does not exist`);
  }
  if (missing.length > 1) {
    throw ec2Error('InvalidInstanceID.NotFound', `The instance IDs '${missing.join(', ')}' do not exist`);
  }
  return found;
}

function instanceFields(i: Instance) {
  return {
    'instance-id': [i.instanceId],
    'instance-state-name': [i.state],
    'instance-type': [i.instanceType],
    'private-dns-name': [i.privateDnsName],
    'private-ip-address': [i.privateIpAddress],
    'vpc-id': [i.vpcId],
    'subnet-id': [i.subnetId],
    'availability-zone': [i.availabilityZone],
    'network-interface.network-interface-id': i.networkInterfaces.map((e) => e.networkInterfaceId),
  };
}

/** EC2 states "no name" as an empty string (no public DNS name, a terminated instance). */
function toSdkInstance(ec2: Ec2State, i: Instance): SdkInstance {
  return {
    InstanceId: i.instanceId,
    State: { Name: i.state as InstanceStateName, Code: STATE_CODES[i.state] },
    InstanceType: i.instanceType as _InstanceType,
    Placement: { AvailabilityZone: i.availabilityZone },
    VpcId: i.vpcId,
    SubnetId: i.subnetId,
    PrivateDnsName: i.privateDnsName ?? '',
    PrivateIpAddress: i.privateIpAddress,
    PublicDnsName: i.publicDnsName ?? '',
    PublicIpAddress: i.publicIpAddress,
    SourceDestCheck: i.sourceDestCheck,
    NetworkInterfaces: i.networkInterfaces.map((eni) => toSdkInterface(ec2, eni)),
    Tags: sdkTags(i.tags),
  };
}

/** An interface put without security groups shows none (the fake does not invent them). */
function toSdkInterface(ec2: Ec2State, eni: NetworkInterface): SdkNetworkInterface {
  const primary = eni.privateIpAddresses.find((a) => a.primary);
  // Addresses and prefixes assigned a moment ago may not show yet (see `newAddressInvisibleMs`).
  const shown = ec2.visibleAddresses({
    networkInterfaceId: eni.networkInterfaceId,
    privateIpAddresses: eni.privateIpAddresses,
    ipv4Prefixes: ec2.prefixesOf(eni.networkInterfaceId),
  });
  return {
    NetworkInterfaceId: eni.networkInterfaceId,
    ...(eni.deviceIndex < Number.MAX_SAFE_INTEGER
      ? { Attachment: { DeviceIndex: eni.deviceIndex, Status: 'attached' } }
      : {}),
    Status: eni.status as SdkNetworkInterface['Status'],
    SubnetId: eni.subnetId,
    PrivateIpAddress: primary?.address,
    PrivateIpAddresses: shown.privateIpAddresses.map((a) => ({
      PrivateIpAddress: a.address,
      Primary: a.primary,
      PrivateDnsName: a.privateDnsName,
    })),
    ...(shown.ipv4Prefixes.length > 0
      ? { Ipv4Prefixes: shown.ipv4Prefixes.map((Ipv4Prefix) => ({ Ipv4Prefix })) }
      : {}),
    Ipv6Addresses: eni.ipv6Addresses.map((Ipv6Address) => ({ Ipv6Address })),
    SourceDestCheck: eni.sourceDestCheck,
    ...(eni.securityGroupIds
      ? {
          Groups: eni.securityGroupIds.map((GroupId) => ({
            GroupId,
            GroupName: ec2.securityGroups.get(GroupId)?.groupName,
          })),
        }
      : {}),
  };
}

/** https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeAvailabilityZones.html (not paginated) */
export function describeAvailabilityZones(
  ec2: Ec2State,
  input: DescribeAvailabilityZonesRequest,
): DescribeAvailabilityZonesResult {
  acceptOnly('DescribeAvailabilityZones', input, ['AllAvailabilityZones', 'ZoneNames']);
  const zones = input.ZoneNames ? ec2.zones.filter((z) => input.ZoneNames!.includes(z.zoneName)) : ec2.zones;
  return {
    AvailabilityZones: zones.map((z) => ({
      ZoneName: z.zoneName,
      ZoneId: z.zoneId,
      ZoneType: z.zoneType,
      State: 'available',
      OptInStatus: 'opt-in-not-required',
      RegionName: z.zoneName.slice(0, -1),
    })),
  };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html
 * An unknown type fails the whole call (InvalidInstanceType), naming every unknown one.
 */
export function describeInstanceTypes(ec2: Ec2State, input: DescribeInstanceTypesRequest): DescribeInstanceTypesResult {
  acceptOnly('DescribeInstanceTypes', input, ['InstanceTypes', 'MaxResults', 'NextToken']);
  const wanted = [...new Set<string>(input.InstanceTypes ?? [...ec2.instanceTypes.keys()])];
  if (wanted.length > MAX_INSTANCE_TYPES) {
    throw ec2Error('InvalidParameterValue', `The maximum number of instance types is ${MAX_INSTANCE_TYPES}`);
  }
  const unknown = wanted.filter((t) => !ec2.instanceTypes.has(t));
  if (unknown.length > 0) {
    throw ec2Error(
      'InvalidInstanceType',
      `The following supplied instance types do not exist: [${unknown.join(', ')}]`,
    );
  }
  const infos = wanted.map((t) => ec2.instanceTypes.get(t)!);
  const { items, NextToken } = page('DescribeInstanceTypes', input, infos, { min: 5, max: 100 });
  return {
    InstanceTypes: items.map((info) => ({
      InstanceType: info.instanceType as _InstanceType,
      NetworkInfo: {
        MaximumNetworkInterfaces: info.maximumNetworkInterfaces,
        Ipv4AddressesPerInterface: info.ipv4AddressesPerInterface,
        Ipv6AddressesPerInterface: info.ipv6AddressesPerInterface,
      },
      // EC2 names no hypervisor for a bare-metal type.
      ...(info.hypervisor ? { Hypervisor: info.hypervisor as InstanceTypeHypervisor } : {}),
      BareMetal: info.bareMetal ?? false,
    })),
    ...(NextToken ? { NextToken } : {}),
  };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyInstanceAttribute.html
 * The instance-wide source/destination check is refused for an instance with several attached interfaces: EC2
 * wants the interface form then. It is the primary interface's check.
 */
export function modifyInstanceAttribute(ec2: Ec2State, input: ModifyInstanceAttributeRequest): object {
  acceptOnly('ModifyInstanceAttribute', input, ['InstanceId', 'SourceDestCheck']);
  const instanceId = input.InstanceId ?? '';
  if (input.SourceDestCheck?.Value === undefined) {
    throw ec2Error('MissingParameter', 'The request must contain the parameter sourceDestCheck');
  }
  const instance = liveInstance(ec2, instanceId);
  if (instance.networkInterfaces.filter((e) => e.status === 'in-use').length > 1) {
    throw ec2Error(
      'InvalidInstanceID',
      `There are multiple interfaces attached to instance '${instanceId}'. Please specify an interface ID for the operation instead.`,
    );
  }
  instance.sourceDestCheck = input.SourceDestCheck.Value;
  for (const eni of instance.networkInterfaces)
    if (eni.deviceIndex === 0) eni.sourceDestCheck = instance.sourceDestCheck;
  return {};
}

/** https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyNetworkInterfaceAttribute.html */
export function modifyNetworkInterfaceAttribute(ec2: Ec2State, input: ModifyNetworkInterfaceAttributeRequest): object {
  acceptOnly('ModifyNetworkInterfaceAttribute', input, ['NetworkInterfaceId', 'SourceDestCheck']);
  const id = input.NetworkInterfaceId ?? '';
  if (input.SourceDestCheck?.Value === undefined) {
    throw ec2Error('MissingParameter', 'The request must contain the parameter sourceDestCheck');
  }
  const found = ec2.findInterface(id);
  if (!found) throw interfaceNotFound(ec2, id);
  found.eni.sourceDestCheck = input.SourceDestCheck.Value;
  // The instance attribute is the primary interface's.
  if (found.eni.deviceIndex === 0) found.instance.sourceDestCheck = input.SourceDestCheck.Value;
  return {};
}

/** An instance a write may name: known and not terminated, else the error EC2 gives for its ID. */
export function liveInstance(ec2: Ec2State, instanceId: string): Instance {
  if (!ec2.isWellFormed('i', instanceId)) throw ec2Error('InvalidInstanceID.Malformed', `Invalid id: "${instanceId}"`);
  const instance = ec2.instances.get(instanceId);
  if (!instance || instance.state === 'terminated') {
    throw ec2Error('InvalidInstanceID.NotFound', `The instance ID '${instanceId}' does not exist`);
  }
  return instance;
}

export function interfaceNotFound(ec2: Ec2State, id: string): Error {
  if (!ec2.isWellFormed('eni', id)) return ec2Error('InvalidNetworkInterfaceId.Malformed', `Invalid id: "${id}"`);
  return ec2Error('InvalidNetworkInterfaceID.NotFound', `The networkInterface ID '${id}' does not exist`);
}
