import {
  AuthorizeSecurityGroupIngressCommand,
  DescribeSecurityGroupsCommand,
  RevokeSecurityGroupIngressCommand,
} from '@aws-sdk/client-ec2';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../clock.ts';
import { RetryableError, TerminalError } from '../../../errors.ts';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import type { SecurityGroupRule } from '../../ec2-port.ts';
import { awsErrorCode } from '../../errors.ts';
import { FakeEc2, makeInstance, makeRouteTable, makeSubnet } from './fake-ec2.ts';

/** Security groups, subnets and tags: the port through Ec2Adapter, and the wire where EC2's rules matter. */
let clock: FakeClock;
let fake: FakeEc2;
let ec2: Ec2Adapter;
beforeEach(() => {
  clock = new FakeClock();
  fake = new FakeEc2(clock);
  ec2 = new Ec2Adapter(fake);
});

const VPC = 'vpc-0a1b2c3d';
const codeOf = (err: unknown) => awsErrorCode((err as Error).cause);
async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
}
const create = async (name: string, tags: Record<string, string> = {}) => {
  const created = await ec2.createSecurityGroup({ groupName: name, description: 'd', vpcId: VPC, tags });
  if (created === 'name-taken') throw new Error('taken');
  return created.groupId;
};
const tcp = (port: number, source: Partial<SecurityGroupRule> = { cidrIpv4: '0.0.0.0/0' }): SecurityGroupRule => ({
  protocol: 'tcp',
  fromPort: port,
  toPort: port,
  ...source,
});
const ports = (groupId: string) => fake.securityGroups.get(groupId)!.ingress.map((r) => r.fromPort);

describe('FakeEc2 security groups', () => {
  it('creates tagged groups; names are unique per VPC; unknown IDs are simply absent', async () => {
    const id = await create('lb', { owner: 'me' });
    expect(await ec2.createSecurityGroup({ groupName: 'lb', description: '', vpcId: VPC, tags: {} })).toBe(
      'name-taken',
    );
    expect(await ec2.createSecurityGroup({ groupName: 'lb', description: '', vpcId: 'vpc-other', tags: {} })).not.toBe(
      'name-taken',
    );
    expect((await ec2.findSecurityGroups({ tags: { owner: 'me' } })).map((g) => g.groupId)).toEqual([id]);
    expect(await ec2.findSecurityGroups({ groupIds: ['sg-0000000000000ffff'] })).toEqual([]);
    expect(fake.writeCallCount()).toBe(3);
    expect(
      codeOf(await failure(ec2.createSecurityGroup({ groupName: 'sg-1', description: '', vpcId: VPC, tags: {} }))),
    ).toBe('InvalidParameterValue');
  });

  it('adding rules the group has (whatever their description) adds only the others: EC2 refuses the whole call, the adapter goes rule by rule', async () => {
    const id = await create('lb');
    await ec2.authorizeSecurityGroupIngress(id, [{ ...tcp(80), description: 'a' }]);
    fake.resetCalls();
    await ec2.authorizeSecurityGroupIngress(id, [{ ...tcp(80), description: 'b' }, tcp(443)]);
    expect(fake.securityGroups.get(id)!.ingress.map((r) => `${r.fromPort}:${r.description ?? ''}`)).toEqual([
      '80:a',
      '443:',
    ]);
    // The refused call, then one per rule.
    expect(fake.callCount('AuthorizeSecurityGroupIngress')).toBe(3);
    const raw = await failure(
      fake.send(
        new AuthorizeSecurityGroupIngressCommand({
          GroupId: id,
          IpPermissions: [{ IpProtocol: 'tcp', FromPort: 80, ToPort: 80, IpRanges: [{ CidrIp: '0.0.0.0/0' }] }],
        }),
      ),
    );
    expect([raw.name, raw.message]).toEqual([
      'InvalidPermission.Duplicate',
      'the specified rule "peer: 0.0.0.0/0, TCP, from port: 80, to port: 80, ALLOW" already exists',
    ]);
  });

  it('refuses the same rule twice in one call, and rules beyond the quota (terminal)', async () => {
    const id = await create('lb');
    expect(
      codeOf(await failure(ec2.authorizeSecurityGroupIngress(id, [tcp(80), { ...tcp(80), description: 'x' }]))),
    ).toBe('InvalidParameterValue');
    fake.securityGroupRuleLimit = 3;
    await ec2.authorizeSecurityGroupIngress(id, [tcp(1), tcp(2)]);
    const full = await failure(ec2.authorizeSecurityGroupIngress(id, [tcp(3), tcp(4)]));
    expect(full).toBeInstanceOf(TerminalError);
    expect(codeOf(full)).toBe('RulesPerSecurityGroupLimitExceeded');
    expect(ports(id)).toEqual([1, 2]);
  });

  it('removing rules the group does not have is no error, and the ones it has still go', async () => {
    const id = await create('lb');
    await ec2.authorizeSecurityGroupIngress(id, [tcp(80), tcp(443)]);
    await ec2.revokeSecurityGroupIngress(id, [tcp(80), tcp(9)]);
    await ec2.revokeSecurityGroupIngress(id, [tcp(9)]);
    expect(ports(id)).toEqual([443]);
    // On the wire, EC2 refuses the whole call for the unknown rule and revokes nothing.
    const raw = await failure(
      fake.send(
        new RevokeSecurityGroupIngressCommand({
          GroupId: id,
          IpPermissions: [
            { IpProtocol: 'tcp', FromPort: 443, ToPort: 443, IpRanges: [{ CidrIp: '0.0.0.0/0' }] },
            { IpProtocol: 'tcp', FromPort: 9, ToPort: 9, IpRanges: [{ CidrIp: '0.0.0.0/0' }] },
          ],
        }),
      ),
    );
    expect(raw.name).toBe('InvalidPermission.NotFound');
    expect(ports(id)).toEqual([443]);
  });

  it('states rules grouped per protocol and port range, all traffic without ports; read back one rule per source', async () => {
    const id = await create('lb');
    const rules: SecurityGroupRule[] = [
      tcp(80),
      { protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId: id },
      tcp(443),
      { ...tcp(80, { cidrIpv6: '::/0' }), description: 'v6' },
      { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: '10.0.0.0/16' },
    ];
    await ec2.authorizeSecurityGroupIngress(id, rules);
    const described = await fake.send(new DescribeSecurityGroupsCommand({ GroupIds: [id] }));
    expect(described.SecurityGroups?.[0]?.IpPermissions?.map((p) => [p.IpProtocol, p.FromPort, p.ToPort])).toEqual([
      ['tcp', 80, 80],
      ['-1', undefined, undefined],
      ['tcp', 443, 443],
      ['icmp', 3, 4],
    ]);
    const [read] = await ec2.findSecurityGroups({ groupIds: [id] });
    expect(new Set(read!.ingress)).toEqual(new Set(rules));
  });

  it('deletion: DependencyViolation while a holder (network interfaces) or another rule or an instance uses it', async () => {
    const lb = await create('lb');
    const nodes = await create('nodes');
    fake.holdSecurityGroups('arn:lb', [lb]);
    expect(codeOf(await failure(ec2.deleteSecurityGroup(lb)))).toBe('DependencyViolation');
    fake.releaseSecurityGroups('arn:lb', 60_000);
    const held = await failure(ec2.deleteSecurityGroup(lb));
    expect(held).toBeInstanceOf(RetryableError);
    clock.advance(60_000);
    await ec2.authorizeSecurityGroupIngress(nodes, [tcp(1, { sourceGroupId: lb })]);
    expect((await failure(ec2.deleteSecurityGroup(lb))).message).toMatch(/referenced by/);
    expect((await ec2.findSecurityGroups({ referencingGroupIds: [lb] })).map((g) => g.groupId)).toEqual([nodes]);
    await ec2.revokeSecurityGroupIngress(nodes, [tcp(1, { sourceGroupId: lb })]);
    expect(await ec2.deleteSecurityGroup(lb)).toBe('deleted');
    expect(await ec2.deleteSecurityGroup(lb)).toBe('not-found');

    const base = makeInstance({ index: 1 });
    fake.putInstance({
      ...base,
      networkInterfaces: base.networkInterfaces.map((e) => ({ ...e, securityGroupIds: [nodes] })),
    });
    expect(codeOf(await failure(ec2.deleteSecurityGroup(nodes)))).toBe('DependencyViolation');
  });

  it('a source group EC2 does not know is InvalidGroup.NotFound; an ID it cannot read is Malformed (terminal)', async () => {
    const id = await create('lb');
    const unknown = await failure(
      ec2.authorizeSecurityGroupIngress(id, [tcp(1, { sourceGroupId: 'sg-0000000000000ffff' })]),
    );
    const malformed = await failure(ec2.authorizeSecurityGroupIngress(id, [tcp(1, { sourceGroupId: 'sg-nope' })]));
    expect([codeOf(unknown), codeOf(malformed)]).toEqual(['InvalidGroup.NotFound', 'InvalidGroupId.Malformed']);
    expect(malformed).toBeInstanceOf(TerminalError);
    expect(ports(id)).toEqual([]);
  });
});

describe('FakeEc2 subnets and route tables', () => {
  it('describes subnets by VPC, ID or Name; route tables by VPC with associations', async () => {
    fake.putSubnet(makeSubnet({ index: 1, tags: { Name: 'one' } }));
    fake.putSubnet(makeSubnet({ index: 2, vpcId: 'vpc-other' }));
    fake.putRouteTable({ ...makeRouteTable(), associations: [{ main: true }] });
    expect((await ec2.describeSubnets({ vpcId: VPC })).map((s) => s.tags.Name)).toEqual(['one']);
    expect(await ec2.describeSubnets({ names: ['one'] })).toHaveLength(1);
    expect(
      await ec2.describeSubnets({ subnetIds: [makeSubnet({ index: 2 }).subnetId, 'subnet-0000000000000ffff'] }),
    ).toEqual([makeSubnet({ index: 2, vpcId: 'vpc-other' })]);
    expect(await ec2.describeSubnets({ subnetIds: [] })).toEqual([]);
    expect((await ec2.findRouteTablesByVpc(VPC))[0]?.associations).toEqual([{ main: true }]);
    // Tables put without associations report none.
    fake.putRouteTable(makeRouteTable({ routeTableId: 'rtb-0000000000000000b' }));
    expect((await ec2.describeRouteTable('rtb-0000000000000000b'))?.associations).toBeUndefined();
  });

  it('makes dual-stack subnets on request', async () => {
    fake.putSubnet(makeSubnet({ index: 10, ipv6: true }));
    fake.putSubnet(makeSubnet({ index: 11 }));
    const [v6, v4] = await ec2.describeSubnets({ vpcId: VPC });
    expect(v6?.ipv6CidrBlocks).toEqual(['2001:db8:0:a::/64']);
    expect(v4?.ipv6CidrBlocks).toBeUndefined();
  });
});

describe('FakeEc2 tags', () => {
  it('tags EC2 resources; an ID it cannot read is InvalidID, a well-formed unknown one its type NotFound', async () => {
    const id = await create('lb');
    await ec2.createTags([id], { a: 'b' });
    expect(fake.securityGroups.get(id)!.tags).toEqual({ a: 'b' });
    expect(codeOf(await failure(ec2.createTags(['sg-nope'], { a: 'b' })))).toBe('InvalidID');
    expect(codeOf(await failure(ec2.createTags(['subnet-0000000000000ffff'], { a: 'b' })))).toBe(
      'InvalidSubnetID.NotFound',
    );
    expect(codeOf(await failure(ec2.createTags([id], { 'aws:cloudformation:stack': 'x' })))).toBe(
      'InvalidParameterValue',
    );
  });

  it('deletes tag keys whatever their values, from groups and subnets alike, counted as a write', async () => {
    const id = await create('lb', { a: '1', b: '2', keep: 'yes' });
    const subnet = fake.putSubnet(makeSubnet({ index: 1, tags: { a: 'x' } }));
    fake.resetCalls();
    await ec2.deleteTags([id, subnet.subnetId], ['a', 'b', 'absent']);
    expect(fake.securityGroups.get(id)!.tags).toEqual({ keep: 'yes' });
    expect(fake.subnets.get(subnet.subnetId)!.tags).toEqual({});
    await ec2.deleteTags([id], []);
    await ec2.deleteTags([], ['keep']);
    expect(fake.callCount('DeleteTags')).toBe(1);
    expect(fake.writeCallCount()).toBe(1);
  });

  it('deleting tags of an unknown resource removes nothing anywhere', async () => {
    const id = await create('lb', { a: '1' });
    expect(codeOf(await failure(ec2.deleteTags([id, 'sg-nope'], ['a'])))).toBe('InvalidID');
    expect(fake.securityGroups.get(id)!.tags).toEqual({ a: '1' });
  });

  it('deleting tags can be throttled like other calls', async () => {
    const id = await create('lb', { a: '1' });
    fake.throttle('DeleteTags', 1);
    expect(codeOf(await failure(ec2.deleteTags([id], ['a'])))).toBe('RequestLimitExceeded');
    await ec2.deleteTags([id], ['a']);
    expect(fake.securityGroups.get(id)!.tags).toEqual({});
  });
});
