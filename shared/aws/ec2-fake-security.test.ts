import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { FakeEc2, makeInstance, makeRouteTable, makeSubnet } from './ec2-fake.ts';
import { awsErrorCode } from './errors.ts';

let clock: FakeClock;
let ec2: FakeEc2;
beforeEach(() => {
  clock = new FakeClock();
  ec2 = new FakeEc2(clock);
});

const codeOf = (err: unknown) => awsErrorCode((err as Error).cause);
const create = async (name: string, tags: Record<string, string> = {}) => {
  const created = await ec2.createSecurityGroup({ groupName: name, description: 'd', vpcId: 'vpc-0a1b2c3d', tags });
  if (created === 'name-taken') throw new Error('taken');
  return created.groupId;
};

describe('FakeEc2 security groups', () => {
  it('creates tagged groups; names are unique per VPC', async () => {
    const id = await create('lb', { owner: 'me' });
    expect(await ec2.createSecurityGroup({ groupName: 'lb', description: '', vpcId: 'vpc-0a1b2c3d', tags: {} })).toBe(
      'name-taken',
    );
    expect(await ec2.createSecurityGroup({ groupName: 'lb', description: '', vpcId: 'vpc-other', tags: {} })).not.toBe(
      'name-taken',
    );
    expect((await ec2.findSecurityGroups({ tags: { owner: 'me' } })).map((g) => g.groupId)).toEqual([id]);
    expect(await ec2.findSecurityGroups({ groupIds: ['sg-unknown'] })).toEqual([]);
    expect(ec2.writeCallCount()).toBe(3);
  });

  it('rules: duplicates are no error (identity ignores the description), missing revokes are fine, and the quota holds', async () => {
    const id = await create('lb');
    ec2.securityGroupRuleLimit = 3;
    await ec2.authorizeSecurityGroupIngress(id, [
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0', description: 'a' },
    ]);
    await ec2.authorizeSecurityGroupIngress(id, [
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0', description: 'b' },
      { protocol: 'tcp', fromPort: 443, toPort: 443, cidrIpv4: '0.0.0.0/0' },
    ]);
    expect(ec2.securityGroups.get(id)!.ingress.map((r) => `${r.fromPort}:${r.description ?? ''}`)).toEqual([
      '80:a',
      '443:',
    ]);
    const full = await ec2
      .authorizeSecurityGroupIngress(id, [
        { protocol: 'udp', fromPort: 1, toPort: 1, cidrIpv4: '0.0.0.0/0' },
        { protocol: 'udp', fromPort: 2, toPort: 2, cidrIpv4: '0.0.0.0/0' },
      ])
      .catch((e: unknown) => e);
    expect(codeOf(full)).toBe('RulesPerSecurityGroupLimitExceeded');
    await ec2.revokeSecurityGroupIngress(id, [
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' },
      { protocol: 'tcp', fromPort: 9, toPort: 9, cidrIpv4: '0.0.0.0/0' },
    ]);
    expect(ec2.securityGroups.get(id)!.ingress.map((r) => r.fromPort)).toEqual([443]);
  });

  it('deletion: DependencyViolation while a holder (network interfaces) or another rule or an instance uses it', async () => {
    const lb = await create('lb');
    const nodes = await create('nodes');
    ec2.holdSecurityGroups('arn:lb', [lb]);
    expect(codeOf(await ec2.deleteSecurityGroup(lb).catch((e: unknown) => e))).toBe('DependencyViolation');
    ec2.releaseSecurityGroups('arn:lb', 60_000);
    expect(codeOf(await ec2.deleteSecurityGroup(lb).catch((e: unknown) => e))).toBe('DependencyViolation');
    clock.advance(60_000);
    await ec2.authorizeSecurityGroupIngress(nodes, [{ protocol: 'tcp', fromPort: 1, toPort: 1, sourceGroupId: lb }]);
    expect(((await ec2.deleteSecurityGroup(lb).catch((e: unknown) => e)) as Error).message).toMatch(/referenced by/);
    expect((await ec2.findSecurityGroups({ referencingGroupIds: [lb] })).map((g) => g.groupId)).toEqual([nodes]);
    await ec2.revokeSecurityGroupIngress(nodes, [{ protocol: 'tcp', fromPort: 1, toPort: 1, sourceGroupId: lb }]);
    expect(await ec2.deleteSecurityGroup(lb)).toBe('deleted');
    expect(await ec2.deleteSecurityGroup(lb)).toBe('not-found');

    const base = makeInstance({ index: 1 });
    ec2.putInstance({
      ...base,
      networkInterfaces: base.networkInterfaces.map((e) => ({ ...e, securityGroupIds: [nodes] })),
    });
    expect(codeOf(await ec2.deleteSecurityGroup(nodes).catch((e: unknown) => e))).toBe('DependencyViolation');
  });

  it('authorizing from a group that does not exist is an error', async () => {
    const id = await create('lb');
    expect(
      codeOf(
        await ec2
          .authorizeSecurityGroupIngress(id, [{ protocol: 'tcp', fromPort: 1, toPort: 1, sourceGroupId: 'sg-nope' }])
          .catch((e: unknown) => e),
      ),
    ).toBe('InvalidGroup.NotFound');
  });
});

describe('FakeEc2 subnets and route tables', () => {
  it('describes subnets by VPC, ID or Name; route tables by VPC with associations', async () => {
    ec2.putSubnet(makeSubnet({ index: 1, tags: { Name: 'one' } }));
    ec2.putSubnet(makeSubnet({ index: 2, vpcId: 'vpc-other' }));
    ec2.putRouteTable({ ...makeRouteTable(), associations: [{ main: true }] });
    expect((await ec2.describeSubnets({ vpcId: 'vpc-0a1b2c3d' })).map((s) => s.tags.Name)).toEqual(['one']);
    expect(await ec2.describeSubnets({ names: ['one'] })).toHaveLength(1);
    expect(await ec2.describeSubnets({ subnetIds: [] })).toEqual([]);
    expect((await ec2.findRouteTablesByVpc('vpc-0a1b2c3d'))[0]?.associations).toEqual([{ main: true }]);
    // Tables without associations keep reporting none, as before.
    ec2.putRouteTable(makeRouteTable({ routeTableId: 'rtb-2' }));
    expect((await ec2.describeRouteTable('rtb-2'))?.associations).toBeUndefined();
  });

  it('tags EC2 resources', async () => {
    const id = await create('lb');
    await ec2.createTags([id], { a: 'b' });
    expect(ec2.securityGroups.get(id)!.tags).toEqual({ a: 'b' });
    expect(codeOf(await ec2.createTags(['sg-nope'], { a: 'b' }).catch((e: unknown) => e))).toBe('InvalidID');
  });

  it('deletes tag keys whatever their values, from groups and subnets alike, counted as a write', async () => {
    const id = await create('lb', { a: '1', b: '2', keep: 'yes' });
    const subnet = ec2.putSubnet(makeSubnet({ index: 1, tags: { a: 'x' } }));
    ec2.resetCalls();
    await ec2.deleteTags([id, subnet.subnetId], ['a', 'b', 'absent']);
    expect(ec2.securityGroups.get(id)!.tags).toEqual({ keep: 'yes' });
    expect(ec2.subnets.get(subnet.subnetId)!.tags).toEqual({});
    await ec2.deleteTags([id], []);
    await ec2.deleteTags([], ['keep']);
    expect(ec2.callCount('DeleteTags')).toBe(1);
    expect(ec2.writeCallCount()).toBe(1);
  });

  it('deleting tags of an unknown resource is InvalidID and removes nothing anywhere', async () => {
    const id = await create('lb', { a: '1' });
    const err = await ec2.deleteTags([id, 'sg-nope'], ['a']).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('InvalidID');
    expect(ec2.securityGroups.get(id)!.tags).toEqual({ a: '1' });
  });

  it('deleting tags can be throttled and fail with queued errors like other calls', async () => {
    const id = await create('lb', { a: '1' });
    ec2.throttle('DeleteTags', 1);
    expect(codeOf(await ec2.deleteTags([id], ['a']).catch((e: unknown) => e))).toBe('RequestLimitExceeded');
    await ec2.deleteTags([id], ['a']);
    expect(ec2.securityGroups.get(id)!.tags).toEqual({});
  });

  it('makes dual-stack subnets on request', async () => {
    ec2.putSubnet(makeSubnet({ index: 10, ipv6: true }));
    ec2.putSubnet(makeSubnet({ index: 11 }));
    const [v6, v4] = await ec2.describeSubnets({ vpcId: 'vpc-0a1b2c3d' });
    expect(v6?.ipv6CidrBlocks).toEqual(['2001:db8:0:a::/64']);
    expect(v4?.ipv6CidrBlocks).toBeUndefined();
  });
});
