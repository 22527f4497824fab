import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { FakeEc2, makeInstance, makeSubnet } from './ec2-fake.ts';
import { FakeElbv2 } from './elbv2-fake.ts';
import type { CreateTargetGroupInput, HealthCheck } from './elbv2-port.ts';
import { awsErrorCode } from './errors.ts';

const HC: HealthCheck = {
  protocol: 'TCP',
  port: 'traffic-port',
  intervalSeconds: 30,
  timeoutSeconds: 10,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
};

let clock: FakeClock;
let ec2: FakeEc2;
let elb: FakeElbv2;
const a = makeSubnet({ index: 1, zone: 'eu-west-1a' });
const b = makeSubnet({ index: 2, zone: 'eu-west-1b' });
const a2 = makeSubnet({ index: 3, zone: 'eu-west-1a' });

beforeEach(() => {
  clock = new FakeClock();
  ec2 = new FakeEc2(clock);
  elb = new FakeElbv2(clock, ec2);
  for (const s of [a, b, a2]) ec2.putSubnet(s);
  ec2.putSecurityGroup({
    groupId: 'sg-lb',
    groupName: 'lb',
    vpcId: 'vpc-0a1b2c3d',
    description: '',
    tags: {},
    ingress: [],
  });
});

const codeOf = (err: unknown) => awsErrorCode((err as Error).cause);
const lbInput = (name = 'web', extra = {}) => ({
  name,
  scheme: 'internet-facing' as const,
  subnetMappings: [{ subnetId: a.subnetId }, { subnetId: b.subnetId }],
  securityGroups: ['sg-lb'],
  tags: { team: 'web' },
  ...extra,
});
const tgInput = (name = 'web-80', extra: Partial<CreateTargetGroupInput> = {}): CreateTargetGroupInput => ({
  name,
  protocol: 'TCP',
  port: 30080,
  targetType: 'instance',
  vpcId: 'vpc-0a1b2c3d',
  healthCheck: HC,
  tags: {},
  ...extra,
});

async function lbWithGroup() {
  const lb = await elb.createLoadBalancer(lbInput());
  const group = await elb.createTargetGroup(tgInput());
  if (lb === 'name-taken' || group === 'name-taken') throw new Error('unexpected');
  return { lb, group };
}

describe('FakeElbv2 load balancers', () => {
  it('provision for a few describes (or minutes), then are active; DNS names and zones as AWS gives them', async () => {
    const created = await elb.createLoadBalancer(lbInput());
    expect(created).toMatchObject({
      name: 'web',
      state: 'provisioning',
      type: 'network',
      dnsName: expect.stringMatching(/^web-[0-9a-f]{16}\.elb\.eu-west-1\.amazonaws\.com$/),
      subnets: [
        { subnetId: a.subnetId, zoneName: 'eu-west-1a' },
        { subnetId: b.subnetId, zoneName: 'eu-west-1b' },
      ],
    });
    expect((await elb.findLoadBalancer('web'))?.state).toBe('provisioning');
    expect((await elb.findLoadBalancer('web'))?.state).toBe('provisioning');
    expect((await elb.findLoadBalancer('WEB'))?.state).toBe('active');

    await elb.createLoadBalancer(lbInput('slow'));
    clock.advance(elb.provisioningMs);
    expect((await elb.findLoadBalancer('slow'))?.state).toBe('active');
    expect(await elb.findLoadBalancer('missing')).toBeUndefined();
  });

  it('create is idempotent with the same settings; other settings: the name is taken', async () => {
    const first = await elb.createLoadBalancer(lbInput());
    expect(await elb.createLoadBalancer(lbInput())).toMatchObject({ arn: (first as { arn: string }).arn });
    expect(await elb.createLoadBalancer(lbInput('web', { scheme: 'internal' }))).toBe('name-taken');
    expect(elb.loadBalancers.size).toBe(1);
    expect(elb.callCount('CreateLoadBalancer')).toBe(3);
    expect(elb.writeCallCount()).toBe(3);
  });

  it.each([
    ['an unknown subnet', { subnetMappings: [{ subnetId: 'subnet-nope' }] }, 'SubnetNotFound'],
    [
      'two subnets in one zone',
      { subnetMappings: [{ subnetId: a.subnetId }, { subnetId: a2.subnetId }] },
      'InvalidConfigurationRequest',
    ],
    ['an unknown security group', { securityGroups: ['sg-nope'] }, 'InvalidSecurityGroup'],
    [
      'a private address on an internet-facing one',
      { subnetMappings: [{ subnetId: a.subnetId, privateIPv4Address: '10.0.1.5' }] },
      'InvalidConfigurationRequest',
    ],
    ['a bad name', { name: 'internal-web' }, 'ValidationError'],
  ])('refuses %s', async (_, extra, code) => {
    const err = await elb.createLoadBalancer(lbInput('web', extra)).catch((e: unknown) => e);
    expect(codeOf(err)).toBe(code);
    expect(elb.loadBalancers.size).toBe(0);
  });

  it('deletion removes the listeners, succeeds when already gone, and keeps the security groups in use while ENIs drain', async () => {
    const { lb, group } = await lbWithGroup();
    await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    await elb.deleteLoadBalancer(lb.arn);
    await elb.deleteLoadBalancer(lb.arn);
    expect(elb.listeners.size).toBe(0);
    expect(codeOf(await ec2.deleteSecurityGroup('sg-lb').catch((e: unknown) => e))).toBe('DependencyViolation');
    clock.advance(elb.eniDrainMs);
    expect(await ec2.deleteSecurityGroup('sg-lb')).toBe('deleted');
  });

  it('deletion protection refuses deletion (a terminal error)', async () => {
    const { lb } = await lbWithGroup();
    await elb.modifyLoadBalancerAttributes(lb.arn, { 'deletion_protection.enabled': 'true' });
    const err = await elb.deleteLoadBalancer(lb.arn).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('OperationNotPermitted');
  });

  it('attributes: AWS defaults, unknown keys refused, access logs need a bucket', async () => {
    const { lb } = await lbWithGroup();
    expect(await elb.describeLoadBalancerAttributes(lb.arn)).toMatchObject({
      'load_balancing.cross_zone.enabled': 'false',
    });
    expect(codeOf(await elb.modifyLoadBalancerAttributes(lb.arn, { nope: '1' }).catch((e: unknown) => e))).toBe(
      'ValidationError',
    );
    expect(
      codeOf(
        await elb.modifyLoadBalancerAttributes(lb.arn, { 'access_logs.s3.enabled': 'true' }).catch((e: unknown) => e),
      ),
    ).toBe('InvalidConfigurationRequest');
  });

  it('security groups can be changed only on a load balancer created with some', async () => {
    ec2.putSecurityGroup({
      groupId: 'sg-2',
      groupName: 'two',
      vpcId: 'vpc-0a1b2c3d',
      description: '',
      tags: {},
      ingress: [],
    });
    const { lb } = await lbWithGroup();
    await elb.setSecurityGroups(lb.arn, ['sg-2']);
    expect(elb.loadBalancerNamed('web')?.securityGroups).toEqual(['sg-2']);
    const bare = elb.putLoadBalancer({ ...lbInput('bare'), securityGroups: [] });
    expect(codeOf(await elb.setSecurityGroups(bare.arn, ['sg-2']).catch((e: unknown) => e))).toBe(
      'InvalidConfigurationRequest',
    );
  });
});

describe('FakeElbv2 listeners and target groups', () => {
  it('a target group serves one load balancer only (TargetGroupAssociationLimit) and cannot go while in use (ResourceInUse)', async () => {
    const { lb, group } = await lbWithGroup();
    const other = await elb.createLoadBalancer(lbInput('other'));
    const listener = await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    expect((await elb.describeTargetGroupsOfLoadBalancer(lb.arn)).map((g) => g.name)).toEqual(['web-80']);
    const err = await elb
      .createListener((other as { arn: string }).arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {})
      .catch((e: unknown) => e);
    expect(codeOf(err)).toBe('TargetGroupAssociationLimit');
    const inUse = await elb.deleteTargetGroup(group.arn).catch((e: unknown) => e);
    expect(inUse).toBeInstanceOf(RetryableError);
    expect(codeOf(inUse)).toBe('ResourceInUse');
    expect(await elb.deleteListener(listener.arn)).toBe('deleted');
    expect(await elb.deleteListener(listener.arn)).toBe('not-found');
    expect(await elb.deleteTargetGroup(group.arn)).toBe('deleted');
    expect(await elb.deleteTargetGroup(group.arn)).toBe('not-found');
  });

  it.each([
    ['a TLS listener without a certificate', { port: 443, protocol: 'TLS' as const }, 'ValidationError'],
    ['a UDP listener on a TCP group', { port: 53, protocol: 'UDP' as const }, 'IncompatibleProtocols'],
  ])('refuses %s', async (_, spec, code) => {
    const { lb, group } = await lbWithGroup();
    expect(
      codeOf(await elb.createListener(lb.arn, { ...spec, targetGroupArn: group.arn }, {}).catch((e: unknown) => e)),
    ).toBe(code);
  });

  it('a second listener on a port: same settings is the same listener, others are a DuplicateListener', async () => {
    const { lb, group } = await lbWithGroup();
    const first = await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    expect(await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {})).toEqual(
      first,
    );
    const tls = await elb.createTargetGroup(tgInput('web-tls', { protocol: 'TLS' }));
    const err = await elb
      .createListener(
        lb.arn,
        {
          port: 80,
          protocol: 'TLS',
          certificateArn: 'c',
          targetGroupArn: (tls as { arn: string }).arn,
        },
        {},
      )
      .catch((e: unknown) => e);
    expect(codeOf(err)).toBe('DuplicateListener');
  });

  it('target group create is idempotent; other settings: DuplicateTargetGroupName as name-taken', async () => {
    const first = await elb.createTargetGroup(tgInput());
    expect(await elb.createTargetGroup(tgInput())).toEqual(first);
    expect(await elb.createTargetGroup(tgInput('web-80', { healthCheck: { ...HC, intervalSeconds: 10 } }))).toBe(
      'name-taken',
    );
  });

  it('finds target groups by name, counting the fallback calls the adapter makes for unknown names', async () => {
    await elb.createTargetGroup(tgInput('one'));
    expect((await elb.findTargetGroups(['one'])).map((g) => g.name)).toEqual(['one']);
    elb.resetCalls();
    expect((await elb.findTargetGroups(['one', 'two'])).map((g) => g.name)).toEqual(['one']);
    expect(elb.callCount('DescribeTargetGroups')).toBe(3);
  });

  it('validates health checks and target group attributes as AWS does', async () => {
    expect(
      codeOf(
        await elb
          .createTargetGroup(tgInput('x', { healthCheck: { ...HC, intervalSeconds: 400 } }))
          .catch((e: unknown) => e),
      ),
    ).toBe('ValidationError');
    const udp = (await elb.createTargetGroup(tgInput('u', { protocol: 'UDP' }))) as { arn: string };
    expect(await elb.describeTargetGroupAttributes(udp.arn)).toMatchObject({ 'preserve_client_ip.enabled': 'true' });
    expect(
      codeOf(
        await elb
          .modifyTargetGroupAttributes(udp.arn, { 'preserve_client_ip.enabled': 'false' })
          .catch((e: unknown) => e),
      ),
    ).toBe('InvalidConfigurationRequest');
    const ip = (await elb.createTargetGroup(tgInput('i', { targetType: 'ip' }))) as { arn: string };
    expect(await elb.describeTargetGroupAttributes(ip.arn)).toMatchObject({ 'preserve_client_ip.enabled': 'false' });
  });
});

describe('FakeElbv2 targets', () => {
  it('targets are unused without a listener, initial then healthy with one, and drain for the deregistration delay', async () => {
    const instance = ec2.putInstance(makeInstance({ index: 1 }));
    const { lb, group } = await lbWithGroup();
    await elb.registerTargets(group.arn, [{ id: instance.instanceId, port: 30080 }]);
    expect((await elb.describeTargetHealth(group.arn))[0]).toMatchObject({
      state: 'unused',
      reason: 'Target.NotInUse',
    });
    await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    expect((await elb.describeTargetHealth(group.arn))[0]?.state).toBe('initial');
    expect((await elb.describeTargetHealth(group.arn))[0]?.state).toBe('healthy');
    await elb.modifyTargetGroupAttributes(group.arn, { 'deregistration_delay.timeout_seconds': '30' });
    await elb.deregisterTargets(group.arn, [{ id: instance.instanceId, port: 30080 }]);
    expect((await elb.describeTargetHealth(group.arn))[0]?.state).toBe('draining');
    clock.advance(30_000);
    expect(await elb.describeTargetHealth(group.arn)).toEqual([]);
  });

  it('refuses instances that are not running and IP targets that are not addresses', async () => {
    const stopped = ec2.putInstance(makeInstance({ index: 2, state: 'stopped' }));
    const { group } = await lbWithGroup();
    expect(
      codeOf(await elb.registerTargets(group.arn, [{ id: stopped.instanceId, port: 1 }]).catch((e: unknown) => e)),
    ).toBe('InvalidTarget');
    const ip = (await elb.createTargetGroup(tgInput('ip', { targetType: 'ip' }))) as { arn: string };
    expect(codeOf(await elb.registerTargets(ip.arn, [{ id: 'pod-a', port: 1 }]).catch((e: unknown) => e))).toBe(
      'InvalidTarget',
    );
  });
});

describe('FakeElbv2 tags, throttling, queued errors', () => {
  it('describes tags 20 ARNs per call, unknown ARNs absent', async () => {
    const { lb, group } = await lbWithGroup();
    await elb.addTags(group.arn, { owner: 'me' });
    const tags = await elb.describeTags([
      lb.arn,
      group.arn,
      'arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/net/x/y',
    ]);
    expect(tags.get(lb.arn)).toEqual({ team: 'web' });
    expect(tags.get(group.arn)).toEqual({ owner: 'me' });
    expect(tags.size).toBe(2);
  });

  it('listeners keep the tags they were created with; DescribeTags answers them, AddTags adds to them, and they go with the listener', async () => {
    const { lb, group } = await lbWithGroup();
    const owned = { 'kubernetes.io/cluster/c1': 'owned', 'kubernetes.io/service-name': 'default/web' };
    const tagged = await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, owned);
    const other = await elb.createTargetGroup(tgInput('web-81'));
    const untagged = await elb.createListener(
      lb.arn,
      { port: 81, protocol: 'TCP', targetGroupArn: (other as { arn: string }).arn },
      {},
    );
    const tags = await elb.describeTags([tagged.arn, untagged.arn]);
    expect(tags.get(tagged.arn)).toEqual(owned);
    expect(tags.get(untagged.arn)).toEqual({});
    await elb.addTags(untagged.arn, owned);
    expect(elb.tagsOf(untagged.arn)).toEqual(owned);
    expect(await elb.deleteListener(untagged.arn)).toBe('deleted');
    expect(elb.tagsOf(untagged.arn)).toBeUndefined();
    expect(codeOf(await elb.addTags(untagged.arn, owned).catch((e: unknown) => e))).toBe('ListenerNotFound');
    expect((await elb.describeTags([tagged.arn, untagged.arn])).size).toBe(1);
    await elb.deleteLoadBalancer(lb.arn);
    expect(elb.tagsOf(tagged.arn)).toBeUndefined();
  });

  it('throttles with Throttling and plays queued errors', async () => {
    elb.throttle('DescribeLoadBalancers', 1);
    const throttled = await elb.findLoadBalancer('x').catch((e: unknown) => e);
    expect(throttled).toBeInstanceOf(ThrottledError);
    expect(codeOf(throttled)).toBe('Throttling');
    expect(await elb.findLoadBalancer('x')).toBeUndefined();
  });
});
