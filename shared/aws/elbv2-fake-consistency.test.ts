import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { RetryableError, TerminalError } from '../errors.ts';
import { Ec2Adapter } from './ec2-adapter.ts';
import { FakeEc2, makeInstance, makeSubnet } from './ec2-fake.ts';
import { FakeElbv2 } from './elbv2-fake.ts';
import type { CreateTargetGroupInput, LoadBalancer, TargetGroup } from './elbv2-port.ts';
import { awsErrorCode } from './errors.ts';

const VPC = 'vpc-0a1b2c3d';
const a = makeSubnet({ index: 1, zone: 'eu-west-1a' });
const b = makeSubnet({ index: 2, zone: 'eu-west-1b' });
const instance = makeInstance({ index: 7 });

let clock: FakeClock;
let ec2: FakeEc2;
let elb: FakeElbv2;
beforeEach(() => {
  clock = new FakeClock();
  ec2 = new FakeEc2(clock);
  elb = new FakeElbv2(clock, ec2);
  for (const s of [a, b]) ec2.putSubnet(s);
  ec2.putInstance(instance);
  ec2.putSecurityGroup({ groupId: 'sg-lb', groupName: 'lb', vpcId: VPC, description: '', tags: {}, ingress: [] });
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
const lbInput = (name: string, securityGroups: string[]) => ({
  name,
  scheme: 'internet-facing' as const,
  subnetMappings: [{ subnetId: a.subnetId }, { subnetId: b.subnetId }],
  securityGroups,
  tags: {},
});
const tgInput = (name: string, extra: Partial<CreateTargetGroupInput> = {}): CreateTargetGroupInput => ({
  name,
  protocol: 'TCP',
  port: 30080,
  targetType: 'instance',
  vpcId: VPC,
  healthCheck: {
    protocol: 'TCP',
    port: 'traffic-port',
    intervalSeconds: 30,
    timeoutSeconds: 10,
    healthyThreshold: 3,
    unhealthyThreshold: 3,
  },
  tags: { team: 'a' },
  ...extra,
});
const newGroup = async (name: string): Promise<string> => {
  const created = await new Ec2Adapter(ec2).createSecurityGroup({
    groupName: name,
    description: 'd',
    vpcId: VPC,
    tags: {},
  });
  if (created === 'name-taken') throw new Error('taken');
  return created.groupId;
};
const lb = async (name: string, securityGroups = ['sg-lb']): Promise<LoadBalancer> => {
  const created = await elb.createLoadBalancer(lbInput(name, securityGroups));
  if (created === 'name-taken') throw new Error('taken');
  return created;
};
const targetGroup = async (name: string): Promise<TargetGroup> => {
  const created = await elb.createTargetGroup(tgInput(name));
  if (created === 'name-taken') throw new Error('taken');
  return created;
};
const target = { id: instance.instanceId, port: 30080 };

describe('FakeElbv2 and security groups EC2 still hides after their creation', () => {
  it('CreateLoadBalancer and SetSecurityGroups answer InvalidSecurityGroup (HTTP 400), as for an unknown group', async () => {
    ec2.newSecurityGroupInvisibleMs = 5_000;
    const fresh = await newGroup('fresh');
    const existing = await lb('web');

    const create = await failure(elb.createLoadBalancer(lbInput('other', [fresh])));
    const set = await failure(elb.setSecurityGroups(existing.arn, ['sg-lb', fresh]));
    const unknown = await failure(elb.createLoadBalancer(lbInput('other', ['sg-0000000000000ffff'])));
    expect([codeOf(create), codeOf(set)]).toEqual(['InvalidSecurityGroup', 'InvalidSecurityGroup']);
    expect(create.constructor).toBe(unknown.constructor);
    expect(create).toBeInstanceOf(TerminalError);
    expect(create.message).toBe(unknown.message.replaceAll('sg-0000000000000ffff', fresh));
    expect((set.cause as { $metadata: unknown }).$metadata).toEqual({ httpStatusCode: 400 });
    expect(elb.loadBalancerNamed('other')).toBeUndefined();
    expect(elb.loadBalancerNamed('web')?.securityGroups).toEqual(['sg-lb']);

    clock.advance(5_000);
    await elb.setSecurityGroups(existing.arn, ['sg-lb', fresh]);
    expect(elb.loadBalancerNamed('web')?.securityGroups).toEqual(['sg-lb', fresh]);
    expect((await lb('other', [fresh])).securityGroups).toEqual([fresh]);
  });

  it('with newSecurityGroupInvisibleCalls, each refused create used up one of the lookups', async () => {
    ec2.newSecurityGroupInvisibleCalls = 1;
    const fresh = await newGroup('fresh');
    expect(codeOf(await failure(elb.createLoadBalancer(lbInput('web', [fresh]))))).toBe('InvalidSecurityGroup');
    expect((await lb('web', [fresh])).securityGroups).toEqual([fresh]);
  });
});

describe('FakeElbv2 target groups just created (eventual consistency)', () => {
  it('is off by default: a new target group can be used at once', async () => {
    const group = await targetGroup('tg');
    await elb.registerTargets(group.arn, [target]);
    expect(elb.targetsOf(group.arn)).toHaveLength(1);
  });

  it('inside newTargetGroupInvisibleMs every call naming it answers TargetGroupNotFound and changes nothing', async () => {
    elb.newTargetGroupInvisibleMs = 10_000;
    const web = await lb('web');
    const old = await targetGroup('old');
    clock.advance(10_000);
    const listener = await elb.createListener(web.arn, { port: 80, protocol: 'TCP', targetGroupArn: old.arn }, {});
    const group = await targetGroup('tg');
    clock.advance(9_999);

    const spec = { port: 81, protocol: 'TCP' as const, targetGroupArn: group.arn };
    const errors = [
      await failure(elb.createListener(web.arn, spec, {})),
      await failure(elb.modifyListener(listener.arn, { ...spec, port: 80 })),
      await failure(elb.registerTargets(group.arn, [target])),
      await failure(elb.deregisterTargets(group.arn, [target])),
      await failure(elb.describeTargetHealth(group.arn)),
      await failure(elb.describeTargetGroupAttributes(group.arn)),
      await failure(elb.modifyTargetGroupAttributes(group.arn, { 'deregistration_delay.timeout_seconds': '10' })),
      await failure(elb.modifyTargetGroupHealthCheck(group.arn, { ...group.healthCheck, intervalSeconds: 10 })),
      await failure(elb.addTags(group.arn, { b: '1' })),
      await failure(elb.removeTags(group.arn, ['team'])),
    ];
    expect(errors.map(codeOf)).toEqual(Array(10).fill('TargetGroupNotFound'));
    for (const err of errors) expect(err).toBeInstanceOf(RetryableError);
    expect(await elb.findTargetGroups(['tg'])).toEqual([]);
    expect((await elb.listTargetGroups()).map((g) => g.name)).toEqual(['old']);
    expect((await elb.describeTags([group.arn])).has(group.arn)).toBe(false);
    // The adapter turns TargetGroupNotFound from DeleteTargetGroup into 'not-found': the group stays.
    expect(await elb.deleteTargetGroup(group.arn)).toBe('not-found');

    const kept = elb.targetGroupNamed('tg')!;
    expect(kept).toMatchObject({ tags: { team: 'a' }, healthCheck: { intervalSeconds: 30 } });
    expect(elb.attributesOf(group.arn)?.['deregistration_delay.timeout_seconds']).toBe('300');
    expect(elb.targetsOf(group.arn)).toEqual([]);
    expect(elb.listenersOf(web.arn).map((l) => `${l.port}:${l.targetGroupArn}`)).toEqual([`80:${old.arn}`]);
  });

  it('answers exactly what it answers for a target group that does not exist', async () => {
    elb.newTargetGroupInvisibleMs = 10_000;
    const group = await targetGroup('tg');
    const unknownArn = group.arn.replace(/[0-9a-f]{16}$/, 'ffffffffffffffff');
    const hidden = await failure(elb.registerTargets(group.arn, [target]));
    const unknown = await failure(elb.registerTargets(unknownArn, [target]));
    expect(hidden.constructor).toBe(unknown.constructor);
    expect(hidden.message).toBe(unknown.message.replace(unknownArn, group.arn));
    expect((hidden.cause as { $metadata: unknown }).$metadata).toEqual({ httpStatusCode: 400 });
  });

  it('CreateTargetGroup again while hidden returns the same group (idempotent); other settings: the name is taken', async () => {
    elb.newTargetGroupInvisibleMs = 10_000;
    const group = await targetGroup('tg');
    expect((await targetGroup('tg')).arn).toBe(group.arn);
    expect(await elb.createTargetGroup(tgInput('tg', { port: 30081 }))).toBe('name-taken');
    expect(elb.targetGroups.size).toBe(1);
    // A name lookup with a hidden group in the chunk fails the call; the adapter then asks name by name.
    await targetGroup('seen');
    clock.advance(10_000);
    elb.newTargetGroupInvisibleMs = 60_000;
    await targetGroup('hidden');
    elb.resetCalls();
    expect((await elb.findTargetGroups(['seen', 'hidden'])).map((g) => g.name)).toEqual(['seen']);
    expect(elb.callCount('DescribeTargetGroups')).toBe(3);
  });

  it('after the window a listener forwards to it, targets register and it can be deleted', async () => {
    elb.newTargetGroupInvisibleMs = 10_000;
    const web = await lb('web');
    const group = await targetGroup('tg');
    clock.advance(10_000);
    expect((await elb.findTargetGroups(['tg'])).map((g) => g.arn)).toEqual([group.arn]);
    const listener = await elb.createListener(web.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    await elb.registerTargets(group.arn, [target]);
    expect(elb.targetsOf(group.arn).map((t) => t.target.id)).toEqual([instance.instanceId]);
    await elb.deleteListener(listener.arn);
    expect(await elb.deleteTargetGroup(group.arn)).toBe('deleted');
    expect(elb.targetGroups.size).toBe(0);
  });

  it('newTargetGroupInvisibleCalls hides it from that many calls naming it, with no time passing', async () => {
    elb.newTargetGroupInvisibleCalls = 2;
    const group = await targetGroup('tg');
    expect(codeOf(await failure(elb.registerTargets(group.arn, [target])))).toBe('TargetGroupNotFound');
    expect(await elb.findTargetGroups(['tg'])).toEqual([]);
    await elb.registerTargets(group.arn, [target]);
    expect(elb.targetsOf(group.arn)).toHaveLength(1);
  });
});
