import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../clock.ts';
import { RetryableError } from '../../../errors.ts';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import type { SecurityGroupRule } from '../../ec2-port.ts';
import { awsErrorCode } from '../../errors.ts';
import { FakeEc2, NewResourceWindow } from './fake-ec2.ts';

const VPC = 'vpc-0a1b2c3d';
const RULE: SecurityGroupRule = { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' };

/** Eventual consistency after CreateSecurityGroup, seen through Ec2Adapter as the reconcilers see it. */
let clock: FakeClock;
let fake: FakeEc2;
let ec2: Ec2Adapter;
beforeEach(() => {
  clock = new FakeClock();
  fake = new FakeEc2(clock);
  ec2 = new Ec2Adapter(fake);
  fake.putSecurityGroup({
    groupId: 'sg-0000000000000old',
    groupName: 'old',
    vpcId: VPC,
    description: '',
    tags: {},
    ingress: [],
  });
});

const codeOf = (err: unknown) => awsErrorCode((err as Error).cause);
/** The error a call fails with; a call that succeeds fails the test. */
const failure = async (promise: Promise<unknown>): Promise<Error> => {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
};
const create = async (name = 'lb') => {
  const created = await ec2.createSecurityGroup({ groupName: name, description: 'd', vpcId: VPC, tags: { team: 'a' } });
  if (created === 'name-taken') throw new Error('taken');
  return created.groupId;
};
const found = async (groupId: string) => (await ec2.findSecurityGroups({ groupIds: [groupId] })).map((g) => g.groupId);

describe('FakeEc2 security groups just created (eventual consistency)', () => {
  it('is off by default: a new group is known at once', async () => {
    const id = await create();
    expect(await found(id)).toEqual([id]);
    await ec2.authorizeSecurityGroupIngress(id, [RULE]);
    expect(fake.securityGroups.get(id)!.ingress).toHaveLength(1);
  });

  it('inside newSecurityGroupInvisibleMs every call naming the group answers InvalidGroup.NotFound and changes nothing', async () => {
    fake.newSecurityGroupInvisibleMs = 5_000;
    const id = await create();
    clock.advance(4_999);

    expect(await found(id)).toEqual([]);
    expect(await ec2.findSecurityGroups({ vpcId: VPC, tags: { team: 'a' } })).toEqual([]);
    const errors = [
      await failure(ec2.authorizeSecurityGroupIngress(id, [RULE])),
      await failure(ec2.revokeSecurityGroupIngress(id, [RULE])),
      await failure(ec2.createTags([id], { b: '1' })),
      await failure(ec2.deleteTags([id], ['team'])),
      // A visible group's rule naming the hidden one as its source.
      await failure(
        ec2.authorizeSecurityGroupIngress('sg-0000000000000old', [{ ...RULE, cidrIpv4: undefined, sourceGroupId: id }]),
      ),
    ];
    expect(errors.map(codeOf)).toEqual(Array(5).fill('InvalidGroup.NotFound'));
    for (const err of errors) expect(err).toBeInstanceOf(RetryableError);
    // The adapter turns InvalidGroup.NotFound from DeleteSecurityGroup into 'not-found': the group stays.
    expect(await ec2.deleteSecurityGroup(id)).toBe('not-found');

    expect(fake.securityGroups.get(id)).toMatchObject({ tags: { team: 'a' }, ingress: [] });
    expect(fake.securityGroups.get('sg-0000000000000old')!.ingress).toEqual([]);
  });

  it('answers exactly what it answers for a group that does not exist', async () => {
    fake.newSecurityGroupInvisibleMs = 5_000;
    const id = await create();
    const hidden = await failure(ec2.authorizeSecurityGroupIngress(id, [RULE]));
    const unknown = await failure(ec2.authorizeSecurityGroupIngress('sg-0000000000000ffff', [RULE]));
    expect(hidden.constructor).toBe(unknown.constructor);
    expect(hidden.message).toBe(unknown.message.replaceAll('sg-0000000000000ffff', id));
    expect((hidden.cause as { $metadata: unknown }).$metadata).toEqual({ httpStatusCode: 400 });
  });

  it('a second create of the same name while hidden is still InvalidGroup.Duplicate (name-taken)', async () => {
    fake.newSecurityGroupInvisibleMs = 5_000;
    await create('lb');
    expect(await ec2.createSecurityGroup({ groupName: 'lb', description: 'd', vpcId: VPC, tags: {} })).toBe(
      'name-taken',
    );
    expect([...fake.securityGroups.values()].filter((g) => g.groupName === 'lb')).toHaveLength(1);
  });

  it('after the window the group is described, and rules, tags and deletion work', async () => {
    fake.newSecurityGroupInvisibleMs = 5_000;
    const id = await create();
    clock.advance(5_000);
    expect(await found(id)).toEqual([id]);
    await ec2.authorizeSecurityGroupIngress(id, [RULE]);
    await ec2.createTags([id], { b: '1' });
    expect(fake.securityGroups.get(id)).toMatchObject({ tags: { team: 'a', b: '1' }, ingress: [RULE] });
    expect(await ec2.deleteSecurityGroup(id)).toBe('deleted');
    expect(fake.securityGroups.has(id)).toBe(false);
  });

  it('newSecurityGroupInvisibleCalls hides it from that many lookups, with no time passing', async () => {
    fake.newSecurityGroupInvisibleCalls = 2;
    const id = await create();
    expect(await found(id)).toEqual([]);
    expect(codeOf(await failure(ec2.authorizeSecurityGroupIngress(id, [RULE])))).toBe('InvalidGroup.NotFound');
    expect(await found(id)).toEqual([id]);
    // Lookups of other groups do not use up its window.
    fake.newSecurityGroupInvisibleCalls = 1;
    const other = await create('other');
    await ec2.findSecurityGroups({ groupIds: ['sg-0000000000000old'] });
    expect(await found(other)).toEqual([]);
  });

  it('groups added with putSecurityGroup are never hidden', async () => {
    fake.newSecurityGroupInvisibleMs = 5_000;
    fake.putSecurityGroup({
      groupId: 'sg-0000000000000put',
      groupName: 'put',
      vpcId: VPC,
      description: '',
      tags: {},
      ingress: [],
    });
    expect(await found('sg-0000000000000put')).toEqual(['sg-0000000000000put']);
  });
});

describe('NewResourceWindow', () => {
  it('ends with the time or the lookups, whichever comes first; 0 and 0 hides nothing', () => {
    const window = new NewResourceWindow(() => clock.now());
    window.start('by-time', 1_000, 10);
    window.start('by-calls', 1_000_000, 1);
    window.start('never', 0, 0);
    expect([window.hides('by-time'), window.hides('by-calls'), window.hides('never')]).toEqual([true, true, false]);
    expect(window.hides('by-calls')).toBe(false);
    clock.advance(1_000);
    expect(window.hides('by-time')).toBe(false);
  });
});
