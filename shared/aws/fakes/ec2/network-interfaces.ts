import type {
  AssignPrivateIpAddressesRequest,
  AssignPrivateIpAddressesResult,
  DeleteNetworkInterfaceRequest,
  DescribeNetworkInterfacesRequest,
  DescribeNetworkInterfacesResult,
  NetworkInterface as SdkNetworkInterface,
  UnassignPrivateIpAddressesRequest,
} from '@aws-sdk/client-ec2';
import { freeAddresses, freePrefixes } from './addresses.ts';
import { interfaceNotFound } from './instances.ts';
import type { InterfaceRecord } from './records.ts';
import type { Ec2State } from './state.ts';
import { acceptOnly, checkFilters, ec2Error, FAKE_ACCOUNT_ID, matchesFilters, page, sdkTags } from './wire.ts';

const INTERFACE_FILTERS = [
  'network-interface-id',
  'vpc-id',
  'subnet-id',
  'status',
  'availability-zone',
  'attachment.instance-id',
  'attachment.status',
  'private-ip-address',
  'addresses.private-ip-address',
  'ipv4-prefix.ipv4-prefix',
];

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeNetworkInterfaces.html
 * A listed ID EC2 does not know fails the whole call (InvalidNetworkInterfaceID.NotFound); filters match what a
 * describe shows now (secondary addresses and prefixes still hidden after their assignment are neither shown nor
 * matched); pages of 5..1000.
 */
export function describeNetworkInterfaces(
  ec2: Ec2State,
  input: DescribeNetworkInterfacesRequest,
): DescribeNetworkInterfacesResult {
  acceptOnly('DescribeNetworkInterfaces', input, ['NetworkInterfaceIds', 'Filters', 'MaxResults', 'NextToken']);
  checkFilters(input.Filters, INTERFACE_FILTERS);
  let records = ec2.interfaceRecords();
  if (input.NetworkInterfaceIds?.length) {
    const ids = [...new Set(input.NetworkInterfaceIds)];
    const missing = ids.find((id) => !records.some((r) => r.networkInterfaceId === id));
    if (missing) throw interfaceNotFound(ec2, missing);
    records = ids.map((id) => records.find((r) => r.networkInterfaceId === id)!);
  }
  // Matched on everything the interface holds first (a superset), so that only describes that would have shown a
  // hidden address count as lookups of it; then on what shows now.
  const matching = records
    .filter((r) => matchesFilters(input.Filters, interfaceFields(r), r.tags))
    .map((record) => ({ ...record, ...ec2.visibleAddresses(record) }))
    .filter((r) => matchesFilters(input.Filters, interfaceFields(r), r.tags));
  const { items, NextToken } = page('DescribeNetworkInterfaces', input, matching, { min: 5, max: 1000 });
  return { NetworkInterfaces: items.map(toSdkInterface), ...(NextToken ? { NextToken } : {}) };
}

function interfaceFields(r: InterfaceRecord) {
  const addresses = r.privateIpAddresses.map((a) => a.address);
  return {
    'network-interface-id': [r.networkInterfaceId],
    'vpc-id': [r.vpcId],
    'subnet-id': [r.subnetId],
    status: [r.status],
    'availability-zone': [r.availabilityZone],
    'attachment.instance-id': [r.instance?.instanceId],
    'attachment.status': [r.instance ? 'attached' : undefined],
    'private-ip-address': addresses,
    'addresses.private-ip-address': addresses,
    'ipv4-prefix.ipv4-prefix': r.ipv4Prefixes,
  };
}

function toSdkInterface(r: InterfaceRecord): SdkNetworkInterface {
  const primary = r.privateIpAddresses.find((a) => a.primary);
  return {
    NetworkInterfaceId: r.networkInterfaceId,
    InterfaceType: 'interface',
    Status: r.status as SdkNetworkInterface['Status'],
    SubnetId: r.subnetId,
    VpcId: r.vpcId,
    AvailabilityZone: r.availabilityZone,
    OwnerId: FAKE_ACCOUNT_ID,
    RequesterManaged: false,
    SourceDestCheck: r.sourceDestCheck ?? true,
    PrivateIpAddress: primary?.address,
    PrivateIpAddresses: r.privateIpAddresses.map((a) => ({
      PrivateIpAddress: a.address,
      Primary: a.primary,
      PrivateDnsName: a.privateDnsName,
    })),
    Ipv4Prefixes: r.ipv4Prefixes.map((Ipv4Prefix) => ({ Ipv4Prefix })),
    Ipv6Addresses: [],
    Groups: (r.securityGroupIds ?? []).map((GroupId) => ({ GroupId })),
    TagSet: sdkTags(r.tags),
    ...(r.instance
      ? {
          Attachment: {
            AttachmentId: `eni-attach-${r.networkInterfaceId.slice(4)}`,
            InstanceId: r.instance.instanceId,
            InstanceOwnerId: FAKE_ACCOUNT_ID,
            DeviceIndex: r.deviceIndex,
            Status: 'attached',
            DeleteOnTermination: r.deviceIndex === 0,
          },
        }
      : {}),
  };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AssignPrivateIpAddresses.html
 * Either SecondaryPrivateIpAddressCount or Ipv4PrefixCount (InvalidParameterCombination for both). The addresses
 * come from the interface's subnet, the lowest free ones first (EC2 picks any): none left is
 * InsufficientFreeAddressesInSubnet; prefixes are free /28 blocks (InsufficientCidrBlocks). An attached interface
 * holds at most the instance type's IPv4 addresses per interface, the primary included and each prefix counting
 * as one (PrivateIpAddressLimitExceeded); a standalone one is not limited here.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-prefix-eni.html
 */
export function assignPrivateIpAddresses(
  ec2: Ec2State,
  input: AssignPrivateIpAddressesRequest,
): AssignPrivateIpAddressesResult {
  acceptOnly('AssignPrivateIpAddresses', input, [
    'NetworkInterfaceId',
    'SecondaryPrivateIpAddressCount',
    'Ipv4PrefixCount',
  ]);
  const id = input.NetworkInterfaceId ?? '';
  const { SecondaryPrivateIpAddressCount: count, Ipv4PrefixCount: prefixCount } = input;
  if (count !== undefined && prefixCount !== undefined) {
    throw ec2Error(
      'InvalidParameterCombination',
      'Ipv4PrefixCount cannot be specified with SecondaryPrivateIpAddressCount',
    );
  }
  const wanted = count ?? prefixCount;
  if (wanted === undefined) {
    throw ec2Error(
      'MissingParameter',
      'Either the parameter privateIpAddresses, secondaryPrivateIpAddressCount, ipv4Prefixes or ipv4PrefixCount must be specified',
    );
  }
  if (!Number.isInteger(wanted) || wanted < 1) {
    throw ec2Error('InvalidParameterValue', `Value (${wanted}) for the count is invalid. It must be at least 1.`);
  }
  const record = ec2.interfaceRecord(id);
  if (!record) throw interfaceNotFound(ec2, id);
  const limit = record.instance
    ? ec2.instanceTypes.get(record.instance.instanceType)?.ipv4AddressesPerInterface
    : undefined;
  const held = record.privateIpAddresses.length + record.ipv4Prefixes.length;
  if (limit !== undefined && held + wanted > limit) {
    throw ec2Error(
      'PrivateIpAddressLimitExceeded',
      `Number of private addresses will exceed limit for instance type ${record.instance!.instanceType} on interface ${id}.`,
    );
  }
  const cidr = ec2.subnetCidr(record.subnetId);
  if (count !== undefined) {
    const addresses = freeAddresses(cidr, ec2.addressesInUse(), count);
    if (!addresses) {
      throw ec2Error(
        'InsufficientFreeAddressesInSubnet',
        `The specified subnet ${record.subnetId} does not have enough free addresses to satisfy the request.`,
      );
    }
    record.privateIpAddresses.push(...addresses.map((address) => ({ address, primary: false })));
    ec2.startAddressWindow(id, addresses);
    const answered = ec2.assignAnswer === 'every-address' ? record.privateIpAddresses.map((a) => a.address) : addresses;
    return {
      NetworkInterfaceId: id,
      AssignedPrivateIpAddresses: answered.map((PrivateIpAddress) => ({ PrivateIpAddress })),
      AssignedIpv4Prefixes: [],
    };
  }
  const prefixes = freePrefixes(cidr, ec2.addressesInUse(), wanted);
  if (!prefixes) {
    throw ec2Error(
      'InsufficientCidrBlocks',
      `The specified subnet ${record.subnetId} does not have enough contiguous free address blocks to satisfy the request.`,
    );
  }
  record.ipv4Prefixes.push(...prefixes);
  ec2.startAddressWindow(id, prefixes);
  return {
    NetworkInterfaceId: id,
    AssignedPrivateIpAddresses: [],
    AssignedIpv4Prefixes: prefixes.map((Ipv4Prefix) => ({ Ipv4Prefix })),
  };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_UnassignPrivateIpAddresses.html
 * All or nothing: an address (or prefix) the interface does not have fails the whole call with
 * InvalidParameterValue "Some of the specified addresses are not assigned to interface …", and the primary address
 * cannot be unassigned (InvalidParameterValue).
 */
export function unassignPrivateIpAddresses(ec2: Ec2State, input: UnassignPrivateIpAddressesRequest): object {
  acceptOnly('UnassignPrivateIpAddresses', input, ['NetworkInterfaceId', 'PrivateIpAddresses', 'Ipv4Prefixes']);
  const id = input.NetworkInterfaceId ?? '';
  const addresses = input.PrivateIpAddresses ?? [];
  const prefixes = input.Ipv4Prefixes ?? [];
  if (addresses.length === 0 && prefixes.length === 0) {
    throw ec2Error('MissingParameter', 'Either the parameter privateIpAddresses or ipv4Prefixes must be specified');
  }
  const record = ec2.interfaceRecord(id);
  if (!record) throw interfaceNotFound(ec2, id);
  for (const address of addresses) {
    const held = record.privateIpAddresses.find((a) => a.address === address);
    if (held?.primary) {
      throw ec2Error(
        'InvalidParameterValue',
        `Value (${address}) for parameter privateIpAddress is invalid. The primary IP address of an interface cannot be unassigned.`,
      );
    }
    if (!held) {
      throw ec2Error('InvalidParameterValue', `Some of the specified addresses are not assigned to interface ${id}`);
    }
  }
  if (prefixes.some((prefix) => !record.ipv4Prefixes.includes(prefix))) {
    throw ec2Error('InvalidParameterValue', `Some of the specified prefixes are not assigned to interface ${id}`);
  }
  const keptAddresses = record.privateIpAddresses.filter((a) => !addresses.includes(a.address));
  record.privateIpAddresses.splice(0, record.privateIpAddresses.length, ...keptAddresses);
  const keptPrefixes = record.ipv4Prefixes.filter((p) => !prefixes.includes(p));
  record.ipv4Prefixes.splice(0, record.ipv4Prefixes.length, ...keptPrefixes);
  ec2.forgetAddresses(id, [...addresses, ...prefixes]);
  return {};
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteNetworkInterface.html
 * Only a detached (`available`) interface: an attached one is InvalidParameterValue ("… is currently in use").
 * Its addresses and prefixes go back to the subnet.
 */
export function deleteNetworkInterface(ec2: Ec2State, input: DeleteNetworkInterfaceRequest): object {
  acceptOnly('DeleteNetworkInterface', input, ['NetworkInterfaceId']);
  const id = input.NetworkInterfaceId ?? '';
  const record = ec2.interfaceRecord(id);
  if (!record) throw interfaceNotFound(ec2, id);
  if (record.instance) {
    throw ec2Error('InvalidParameterValue', `Network interface '${id}' is currently in use.`);
  }
  ec2.forgetAddresses(id, [...record.privateIpAddresses.map((a) => a.address), ...record.ipv4Prefixes]);
  ec2.removeNetworkInterface(id);
  return {};
}
