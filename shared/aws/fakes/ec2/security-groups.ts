import type {
  AuthorizeSecurityGroupIngressRequest,
  CreateSecurityGroupRequest,
  DeleteSecurityGroupRequest,
  DescribeSecurityGroupsRequest,
  DescribeSecurityGroupsResult,
  RevokeSecurityGroupIngressRequest,
  SecurityGroup as SdkSecurityGroup,
} from '@aws-sdk/client-ec2';
import type { SecurityGroup } from '../../ec2-port.ts';
import { describeRule, fromIpPermissions, sameRule, toIpPermissions } from './rules.ts';
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

const GROUP_FILTERS = [
  'group-id',
  'group-name',
  'vpc-id',
  'description',
  'owner-id',
  'ip-permission.group-id',
  'ip-permission.cidr',
  'ip-permission.ipv6-cidr',
  'ip-permission.protocol',
  'ip-permission.from-port',
  'ip-permission.to-port',
];

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSecurityGroups.html
 * A listed ID EC2 does not know (or does not show yet) fails the whole call (InvalidGroup.NotFound); filtered
 * calls page by 5..1000 and leave out groups still hidden after their creation. `ip-permission.*` filters look at
 * inbound rules.
 */
export function describeSecurityGroups(
  ec2: Ec2State,
  input: DescribeSecurityGroupsRequest,
): DescribeSecurityGroupsResult {
  acceptOnly('DescribeSecurityGroups', input, ['GroupIds', 'Filters', 'MaxResults', 'NextToken']);
  checkFilters(input.Filters, GROUP_FILTERS);
  const listed = input.GroupIds?.length ? [...new Set(input.GroupIds)].map((id) => visibleGroup(ec2, id)) : undefined;
  const matching = (listed ?? [...ec2.securityGroups.values()]).filter(
    (g) =>
      matchesFilters(input.Filters, groupFields(g), g.tags) &&
      // A lookup that would have found a hidden group misses it (and uses up one of its invisible calls).
      (listed !== undefined || ec2.visibleSecurityGroup(g.groupId) !== undefined),
  );
  const { items, NextToken } = page('DescribeSecurityGroups', input, matching, { min: 5, max: 1000 });
  return { SecurityGroups: items.map(toSdkGroup), ...(NextToken ? { NextToken } : {}) };
}

function groupFields(g: SecurityGroup) {
  return {
    'group-id': [g.groupId],
    'group-name': [g.groupName],
    'vpc-id': [g.vpcId],
    description: [g.description],
    'owner-id': [FAKE_ACCOUNT_ID],
    'ip-permission.group-id': g.ingress.map((r) => r.sourceGroupId),
    'ip-permission.cidr': g.ingress.map((r) => r.cidrIpv4),
    'ip-permission.ipv6-cidr': g.ingress.map((r) => r.cidrIpv6),
    'ip-permission.protocol': g.ingress.map((r) => r.protocol),
    'ip-permission.from-port': g.ingress.map((r) => String(r.fromPort)),
    'ip-permission.to-port': g.ingress.map((r) => String(r.toPort)),
  };
}

/** A VPC group's default outbound rule (all traffic anywhere), which the fake never changes. */
function toSdkGroup(g: SecurityGroup): SdkSecurityGroup {
  return {
    GroupId: g.groupId,
    GroupName: g.groupName,
    VpcId: g.vpcId,
    Description: g.description,
    OwnerId: FAKE_ACCOUNT_ID,
    Tags: sdkTags(g.tags),
    IpPermissions: toIpPermissions(g.ingress),
    IpPermissionsEgress: [{ IpProtocol: '-1', IpRanges: [{ CidrIp: '0.0.0.0/0' }] }],
  };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html
 * Names are unique per VPC (InvalidGroup.Duplicate, also while the first is still hidden) and cannot start with
 * `sg-`; tags given in the same call are on the group from the start.
 */
export function createSecurityGroup(
  ec2: Ec2State,
  input: CreateSecurityGroupRequest,
): { GroupId: string; Tags: { Key: string; Value: string }[] } {
  acceptOnly('CreateSecurityGroup', input, ['GroupName', 'Description', 'VpcId', 'TagSpecifications']);
  const { GroupName: name, Description: description, VpcId: vpcId } = input;
  if (name === undefined) throw ec2Error('MissingParameter', 'The request must contain the parameter groupName');
  if (description === undefined) {
    throw ec2Error('MissingParameter', 'The request must contain the parameter groupDescription');
  }
  // The fake has no default VPC.
  if (vpcId === undefined) throw ec2Error('VPCIdNotSpecified', 'No default VPC for this user');
  if (name.length > 255 || name.toLowerCase().startsWith('sg-')) {
    throw ec2Error(
      'InvalidParameterValue',
      `Invalid value '${name}' for groupName. Group names may not be in the format sg-*.`,
    );
  }
  if ([...ec2.securityGroups.values()].some((g) => g.vpcId === vpcId && g.groupName === name)) {
    throw ec2Error('InvalidGroup.Duplicate', `The security group '${name}' already exists for VPC '${vpcId}'`);
  }
  const tags = (input.TagSpecifications ?? []).flatMap((spec) => {
    if (spec.ResourceType !== 'security-group') {
      throw ec2Error(
        'InvalidParameterValue',
        `'${spec.ResourceType}' is not a valid taggable resource type for this operation.`,
      );
    }
    return spec.Tags ?? [];
  });
  checkTagKeys(tags);
  const groupId = ec2.nextId('sg');
  const tagMap = Object.fromEntries(tags.map((t) => [t.Key!, t.Value ?? '']));
  checkTagCount(groupId, tagMap);
  ec2.addCreatedSecurityGroup({ groupId, groupName: name, vpcId, description, tags: tagMap, ingress: [] });
  return { GroupId: groupId, Tags: sdkTags(tagMap) as { Key: string; Value: string }[] };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AuthorizeSecurityGroupIngress.html
 * All or nothing: a rule the group has already (descriptions do not count) fails the whole call
 * (InvalidPermission.Duplicate), and so does the same rule twice in one call (InvalidParameterValue "The same
 * permission must not appear multiple times": https://github.com/hashicorp/terraform-provider-aws/issues/29492),
 * a source group EC2 does not know or show yet, and going past the group's rule quota.
 */
export function authorizeSecurityGroupIngress(ec2: Ec2State, input: AuthorizeSecurityGroupIngressRequest): object {
  acceptOnly('AuthorizeSecurityGroupIngress', input, ['GroupId', 'IpPermissions']);
  const group = visibleGroup(ec2, input.GroupId ?? '');
  const rules = fromIpPermissions(input.IpPermissions ?? []);
  rules.forEach((rule, i) => {
    if (rules.findIndex((r) => sameRule(r, rule)) !== i) {
      throw ec2Error('InvalidParameterValue', 'The same permission must not appear multiple times');
    }
  });
  for (const rule of rules) if (rule.sourceGroupId) visibleGroup(ec2, rule.sourceGroupId);
  const existing = rules.find((rule) => group.ingress.some((r) => sameRule(r, rule)));
  if (existing) {
    throw ec2Error('InvalidPermission.Duplicate', `the specified rule "${describeRule(existing)}" already exists`);
  }
  if (group.ingress.length + rules.length > ec2.securityGroupRuleLimit) {
    throw ec2Error(
      'RulesPerSecurityGroupLimitExceeded',
      'The maximum number of rules per security group has been reached.',
    );
  }
  group.ingress.push(...rules);
  return { Return: true };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RevokeSecurityGroupIngress.html
 * In a VPC other than the default one (the fake has no default VPC), a rule the group does not have fails the
 * whole call with InvalidPermission.NotFound and no rule is revoked. A rule is matched without its description.
 */
export function revokeSecurityGroupIngress(ec2: Ec2State, input: RevokeSecurityGroupIngressRequest): object {
  acceptOnly('RevokeSecurityGroupIngress', input, ['GroupId', 'IpPermissions']);
  const group = visibleGroup(ec2, input.GroupId ?? '');
  const rules = fromIpPermissions(input.IpPermissions ?? []);
  const unknown = rules.find((rule) => !group.ingress.some((r) => sameRule(r, rule)));
  if (unknown) {
    throw ec2Error(
      'InvalidPermission.NotFound',
      `The specified rule does not exist in this security group: "${describeRule(unknown)}"`,
    );
  }
  group.ingress = group.ingress.filter((r) => !rules.some((rule) => sameRule(r, rule)));
  return { Return: true };
}

/**
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSecurityGroup.html
 * DependencyViolation while network interfaces use the group (a load balancer's drain for minutes after it is
 * deleted) or another group's rule names it; a group still hidden after its creation is InvalidGroup.NotFound and
 * stays.
 */
export function deleteSecurityGroup(ec2: Ec2State, input: DeleteSecurityGroupRequest): object {
  acceptOnly('DeleteSecurityGroup', input, ['GroupId']);
  const groupId = input.GroupId ?? '';
  visibleGroup(ec2, groupId);
  if (ec2.securityGroupInUse(groupId)) {
    throw ec2Error('DependencyViolation', `resource ${groupId} has a dependent object`);
  }
  const referencedBy = [...ec2.securityGroups.values()].find(
    (g) => g.groupId !== groupId && g.ingress.some((r) => r.sourceGroupId === groupId),
  );
  if (referencedBy) {
    throw ec2Error(
      'DependencyViolation',
      `resource ${groupId} has a dependent object (referenced by ${referencedBy.groupId})`,
    );
  }
  ec2.removeSecurityGroup(groupId);
  return { Return: true, GroupId: groupId };
}

/** The group as a call naming it sees it, or the error EC2 gives: one it does not know and one still hidden alike. */
function visibleGroup(ec2: Ec2State, groupId: string): SecurityGroup {
  const group = ec2.visibleSecurityGroup(groupId);
  if (group) return group;
  if (!ec2.isWellFormed('sg', groupId)) throw ec2Error('InvalidGroupId.Malformed', `Invalid id: "${groupId}"`);
  throw ec2Error('InvalidGroup.NotFound', `The security group '${groupId}' does not exist`);
}
