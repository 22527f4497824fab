import {
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  CreateTagsCommand,
  DeleteSecurityGroupCommand,
  DeleteTagsCommand,
  DescribeInstancesCommand,
  DescribeRouteTablesCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
  EC2Client,
  RevokeSecurityGroupIngressCommand,
} from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError } from '../errors.ts';
import { Ec2Adapter } from './ec2-adapter.ts';
import { AwsServiceError } from './errors.ts';

/** The EC2 calls the service controller adds: subnets, route table associations, security groups, tags. */
const client = new EC2Client({ region: 'eu-west-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } });
const ec2 = mockClient(client);
const adapter = new Ec2Adapter(client);

beforeEach(() => {
  ec2.reset();
});

describe('Ec2Adapter subnets and route tables', () => {
  it('describes subnets by filters (never SubnetIds, which fail on an unknown ID), every page', async () => {
    ec2
      .on(DescribeSubnetsCommand)
      .resolvesOnce({
        Subnets: [
          {
            SubnetId: 'subnet-a',
            VpcId: 'vpc-1',
            AvailabilityZone: 'eu-west-1a',
            AvailabilityZoneId: 'euw1-az3',
            CidrBlock: '10.0.1.0/24',
            Tags: [{ Key: 'Name', Value: 'public-a' }],
          },
        ],
        NextToken: 't',
      })
      .resolvesOnce({ Subnets: [{ SubnetId: 'subnet-b' }] });
    // subnet-b has no VPC or zone: left out.
    const subnets = await adapter.describeSubnets({ vpcId: 'vpc-1', names: ['public-a'] });
    expect(subnets).toEqual([
      {
        subnetId: 'subnet-a',
        vpcId: 'vpc-1',
        availabilityZone: 'eu-west-1a',
        availabilityZoneId: 'euw1-az3',
        cidrBlock: '10.0.1.0/24',
        tags: { Name: 'public-a' },
      },
    ]);
    expect(ec2.commandCalls(DescribeSubnetsCommand).map((c) => c.args[0].input)).toEqual([
      {
        Filters: [
          { Name: 'vpc-id', Values: ['vpc-1'] },
          { Name: 'tag:Name', Values: ['public-a'] },
        ],
        MaxResults: 1000,
        NextToken: undefined,
      },
      {
        Filters: [
          { Name: 'vpc-id', Values: ['vpc-1'] },
          { Name: 'tag:Name', Values: ['public-a'] },
        ],
        MaxResults: 1000,
        NextToken: 't',
      },
    ]);
    expect(await adapter.describeSubnets({ subnetIds: [] })).toEqual([]);
    expect(ec2.commandCalls(DescribeSubnetsCommand)).toHaveLength(2);
  });

  it('reads the associated IPv6 CIDR blocks of a subnet, not those coming or going', async () => {
    ec2.on(DescribeSubnetsCommand).resolves({
      Subnets: [
        {
          SubnetId: 'subnet-a',
          VpcId: 'vpc-1',
          AvailabilityZone: 'eu-west-1a',
          Ipv6CidrBlockAssociationSet: [
            { Ipv6CidrBlock: '2001:db8:0:1::/64', Ipv6CidrBlockState: { State: 'associated' } },
            { Ipv6CidrBlock: '2001:db8:0:2::/64', Ipv6CidrBlockState: { State: 'disassociating' } },
            { Ipv6CidrBlock: '2001:db8:0:3::/64', Ipv6CidrBlockState: { State: 'associating' } },
          ],
        },
        {
          SubnetId: 'subnet-b',
          VpcId: 'vpc-1',
          AvailabilityZone: 'eu-west-1b',
          Ipv6CidrBlockAssociationSet: [
            { Ipv6CidrBlock: '2001:db8:0:4::/64', Ipv6CidrBlockState: { State: 'disassociated' } },
          ],
        },
      ],
    });
    const [a, b] = await adapter.describeSubnets({ vpcId: 'vpc-1' });
    expect(a?.ipv6CidrBlocks).toEqual(['2001:db8:0:1::/64']);
    expect(b).not.toHaveProperty('ipv6CidrBlocks');
  });

  it('reads route tables of a VPC with their subnet and main associations', async () => {
    ec2.on(DescribeRouteTablesCommand).resolves({
      RouteTables: [
        {
          RouteTableId: 'rtb-1',
          VpcId: 'vpc-1',
          Routes: [{ DestinationCidrBlock: '0.0.0.0/0', GatewayId: 'igw-1', State: 'active', Origin: 'CreateRoute' }],
          Associations: [{ SubnetId: 'subnet-a', Main: false }, { Main: true }, { GatewayId: 'igw-1', Main: false }],
        },
      ],
    });
    const [table] = await adapter.findRouteTablesByVpc('vpc-1');
    expect(table?.associations).toEqual([
      { subnetId: 'subnet-a', main: false },
      { subnetId: undefined, main: true },
    ]);
    expect(ec2.commandCalls(DescribeRouteTablesCommand)[0]!.args[0].input).toMatchObject({
      Filters: [{ Name: 'vpc-id', Values: ['vpc-1'] }],
    });
  });

  it('reads the security groups of each network interface', async () => {
    ec2.on(DescribeInstancesCommand).resolves({
      Reservations: [
        {
          Instances: [
            {
              InstanceId: 'i-0123456789abcdef0',
              State: { Name: 'running' },
              NetworkInterfaces: [
                { NetworkInterfaceId: 'eni-1', Status: 'in-use', Groups: [{ GroupId: 'sg-1', GroupName: 'nodes' }] },
              ],
            },
          ],
        },
      ],
    });
    const found = await adapter.describeInstances(['i-0123456789abcdef0']);
    expect(found.get('i-0123456789abcdef0')?.networkInterfaces[0]?.securityGroupIds).toEqual(['sg-1']);
  });
});

describe('Ec2Adapter security groups', () => {
  it('finds groups by every filter given, one rule per source', async () => {
    ec2.on(DescribeSecurityGroupsCommand).resolves({
      SecurityGroups: [
        {
          GroupId: 'sg-1',
          GroupName: 'nodes',
          VpcId: 'vpc-1',
          Description: 'd',
          Tags: [{ Key: 'kubernetes.io/cluster/prod', Value: 'owned' }],
          IpPermissions: [
            {
              IpProtocol: 'tcp',
              FromPort: 30080,
              ToPort: 30080,
              IpRanges: [{ CidrIp: '10.0.0.0/16' }],
              UserIdGroupPairs: [{ GroupId: 'sg-lb', Description: 'kubernetes.io/rule/nlb/client=web' }],
            },
            { IpProtocol: '-1', UserIdGroupPairs: [{ GroupId: 'sg-1' }] },
            { IpProtocol: '58', FromPort: -1, ToPort: -1, Ipv6Ranges: [{ CidrIpv6: '::/0' }] },
            { IpProtocol: '50', IpRanges: [{ CidrIp: '0.0.0.0/0' }] },
          ],
        },
      ],
    });
    const groups = await adapter.findSecurityGroups({
      vpcId: 'vpc-1',
      groupNames: ['nodes'],
      tags: { 'kubernetes.io/cluster/prod': undefined, 'kubernetes.io/service-name': 'ns/web' },
      referencingGroupIds: ['sg-lb'],
    });
    expect(groups[0]?.ingress).toEqual([
      { protocol: 'tcp', fromPort: 30080, toPort: 30080, cidrIpv4: '10.0.0.0/16' },
      {
        protocol: 'tcp',
        fromPort: 30080,
        toPort: 30080,
        sourceGroupId: 'sg-lb',
        description: 'kubernetes.io/rule/nlb/client=web',
      },
      { protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId: 'sg-1' },
      { protocol: 'icmpv6', fromPort: -1, toPort: -1, cidrIpv6: '::/0' },
    ]);
    expect(ec2.commandCalls(DescribeSecurityGroupsCommand)[0]!.args[0].input.Filters).toEqual([
      { Name: 'vpc-id', Values: ['vpc-1'] },
      { Name: 'group-name', Values: ['nodes'] },
      { Name: 'ip-permission.group-id', Values: ['sg-lb'] },
      { Name: 'tag-key', Values: ['kubernetes.io/cluster/prod'] },
      { Name: 'tag:kubernetes.io/service-name', Values: ['ns/web'] },
    ]);
    expect(await adapter.findSecurityGroups({ groupIds: [] })).toEqual([]);
  });

  it('creates a group tagged in the same call; a duplicate name is name-taken', async () => {
    ec2
      .on(CreateSecurityGroupCommand)
      .resolvesOnce({ GroupId: 'sg-new' })
      .rejectsOnce(new AwsServiceError('InvalidGroup.Duplicate', 'exists'));
    const input = { groupName: 'k8s-elb-web', description: 'd', vpcId: 'vpc-1', tags: { a: 'b' } };
    expect(await adapter.createSecurityGroup(input)).toEqual({ groupId: 'sg-new' });
    expect(await adapter.createSecurityGroup(input)).toBe('name-taken');
    expect(ec2.commandCalls(CreateSecurityGroupCommand)[0]!.args[0].input).toEqual({
      GroupName: 'k8s-elb-web',
      Description: 'd',
      VpcId: 'vpc-1',
      TagSpecifications: [{ ResourceType: 'security-group', Tags: [{ Key: 'a', Value: 'b' }] }],
    });
  });

  it('authorizes one permission per rule; a duplicate makes it go rule by rule, skipping the existing ones', async () => {
    ec2
      .on(AuthorizeSecurityGroupIngressCommand)
      .rejectsOnce(new AwsServiceError('InvalidPermission.Duplicate', 'already exists'))
      .rejectsOnce(new AwsServiceError('InvalidPermission.Duplicate', 'already exists'))
      .resolves({});
    await adapter.authorizeSecurityGroupIngress('sg-1', [
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' },
      { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv6: '::/0', description: 'mtu' },
      { protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId: 'sg-2' },
    ]);
    const inputs = ec2.commandCalls(AuthorizeSecurityGroupIngressCommand).map((c) => c.args[0].input);
    expect(inputs).toHaveLength(4);
    expect(inputs[0]).toEqual({
      GroupId: 'sg-1',
      IpPermissions: [
        { IpProtocol: 'tcp', FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: '0.0.0.0/0' }] },
        { IpProtocol: 'icmp', FromPort: 3, ToPort: 4, Ipv6Ranges: [{ CidrIpv6: '::/0', Description: 'mtu' }] },
        { IpProtocol: '-1', UserIdGroupPairs: [{ GroupId: 'sg-2' }] },
      ],
    });
    await adapter.authorizeSecurityGroupIngress('sg-1', []);
    expect(ec2.commandCalls(AuthorizeSecurityGroupIngressCommand)).toHaveLength(4);
  });

  it('revoking a rule that is gone is fine; deleting: not-found, or DependencyViolation as a retryable error', async () => {
    ec2.on(RevokeSecurityGroupIngressCommand).rejects(new AwsServiceError('InvalidPermission.NotFound', 'gone'));
    await expect(
      adapter.revokeSecurityGroupIngress('sg-1', [{ protocol: 'tcp', fromPort: 1, toPort: 1, cidrIpv4: '0.0.0.0/0' }]),
    ).resolves.toBeUndefined();
    ec2
      .on(DeleteSecurityGroupCommand)
      .resolvesOnce({})
      .rejectsOnce(new AwsServiceError('InvalidGroup.NotFound', 'gone'))
      .rejectsOnce(new AwsServiceError('DependencyViolation', 'resource sg-1 has a dependent object'));
    expect(await adapter.deleteSecurityGroup('sg-1')).toBe('deleted');
    expect(await adapter.deleteSecurityGroup('sg-1')).toBe('not-found');
    expect(await adapter.deleteSecurityGroup('sg-1').catch((e: unknown) => e)).toBeInstanceOf(RetryableError);
  });

  it('revoking several rules of which one is gone goes rule by rule, so the others are still removed', async () => {
    ec2
      .on(RevokeSecurityGroupIngressCommand)
      .rejectsOnce(new AwsServiceError('InvalidPermission.NotFound', 'The specified rule does not exist'))
      .resolvesOnce({})
      .rejectsOnce(new AwsServiceError('InvalidPermission.NotFound', 'The specified rule does not exist'));
    const kept = { protocol: 'tcp' as const, fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' };
    const gone = { protocol: 'tcp' as const, fromPort: 81, toPort: 81, cidrIpv4: '0.0.0.0/0' };
    await adapter.revokeSecurityGroupIngress('sg-1', [kept, gone]);
    expect(ec2.commandCalls(RevokeSecurityGroupIngressCommand).map((c) => c.args[0].input.IpPermissions)).toEqual([
      [
        { IpProtocol: 'tcp', FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: '0.0.0.0/0' }] },
        { IpProtocol: 'tcp', FromPort: 81, ToPort: 81, IpRanges: [{ CidrIp: '0.0.0.0/0' }] },
      ],
      [{ IpProtocol: 'tcp', FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: '0.0.0.0/0' }] }],
      [{ IpProtocol: 'tcp', FromPort: 81, ToPort: 81, IpRanges: [{ CidrIp: '0.0.0.0/0' }] }],
    ]);
  });

  it('tags resources', async () => {
    ec2.on(CreateTagsCommand).resolves({});
    await adapter.createTags(['sg-1'], { team: 'web' });
    await adapter.createTags(['sg-1'], {});
    expect(ec2.commandCalls(CreateTagsCommand).map((c) => c.args[0].input)).toEqual([
      { Resources: ['sg-1'], Tags: [{ Key: 'team', Value: 'web' }] },
    ]);
  });

  it('deletes tag keys without values (any value goes); nothing to delete makes no call', async () => {
    ec2.on(DeleteTagsCommand).resolvesOnce({}).rejects(new AwsServiceError('InvalidID', "The ID 'sg-x' is not valid"));
    await adapter.deleteTags(['sg-1', 'sg-2'], ['team', 'old', 'team']);
    await adapter.deleteTags(['sg-1'], []);
    await adapter.deleteTags([], ['team']);
    expect(ec2.commandCalls(DeleteTagsCommand).map((c) => c.args[0].input)).toEqual([
      { Resources: ['sg-1', 'sg-2'], Tags: [{ Key: 'team' }, { Key: 'old' }] },
    ]);
    const err = await adapter.deleteTags(['sg-x'], ['team']).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/removing tags team from sg-x: InvalidID/);
  });
});
