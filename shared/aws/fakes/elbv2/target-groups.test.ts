import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, ThrottledError } from '../../../errors.ts';
import { nlbTargetGroupAttributeDefaults } from '../../elbv2-defaults.ts';
import { AwsServiceError } from '../../errors.ts';
import { makeInstance } from '../ec2/fake-ec2.ts';
import { codeOf, elbv2World, failure, HEALTH_CHECK, tgInput } from './testing.ts';

/** The fake ELBv2 API behind the real adapter: target groups, their targets, and tags. */
let w: ReturnType<typeof elbv2World>;
beforeEach(() => {
  w = elbv2World();
});

describe('FakeElbv2 target groups, through Elbv2Adapter', () => {
  it('create is idempotent; other settings are DuplicateTargetGroupName: the name is taken', async () => {
    const first = await w.group();
    expect(await w.elb.createTargetGroup(tgInput())).toEqual(first);
    const slower = tgInput({ healthCheck: { ...HEALTH_CHECK, intervalSeconds: 10 } });
    expect(await w.elb.createTargetGroup(slower)).toBe('name-taken');
    expect(await w.elb.createTargetGroup(tgInput({ targetType: 'ip' }))).toBe('name-taken');
    expect(w.fake.targetGroups.size).toBe(1);
  });

  it('reads back its health check, no load balancer, and lists with every target group', async () => {
    const http = { ...HEALTH_CHECK, protocol: 'HTTP' as const, path: '/healthz', port: '30999', timeoutSeconds: 6 };
    await w.group({ name: 'local', healthCheck: http });
    await w.group({ name: 'plain' });
    expect(await w.elb.findTargetGroups(['local'])).toEqual([
      expect.objectContaining({ name: 'local', healthCheck: http, loadBalancerArns: [], targetType: 'instance' }),
    ]);
    expect((await w.elb.listTargetGroups()).map((g) => g.name)).toEqual(['local', 'plain']);
    await w.elb.modifyTargetGroupHealthCheck(w.fake.targetGroupNamed('plain')!.arn, {
      ...HEALTH_CHECK,
      intervalSeconds: 10,
    });
    expect(w.fake.targetGroupNamed('plain')?.healthCheck.intervalSeconds).toBe(10);
  });

  it("attributes: AWS's defaults for the target type and protocol (elbv2-defaults.ts)", async () => {
    const instance = await w.group();
    const ip = await w.group({ name: 'ip', targetType: 'ip' });
    const udp = await w.group({ name: 'udp', protocol: 'UDP', targetType: 'ip' });
    expect(await w.elb.describeTargetGroupAttributes(instance.arn)).toEqual(
      nlbTargetGroupAttributeDefaults('instance', 'TCP'),
    );
    expect(await w.elb.describeTargetGroupAttributes(ip.arn)).toMatchObject({ 'preserve_client_ip.enabled': 'false' });
    expect(await w.elb.describeTargetGroupAttributes(udp.arn)).toMatchObject({ 'preserve_client_ip.enabled': 'true' });
  });

  it('validates health checks and attributes as AWS does; a refused change changes nothing', async () => {
    const slow = tgInput({ name: 'x', healthCheck: { ...HEALTH_CHECK, intervalSeconds: 400 } });
    expect(codeOf(await failure(w.elb.createTargetGroup(slow)))).toBe('ValidationError');
    const udp = await w.group({ name: 'u', protocol: 'UDP' });
    const keepIp = { 'preserve_client_ip.enabled': 'false' };
    expect(codeOf(await failure(w.elb.modifyTargetGroupAttributes(udp.arn, keepIp)))).toBe(
      'InvalidConfigurationRequest',
    );
    const mixed = { 'stickiness.enabled': 'true', nope: '1' };
    expect(codeOf(await failure(w.elb.modifyTargetGroupAttributes(udp.arn, mixed)))).toBe('ValidationError');
    expect(w.fake.attributesOf(udp.arn)?.['stickiness.enabled']).toBe('false');
  });

  it('an IPv6 target group takes IP targets of its family only', async () => {
    const v6inst = tgInput({ name: 'v6-inst', ipAddressType: 'ipv6' });
    expect(codeOf(await failure(w.elb.createTargetGroup(v6inst)))).toBe('InvalidConfigurationRequest');
    const v6 = await w.group({ name: 'v6', targetType: 'ip', ipAddressType: 'ipv6' });
    expect(v6.ipAddressType).toBe('ipv6');
    expect(await w.elb.createTargetGroup(tgInput({ name: 'v6', targetType: 'ip' }))).toBe('name-taken');
    expect(codeOf(await failure(w.elb.registerTargets(v6.arn, [{ id: '10.0.1.5', port: 80 }])))).toBe('InvalidTarget');
    await w.elb.registerTargets(v6.arn, [{ id: '2001:db8:0:4::5', port: 80 }]);
    expect(w.fake.targetsOf(v6.arn).map((t) => t.target.id)).toEqual(['2001:db8:0:4::5']);
    const v4 = await w.group({ name: 'v4', targetType: 'ip' });
    expect(codeOf(await failure(w.elb.registerTargets(v4.arn, [{ id: '2001:db8:0:4::5', port: 80 }])))).toBe(
      'InvalidTarget',
    );
  });
});

describe('FakeElbv2 targets', () => {
  it('are unused without a listener, initial then healthy with one, and drain for the deregistration delay', async () => {
    const instance = w.ec2.putInstance(makeInstance({ index: 1 }));
    const target = { id: instance.instanceId, port: 30080 };
    const { lb, group } = await w.lbWithGroup();
    await w.elb.registerTargets(group.arn, [target]);
    expect(await w.elb.describeTargetHealth(group.arn)).toEqual([
      {
        target,
        state: 'unused',
        reason: 'Target.NotInUse',
        description: 'Target group is not configured to receive traffic from the load balancer',
      },
    ]);
    await w.elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    expect((await w.elb.describeTargetHealth(group.arn))[0]).toMatchObject({
      state: 'initial',
      reason: 'Elb.RegistrationInProgress',
      description: 'Target registration is in progress',
    });
    expect((await w.elb.describeTargetHealth(group.arn))[0]).toEqual({ target, state: 'healthy' });
    // Registering it again changes nothing.
    await w.elb.registerTargets(group.arn, [target]);
    expect(w.fake.targetsOf(group.arn)).toEqual([{ target, state: 'healthy' }]);
    await w.elb.modifyTargetGroupAttributes(group.arn, { 'deregistration_delay.timeout_seconds': '30' });
    await w.elb.deregisterTargets(group.arn, [target, { id: 'i-0000000000000dead', port: 30080 }]);
    expect((await w.elb.describeTargetHealth(group.arn))[0]).toMatchObject({
      state: 'draining',
      reason: 'Target.DeregistrationInProgress',
    });
    w.clock.advance(30_000);
    expect(await w.elb.describeTargetHealth(group.arn)).toEqual([]);
  });

  it('refuses instances that are not running and IP targets that are not addresses', async () => {
    const stopped = w.ec2.putInstance(makeInstance({ index: 2, state: 'stopped' }));
    const group = await w.group();
    expect(codeOf(await failure(w.elb.registerTargets(group.arn, [{ id: stopped.instanceId, port: 1 }])))).toBe(
      'InvalidTarget',
    );
    const ip = await w.group({ name: 'ip', targetType: 'ip' });
    expect(codeOf(await failure(w.elb.registerTargets(ip.arn, [{ id: 'pod-a', port: 1 }])))).toBe('InvalidTarget');
    expect(w.fake.targetsOf(group.arn)).toEqual([]);
  });
});

describe('FakeElbv2 tags', () => {
  it('adds and overwrites tags; a resource holds 50 at most (TooManyTags)', async () => {
    const group = await w.group();
    await w.elb.addTags(group.arn, { owner: 'me', team: 'a' });
    await w.elb.addTags(group.arn, { team: 'b' });
    expect(w.fake.tagsOf(group.arn)).toEqual({ owner: 'me', team: 'b' });
    const many = Object.fromEntries(Array.from({ length: 49 }, (_, i) => [`k${i}`, 'v']));
    expect(codeOf(await failure(w.elb.addTags(group.arn, many)))).toBe('TooManyTags');
    expect(w.fake.tagsOf(group.arn)).toEqual({ owner: 'me', team: 'b' });
  });

  it('removes tag keys from load balancers, target groups and listeners; keys they lack are no error; unknown ARNs are not found', async () => {
    const { lb, group } = await w.lbWithGroup();
    const listener = await w.elb.createListener(
      lb.arn,
      { port: 80, protocol: 'TCP', targetGroupArn: group.arn },
      { a: '1', b: '2' },
    );
    await w.elb.addTags(group.arn, { x: '1', y: '2' });
    w.fake.resetCalls();
    await w.elb.removeTags(lb.arn, ['team', 'absent']);
    await w.elb.removeTags(group.arn, ['x']);
    await w.elb.removeTags(listener.arn, ['a']);
    await w.elb.removeTags(listener.arn, []);
    expect([w.fake.tagsOf(lb.arn), w.fake.tagsOf(group.arn), w.fake.tagsOf(listener.arn)]).toEqual([
      {},
      { y: '2' },
      { b: '2' },
    ]);
    expect(w.fake.callCount('RemoveTags')).toBe(3);
    await w.elb.deleteLoadBalancer(lb.arn);
    expect(codeOf(await failure(w.elb.removeTags(listener.arn, ['b'])))).toBe('ListenerNotFound');
    expect(codeOf(await failure(w.elb.removeTags(lb.arn, ['b'])))).toBe('LoadBalancerNotFound');
    const gone = group.arn.replace('web-80', 'gone-80');
    expect(codeOf(await failure(w.elb.removeTags(gone, ['b'])))).toBe('TargetGroupNotFound');
  });

  it('counts throttled and failed writes as calls made; describes are reads', async () => {
    const lb = await w.lb();
    w.fake.resetCalls();
    w.fake.throttle('RemoveTags', 1);
    expect(await failure(w.elb.removeTags(lb.arn, ['team']))).toBeInstanceOf(ThrottledError);
    w.fake.queueError('SetIpAddressType', new AwsServiceError('InternalFailure', 'oops', 500));
    expect(await failure(w.elb.setIpAddressType(lb.arn, 'ipv4'))).toBeInstanceOf(RetryableError);
    expect(w.fake.tagsOf(lb.arn)).toEqual({ team: 'web' });
    await w.elb.describeTags([lb.arn]);
    expect(w.fake.writeCallCount()).toBe(2);
    expect(w.fake.callCount()).toBe(3);
  });
});
