import type {
  CreateTagsRequest,
  DeleteTagsRequest,
  DescribeSubnetsRequest,
  DescribeSubnetsResult,
  Subnet as SdkSubnet,
} from '@aws-sdk/client-ec2';
import type { Subnet } from '../../ec2-port.ts';
import type { Ec2State } from './state.ts';
import {
  acceptOnly,
  checkFilters,
  checkTagCount,
  checkTagKeys,
  ec2Error,
  FAKE_ACCOUNT_ID,
  matchesFilters,
  page,
  sdkTags,
} from './wire.ts';

const SUBNET_FILTERS = ['subnet-id', 'vpc-id', 'availability-zone', 'availability-zone-id', 'cidr-block'];

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSubnets.html
 * A listed ID EC2 does not know fails the whole call (InvalidSubnetID.NotFound); filtered calls page by 5..1000.
 */
export function describeSubnets(ec2: Ec2State, input: DescribeSubnetsRequest): DescribeSubnetsResult {
  acceptOnly('DescribeSubnets', input, ['SubnetIds', 'Filters', 'MaxResults', 'NextToken']);
  checkFilters(input.Filters, SUBNET_FILTERS);
  const subnets = input.SubnetIds?.length
    ? [...new Set(input.SubnetIds)].map((id) => subnetOrThrow(ec2, id))
    : [...ec2.subnets.values()];
  const matching = subnets.filter((s) =>
    matchesFilters(
      input.Filters,
      {
        'subnet-id': [s.subnetId],
        'vpc-id': [s.vpcId],
        'availability-zone': [s.availabilityZone],
        'availability-zone-id': [s.availabilityZoneId],
        'cidr-block': [s.cidrBlock],
      },
      s.tags,
    ),
  );
  const { items, NextToken } = page('DescribeSubnets', input, matching, { min: 5, max: 1000 });
  return { Subnets: items.map(toSdkSubnet), ...(NextToken ? { NextToken } : {}) };
}

function subnetOrThrow(ec2: Ec2State, subnetId: string): Subnet {
  const subnet = ec2.subnets.get(subnetId);
  if (subnet) return subnet;
  if (!ec2.isWellFormed('subnet', subnetId)) throw ec2Error('InvalidSubnetID.Malformed', `Invalid id: "${subnetId}"`);
  throw ec2Error('InvalidSubnetID.NotFound', `The subnet ID '${subnetId}' does not exist`);
}

/** IPv6 blocks of a subnet are associations; the fake's are all `associated`. */
function toSdkSubnet(s: Subnet): SdkSubnet {
  return {
    SubnetId: s.subnetId,
    VpcId: s.vpcId,
    AvailabilityZone: s.availabilityZone,
    AvailabilityZoneId: s.availabilityZoneId,
    CidrBlock: s.cidrBlock,
    State: 'available',
    OwnerId: FAKE_ACCOUNT_ID,
    Ipv6CidrBlockAssociationSet: (s.ipv6CidrBlocks ?? []).map((block, i) => ({
      Ipv6CidrBlock: block,
      AssociationId: `subnet-cidr-assoc-${s.subnetId.slice(7)}${i}`,
      Ipv6CidrBlockState: { State: 'associated' },
    })),
    Tags: sdkTags(s.tags),
  };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateTags.html
 * Every resource is checked before any is tagged; a tag overwrites the same key.
 */
export function createTags(ec2: Ec2State, input: CreateTagsRequest): object {
  acceptOnly('CreateTags', input, ['Resources', 'Tags']);
  const tags = input.Tags ?? [];
  checkTagKeys(tags);
  const targets = (input.Resources ?? []).map((id) => ({ id, tags: taggable(ec2, id) }));
  for (const target of targets) {
    checkTagCount(target.id, { ...target.tags, ...Object.fromEntries(tags.map((t) => [t.Key!, ''])) });
  }
  for (const target of targets) for (const tag of tags) target.tags[tag.Key!] = tag.Value ?? '';
  return {};
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteTags.html
 * A key without a value goes whatever its value; with a value (even empty) only when the value is that. Keys a
 * resource lacks are no error. Every resource is checked before anything is removed.
 */
export function deleteTags(ec2: Ec2State, input: DeleteTagsRequest): object {
  acceptOnly('DeleteTags', input, ['Resources', 'Tags']);
  const targets = (input.Resources ?? []).map((id) => taggable(ec2, id));
  for (const tags of targets) {
    for (const tag of input.Tags ?? []) {
      if (tag.Key !== undefined && (tag.Value === undefined || tags[tag.Key] === tag.Value)) delete tags[tag.Key];
    }
  }
  return {};
}

/**
 * The live tags of a resource the fake holds, or the error EC2 gives for its ID: the type's NotFound for a
 * well-formed ID it does not know (a security group still hidden after its creation included), InvalidID for one
 * it cannot even read.
 */
function taggable(ec2: Ec2State, id: string): Record<string, string> {
  if (ec2.securityGroups.has(id)) {
    const group = ec2.visibleSecurityGroup(id);
    if (!group) throw ec2Error('InvalidGroup.NotFound', `The security group '${id}' does not exist`);
    return group.tags;
  }
  const resource = ec2.subnets.get(id) ?? ec2.instances.get(id) ?? ec2.routeTables.get(id);
  if (resource) return resource.tags;
  const interfaceTags = id.startsWith('eni-') ? ec2.interfaceTags(id) : undefined;
  if (interfaceTags) return interfaceTags;
  const notFound: Record<string, [string, string]> = {
    sg: ['InvalidGroup.NotFound', `The security group '${id}' does not exist`],
    subnet: ['InvalidSubnetID.NotFound', `The subnet ID '${id}' does not exist`],
    i: ['InvalidInstanceID.NotFound', `The instance ID '${id}' does not exist`],
    rtb: ['InvalidRouteTableID.NotFound', `The routeTable ID '${id}' does not exist`],
    eni: ['InvalidNetworkInterfaceID.NotFound', `The networkInterface ID '${id}' does not exist`],
  };
  const prefix = id.slice(0, Math.max(0, id.indexOf('-')));
  const known = notFound[prefix];
  if (known && ec2.isWellFormed(prefix, id)) throw ec2Error(...known);
  throw ec2Error('InvalidID', `The ID '${id}' is not valid`);
}
