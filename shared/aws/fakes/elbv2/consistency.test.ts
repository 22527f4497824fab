import { DescribeTargetGroupsCommand } from '@aws-sdk/client-elastic-load-balancing-v2';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError } from '../../../errors.ts';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import { elbv2ErrorCode } from '../../elbv2-adapter.ts';
import type { LoadBalancer, TargetGroup } from '../../elbv2-port.ts';
import { makeInstance } from '../ec2/fake-ec2.ts';
import { codeOf, elbv2World, failure, lbInput, tgInput, VPC } from './testing.ts';

/** The fake ELBv2 API's eventual consistency, through the real adapter: new target groups, and EC2's new groups. */
const instance = makeInstance({ index: 7 });

let w: ReturnType<typeof elbv2World>;
beforeEach(() => {
  w = elbv2World();
  w.ec2.putInstance(instance);
});

const newGroup = async (name: string): Promise<string> => {
  const created = await new Ec2Adapter(w.ec2).createSecurityGroup({
    groupName: name,
    description: 'd',
    vpcId: VPC,
    tags: {},
  });
  if (created === 'name-taken') throw new Error('taken');
  return created.groupId;
};
const lb = (name: string, securityGroups = ['sg-lb']): Promise<LoadBalancer> =>
  w.lb({ name, securityGroups, tags: {} });
const targetGroup = (name: string): Promise<TargetGroup> => w.group({ name, tags: { team: 'a' } });
const target = { id: instance.instanceId, port: 30080 };

describe('FakeElbv2 and security groups EC2 still hides after their creation', () => {
  it('CreateLoadBalancer and SetSecurityGroups answer InvalidSecurityGroup (HTTP 400), as for an unknown group', async () => {
    w.ec2.newSecurityGroupInvisibleMs = 5_000;
    const fresh = await newGroup('fresh');
    const existing = await lb('web');

    const create = await failure(w.elb.createLoadBalancer(lbInput({ name: 'other', securityGroups: [fresh] })));
    const set = await failure(w.elb.setSecurityGroups(existing.arn, ['sg-lb', fresh]));
    const unknown = await failure(
      w.elb.createLoadBalancer(lbInput({ name: 'other', securityGroups: ['sg-0000000000000ffff'] })),
    );
    expect([codeOf(create), codeOf(set)]).toEqual(['InvalidSecurityGroup', 'InvalidSecurityGroup']);
    expect(create.constructor).toBe(unknown.constructor);
    expect(create).toBeInstanceOf(TerminalError);
    expect(create.message).toBe(unknown.message.replaceAll('sg-0000000000000ffff', fresh));
    expect((set.cause as { $metadata: unknown }).$metadata).toEqual({ httpStatusCode: 400 });
    expect(w.fake.loadBalancerNamed('other')).toBeUndefined();
    expect(w.fake.loadBalancerNamed('web')?.securityGroups).toEqual(['sg-lb']);

    w.clock.advance(5_000);
    await w.elb.setSecurityGroups(existing.arn, ['sg-lb', fresh]);
    expect(w.fake.loadBalancerNamed('web')?.securityGroups).toEqual(['sg-lb', fresh]);
    expect((await lb('other', [fresh])).securityGroups).toEqual([fresh]);
  });

  it('with newSecurityGroupInvisibleCalls, each refused create used up one of the lookups', async () => {
    w.ec2.newSecurityGroupInvisibleCalls = 1;
    const fresh = await newGroup('fresh');
    expect(codeOf(await failure(w.elb.createLoadBalancer(lbInput({ securityGroups: [fresh] }))))).toBe(
      'InvalidSecurityGroup',
    );
    expect((await lb('web', [fresh])).securityGroups).toEqual([fresh]);
  });
});

describe('FakeElbv2 target groups just created (eventual consistency)', () => {
  it('is off by default: a new target group can be used at once', async () => {
    const group = await targetGroup('tg');
    await w.elb.registerTargets(group.arn, [target]);
    expect(w.fake.targetsOf(group.arn)).toHaveLength(1);
  });

  it('inside newTargetGroupInvisibleMs every call naming it answers TargetGroupNotFound and changes nothing', async () => {
    w.fake.newTargetGroupInvisibleMs = 10_000;
    const web = await lb('web');
    const old = await targetGroup('old');
    w.clock.advance(10_000);
    const listener = await w.elb.createListener(web.arn, { port: 80, protocol: 'TCP', targetGroupArn: old.arn }, {});
    const group = await targetGroup('tg');
    w.clock.advance(9_999);

    const spec = { port: 81, protocol: 'TCP' as const, targetGroupArn: group.arn };
    const errors = [
      await failure(w.elb.createListener(web.arn, spec, {})),
      await failure(w.elb.modifyListener(listener.arn, { ...spec, port: 80 })),
      await failure(w.elb.registerTargets(group.arn, [target])),
      await failure(w.elb.deregisterTargets(group.arn, [target])),
      await failure(w.elb.describeTargetHealth(group.arn)),
      await failure(w.elb.describeTargetGroupAttributes(group.arn)),
      await failure(w.elb.modifyTargetGroupAttributes(group.arn, { 'deregistration_delay.timeout_seconds': '10' })),
      await failure(w.elb.modifyTargetGroupHealthCheck(group.arn, { ...group.healthCheck, intervalSeconds: 10 })),
      await failure(w.elb.addTags(group.arn, { b: '1' })),
      await failure(w.elb.removeTags(group.arn, ['team'])),
    ];
    expect(errors.map(codeOf)).toEqual(Array(10).fill('TargetGroupNotFound'));
    for (const err of errors) expect(err).toBeInstanceOf(RetryableError);
    expect(await w.elb.findTargetGroups(['tg'])).toEqual([]);
    expect((await w.elb.listTargetGroups()).map((g) => g.name)).toEqual(['old']);
    expect((await w.elb.describeTags([group.arn])).has(group.arn)).toBe(false);
    // The adapter turns TargetGroupNotFound from DeleteTargetGroup into 'not-found': the group stays.
    expect(await w.elb.deleteTargetGroup(group.arn)).toBe('not-found');

    const kept = w.fake.targetGroupNamed('tg')!;
    expect(kept).toMatchObject({ tags: { team: 'a' }, healthCheck: { intervalSeconds: 30 } });
    expect(w.fake.attributesOf(group.arn)?.['deregistration_delay.timeout_seconds']).toBe('300');
    expect(w.fake.targetsOf(group.arn)).toEqual([]);
    expect(w.fake.listenersOf(web.arn).map((l) => `${l.port}:${l.targetGroupArn}`)).toEqual([`80:${old.arn}`]);
  });

  it('answers exactly what it answers for a target group that does not exist', async () => {
    w.fake.newTargetGroupInvisibleMs = 10_000;
    const group = await targetGroup('tg');
    const unknownArn = group.arn.replace(/[0-9a-f]{16}$/, 'ffffffffffffffff');
    const hidden = await failure(w.elb.registerTargets(group.arn, [target]));
    const unknown = await failure(w.elb.registerTargets(unknownArn, [target]));
    expect(hidden.constructor).toBe(unknown.constructor);
    expect(hidden).toBeInstanceOf(RetryableError);
    expect(hidden.message).toBe(unknown.message.replace(unknownArn, group.arn));
    expect((hidden.cause as Error).constructor).toBe((unknown.cause as Error).constructor);
    expect((hidden.cause as { $metadata: unknown }).$metadata).toEqual({ httpStatusCode: 400 });
  });

  it('CreateTargetGroup again while hidden returns the same group (idempotent); other settings: the name is taken', async () => {
    w.fake.newTargetGroupInvisibleMs = 10_000;
    const group = await targetGroup('tg');
    expect((await targetGroup('tg')).arn).toBe(group.arn);
    expect(await w.elb.createTargetGroup(tgInput({ name: 'tg', port: 30081 }))).toBe('name-taken');
    expect(w.fake.targetGroups.size).toBe(1);
    // A name lookup with a hidden group in the chunk fails the call; the adapter then asks name by name.
    await targetGroup('seen');
    w.clock.advance(10_000);
    w.fake.newTargetGroupInvisibleMs = 60_000;
    await targetGroup('hidden');
    const call = await failure(w.fake.send(new DescribeTargetGroupsCommand({ Names: ['seen', 'hidden'] })));
    expect(elbv2ErrorCode(call)).toBe('TargetGroupNotFound');
    w.fake.resetCalls();
    expect((await w.elb.findTargetGroups(['seen', 'hidden'])).map((g) => g.name)).toEqual(['seen']);
    expect(w.fake.callCount('DescribeTargetGroups')).toBe(1 + 2);
  });

  it('after the window a listener forwards to it, targets register and it can be deleted', async () => {
    w.fake.newTargetGroupInvisibleMs = 10_000;
    const web = await lb('web');
    const group = await targetGroup('tg');
    w.clock.advance(10_000);
    expect((await w.elb.findTargetGroups(['tg'])).map((g) => g.arn)).toEqual([group.arn]);
    const listener = await w.elb.createListener(web.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    await w.elb.registerTargets(group.arn, [target]);
    expect(w.fake.targetsOf(group.arn).map((t) => t.target.id)).toEqual([instance.instanceId]);
    await w.elb.deleteListener(listener.arn);
    expect(await w.elb.deleteTargetGroup(group.arn)).toBe('deleted');
    expect(w.fake.targetGroups.size).toBe(0);
  });

  it('newTargetGroupInvisibleCalls hides it from that many calls naming it, with no time passing', async () => {
    w.fake.newTargetGroupInvisibleCalls = 2;
    const group = await targetGroup('tg');
    expect(codeOf(await failure(w.elb.registerTargets(group.arn, [target])))).toBe('TargetGroupNotFound');
    expect(await w.elb.findTargetGroups(['tg'])).toEqual([]);
    await w.elb.registerTargets(group.arn, [target]);
    expect(w.fake.targetsOf(group.arn)).toHaveLength(1);
  });
});
