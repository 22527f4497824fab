import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { Ec2Adapter } from './ec2-adapter.ts';
import { FakeEc2, makeInstance, makeSubnet } from './ec2-fake.ts';
import { FakeElbv2 } from './elbv2-fake.ts';
import type { AlpnPolicy, CreateTargetGroupInput, HealthCheck, ListenerSpec } from './elbv2-port.ts';
import { AwsServiceError, awsErrorCode } from './errors.ts';

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
    expect(codeOf(await new Ec2Adapter(ec2).deleteSecurityGroup('sg-lb').catch((e: unknown) => e))).toBe(
      'DependencyViolation',
    );
    clock.advance(elb.eniDrainMs);
    expect(await new Ec2Adapter(ec2).deleteSecurityGroup('sg-lb')).toBe('deleted');
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

describe('FakeElbv2 IP address types', () => {
  const a6 = makeSubnet({ index: 4, zone: 'eu-west-1a', ipv6: true });
  const b6 = makeSubnet({ index: 5, zone: 'eu-west-1b', ipv6: true });
  const c4 = makeSubnet({ index: 6, zone: 'eu-west-1c' });
  const dualInput = (extra = {}) =>
    lbInput('dual', {
      subnetMappings: [{ subnetId: a6.subnetId }, { subnetId: b6.subnetId }],
      ipAddressType: 'dualstack' as const,
      ...extra,
    });
  beforeEach(() => {
    for (const s of [a6, b6, c4]) ec2.putSubnet(s);
  });

  it('a load balancer is ipv4 unless created dualstack, which needs an IPv6 CIDR in every subnet', async () => {
    expect((await lbWithGroup()).lb.ipAddressType).toBe('ipv4');
    expect(await elb.createLoadBalancer(dualInput())).toMatchObject({ ipAddressType: 'dualstack' });
    expect(await elb.createLoadBalancer(dualInput())).toMatchObject({ ipAddressType: 'dualstack' });
    expect(await elb.createLoadBalancer(dualInput({ ipAddressType: 'ipv4' }))).toBe('name-taken');
    const err = await elb
      .createLoadBalancer(
        lbInput('mixed', {
          subnetMappings: [{ subnetId: a6.subnetId }, { subnetId: c4.subnetId }],
          ipAddressType: 'dualstack',
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    expect(elb.loadBalancerNamed('mixed')).toBeUndefined();
  });

  it('SetIpAddressType is a write, checks the subnets for dualstack, and goes back to ipv4', async () => {
    const { lb } = await lbWithGroup();
    elb.resetCalls();
    expect(codeOf(await elb.setIpAddressType(lb.arn, 'dualstack').catch((e: unknown) => e))).toBe(
      'InvalidConfigurationRequest',
    );
    expect(elb.loadBalancerNamed('web')?.ipAddressType).toBe('ipv4');
    const dual = elb.putLoadBalancer(lbInput('v6', { subnetMappings: [{ subnetId: a6.subnetId }] }));
    await elb.setIpAddressType(dual.arn, 'dualstack');
    expect((await elb.findLoadBalancer('v6'))?.ipAddressType).toBe('dualstack');
    await elb.setIpAddressType(dual.arn, 'ipv4');
    expect(elb.loadBalancerNamed('v6')?.ipAddressType).toBe('ipv4');
    expect(elb.callCount('SetIpAddressType')).toBe(3);
    expect(elb.writeCallCount()).toBe(3);
    expect(codeOf(await elb.setIpAddressType('arn:nope', 'ipv4').catch((e: unknown) => e))).toBe(
      'LoadBalancerNotFound',
    );
  });

  it('a dualstack load balancer takes only subnets with IPv6 CIDR blocks', async () => {
    const dual = (await elb.createLoadBalancer(dualInput())) as { arn: string };
    const err = await elb
      .setSubnets(dual.arn, [{ subnetId: a6.subnetId }, { subnetId: b6.subnetId }, { subnetId: c4.subnetId }])
      .catch((e: unknown) => e);
    expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    expect(elb.loadBalancerNamed('dual')?.subnets).toHaveLength(2);
  });

  it('IPv6 target groups take IP targets of their family only, and serve dualstack load balancers only', async () => {
    expect(
      codeOf(await elb.createTargetGroup(tgInput('v6-inst', { ipAddressType: 'ipv6' })).catch((e: unknown) => e)),
    ).toBe('InvalidConfigurationRequest');
    const v6 = (await elb.createTargetGroup(tgInput('v6', { targetType: 'ip', ipAddressType: 'ipv6' }))) as {
      arn: string;
      ipAddressType: string;
    };
    expect(v6.ipAddressType).toBe('ipv6');
    expect(elb.targetGroupNamed('v6')?.ipAddressType).toBe('ipv6');
    expect(await elb.createTargetGroup(tgInput('v6', { targetType: 'ip' }))).toBe('name-taken');
    expect(codeOf(await elb.registerTargets(v6.arn, [{ id: '10.0.1.5', port: 80 }]).catch((e: unknown) => e))).toBe(
      'InvalidTarget',
    );
    await elb.registerTargets(v6.arn, [{ id: '2001:db8:0:4::5', port: 80 }]);
    expect(elb.targetsOf(v6.arn).map((t) => t.target.id)).toEqual(['2001:db8:0:4::5']);
    const v4 = (await elb.createTargetGroup(tgInput('v4', { targetType: 'ip' }))) as { arn: string };
    expect(
      codeOf(await elb.registerTargets(v4.arn, [{ id: '2001:db8:0:4::5', port: 80 }]).catch((e: unknown) => e)),
    ).toBe('InvalidTarget');

    const { lb } = await lbWithGroup();
    expect(
      codeOf(
        await elb
          .createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: v6.arn }, {})
          .catch((e: unknown) => e),
      ),
    ).toBe('InvalidConfigurationRequest');
    const dual = (await elb.createLoadBalancer(dualInput())) as { arn: string };
    await elb.createListener(dual.arn, { port: 80, protocol: 'TCP', targetGroupArn: v6.arn }, {});
    // Going back to ipv4 would strand the IPv6 target group.
    expect(codeOf(await elb.setIpAddressType(dual.arn, 'ipv4').catch((e: unknown) => e))).toBe(
      'InvalidConfigurationRequest',
    );
  });
});

describe('FakeElbv2 subnets of a Network Load Balancer', () => {
  const c = makeSubnet({ index: 7, zone: 'eu-west-1c' });
  beforeEach(() => {
    ec2.putSubnet(c);
  });
  const zonesOf = async (name: string) => (await elb.findLoadBalancer(name))?.subnets.map((s) => s.zoneName);

  it('adds zones and keeps the ones that stay with their addresses (an address left out is kept)', async () => {
    const lb = (await elb.createLoadBalancer(
      lbInput('web', { subnetMappings: [{ subnetId: a.subnetId, allocationId: 'eipalloc-1' }] }),
    )) as { arn: string };
    await elb.setSubnets(lb.arn, [{ subnetId: a.subnetId }, { subnetId: b.subnetId, allocationId: 'eipalloc-2' }]);
    expect(elb.loadBalancerNamed('web')?.subnets).toEqual([
      { subnetId: a.subnetId, allocationId: 'eipalloc-1', zoneName: 'eu-west-1a' },
      { subnetId: b.subnetId, allocationId: 'eipalloc-2', zoneName: 'eu-west-1b' },
    ]);
    expect(elb.callCount('SetSubnets')).toBe(1);
  });

  it.each([
    ['another subnet in a zone that stays', [{ subnetId: a2.subnetId }, { subnetId: b.subnetId }]],
    ['another Elastic IP in a zone that stays', [{ subnetId: a.subnetId, allocationId: 'eipalloc-9' }]],
  ])('refuses %s in one call (InvalidConfigurationRequest): the zone must be removed first', async (_, mappings) => {
    const { lb } = await lbWithGroup();
    const err = await elb.setSubnets(lb.arn, mappings).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    expect(await zonesOf('web')).toEqual(['eu-west-1a', 'eu-west-1b']);
  });

  it('a removed zone is gone at once, but no subnet of it can be added until the removal completes', async () => {
    const { lb } = await lbWithGroup();
    await elb.setSubnets(lb.arn, [{ subnetId: b.subnetId }]);
    expect(await zonesOf('web')).toEqual(['eu-west-1b']);
    clock.advance(elb.subnetRemovalMs - 1);
    for (const subnetId of [a.subnetId, a2.subnetId]) {
      const err = await elb.setSubnets(lb.arn, [{ subnetId: b.subnetId }, { subnetId }]).catch((e: unknown) => e);
      expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    }
    // Other zones can be added meanwhile.
    await elb.setSubnets(lb.arn, [{ subnetId: b.subnetId }, { subnetId: c.subnetId }]);
    clock.advance(1);
    await elb.setSubnets(lb.arn, [{ subnetId: b.subnetId }, { subnetId: c.subnetId }, { subnetId: a2.subnetId }]);
    expect(elb.loadBalancerNamed('web')?.subnets.map((s) => s.subnetId)).toEqual([b.subnetId, c.subnetId, a2.subnetId]);
  });

  it('keeps at least one subnet and checks subnets as on create', async () => {
    const { lb } = await lbWithGroup();
    expect(codeOf(await elb.setSubnets(lb.arn, []).catch((e: unknown) => e))).toBe('ValidationError');
    expect(codeOf(await elb.setSubnets(lb.arn, [{ subnetId: 'subnet-nope' }]).catch((e: unknown) => e))).toBe(
      'SubnetNotFound',
    );
    expect(
      codeOf(
        await elb
          .setSubnets(lb.arn, [{ subnetId: a.subnetId }, { subnetId: b.subnetId }, { subnetId: a2.subnetId }])
          .catch((e: unknown) => e),
      ),
    ).toBe('InvalidConfigurationRequest');
    expect(await zonesOf('web')).toEqual(['eu-west-1a', 'eu-west-1b']);
  });
});

describe('FakeElbv2 TLS listeners: ALPN and certificates', () => {
  async function tlsListener(extra: Partial<ListenerSpec> = {}) {
    const { lb, group } = await lbWithGroup();
    const listener = await elb.createListener(
      lb.arn,
      { port: 443, protocol: 'TLS', certificateArn: 'cert-default', targetGroupArn: group.arn, ...extra },
      {},
    );
    return { lb, group, listener };
  }

  it('stores the ALPN policy of a TLS listener and refuses one elsewhere (ALPNPolicyNotSupported)', async () => {
    const { lb, group, listener } = await tlsListener({ alpnPolicy: 'HTTP2Preferred' });
    expect((await elb.describeListeners(lb.arn))[0]?.alpnPolicy).toBe('HTTP2Preferred');
    const tcp = await elb
      .createListener(lb.arn, { port: 80, protocol: 'TCP', alpnPolicy: 'HTTP1Only', targetGroupArn: group.arn }, {})
      .catch((e: unknown) => e);
    expect(codeOf(tcp)).toBe('ALPNPolicyNotSupported');
    const unknown = await elb
      .modifyListener(listener.arn, {
        port: 443,
        protocol: 'TLS',
        alpnPolicy: 'HTTP3' as AlpnPolicy,
        targetGroupArn: group.arn,
      })
      .catch((e: unknown) => e);
    expect(codeOf(unknown)).toBe('ALPNPolicyNotSupported');
    // Properties left out of ModifyListener keep their values.
    await elb.modifyListener(listener.arn, { port: 443, protocol: 'TLS', targetGroupArn: group.arn });
    expect(elb.listenersOf(lb.arn)[0]).toMatchObject({
      alpnPolicy: 'HTTP2Preferred',
      certificateArns: ['cert-default'],
    });
    // The same port with another policy is another listener.
    const other = await elb
      .createListener(
        lb.arn,
        { port: 443, protocol: 'TLS', certificateArn: 'cert-default', alpnPolicy: 'None', targetGroupArn: group.arn },
        {},
      )
      .catch((e: unknown) => e);
    expect(codeOf(other)).toBe('DuplicateListener');
  });

  it('lists the default certificate first, then the certificate list; adding one twice adds it once', async () => {
    const { listener } = await tlsListener();
    expect(await elb.describeListenerCertificates(listener.arn)).toEqual([
      { certificateArn: 'cert-default', isDefault: true },
    ]);
    elb.resetCalls();
    await elb.addListenerCertificates(listener.arn, ['sni-1', 'sni-2', 'sni-1']);
    await elb.addListenerCertificates(listener.arn, ['sni-1']);
    expect(elb.callCount('AddListenerCertificates')).toBe(3);
    expect(elb.writeCallCount()).toBe(3);
    expect(await elb.describeListenerCertificates(listener.arn)).toEqual([
      { certificateArn: 'cert-default', isDefault: true },
      { certificateArn: 'sni-1', isDefault: false },
      { certificateArn: 'sni-2', isDefault: false },
    ]);
    // The listing does not hold the default until it is added; then it shows twice, as AWS documents.
    await elb.addListenerCertificates(listener.arn, ['cert-default']);
    expect(
      (await elb.describeListenerCertificates(listener.arn)).filter((c) => c.certificateArn === 'cert-default'),
    ).toEqual([
      { certificateArn: 'cert-default', isDefault: true },
      { certificateArn: 'cert-default', isDefault: false },
    ]);
  });

  it('removes listed certificates but never the default (OperationNotPermitted); unknown ones are no error', async () => {
    const { listener } = await tlsListener();
    await elb.addListenerCertificates(listener.arn, ['sni-1', 'sni-2']);
    await elb.removeListenerCertificates(listener.arn, ['sni-1', 'never-added']);
    expect(elb.callCount('RemoveListenerCertificates')).toBe(2);
    const err = await elb.removeListenerCertificates(listener.arn, ['cert-default']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('OperationNotPermitted');
    expect((await elb.describeListenerCertificates(listener.arn)).map((c) => c.certificateArn)).toEqual([
      'cert-default',
      'sni-2',
    ]);
  });

  it('ModifyListener replaces the default certificate; the old one does not join the list', async () => {
    const { group, listener } = await tlsListener();
    await elb.addListenerCertificates(listener.arn, ['sni-1']);
    await elb.modifyListener(listener.arn, {
      port: 443,
      protocol: 'TLS',
      certificateArn: 'cert-new',
      targetGroupArn: group.arn,
    });
    expect(await elb.describeListenerCertificates(listener.arn)).toEqual([
      { certificateArn: 'cert-new', isDefault: true },
      { certificateArn: 'sni-1', isDefault: false },
    ]);
    // A listener that stops being TLS has no certificates left.
    await elb.modifyListener(listener.arn, { port: 443, protocol: 'TCP', targetGroupArn: group.arn });
    expect(await elb.describeListenerCertificates(listener.arn)).toEqual([]);
    expect(elb.listenerCertificates.get(listener.arn)).toEqual([]);
  });

  it('certificates only go on TLS listeners, of a listener that exists', async () => {
    const { lb, group } = await lbWithGroup();
    const tcp = await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    expect(await elb.describeListenerCertificates(tcp.arn)).toEqual([]);
    expect(codeOf(await elb.addListenerCertificates(tcp.arn, ['sni']).catch((e: unknown) => e))).toBe(
      'InvalidConfigurationRequest',
    );
    await elb.deleteListener(tcp.arn);
    for (const call of [
      () => elb.describeListenerCertificates(tcp.arn),
      () => elb.addListenerCertificates(tcp.arn, ['sni']),
      () => elb.removeListenerCertificates(tcp.arn, ['sni']),
    ]) {
      expect(codeOf(await call().catch((e: unknown) => e))).toBe('ListenerNotFound');
    }
  });

  it('the certificate quota counts the listed certificates of all listeners of a load balancer (TooManyCertificates)', async () => {
    elb.certificateQuota = 2;
    const { lb, listener } = await tlsListener();
    const group2 = (await elb.createTargetGroup(tgInput('web-8443'))) as { arn: string };
    const second = await elb.createListener(
      lb.arn,
      { port: 8443, protocol: 'TLS', certificateArn: 'cert-default', targetGroupArn: group2.arn },
      {},
    );
    await elb.addListenerCertificates(listener.arn, ['sni-1']);
    await elb.addListenerCertificates(second.arn, ['sni-2']);
    // Already listed: no new certificate, no quota.
    await elb.addListenerCertificates(second.arn, ['sni-2']);
    const err = await elb.addListenerCertificates(second.arn, ['sni-3']).catch((e: unknown) => e);
    expect(codeOf(err)).toBe('TooManyCertificates');
    await elb.deleteListener(listener.arn);
    await elb.addListenerCertificates(second.arn, ['sni-3']);
    expect(elb.listenerCertificates.get(second.arn)).toEqual(['sni-2', 'sni-3']);
  });
});

describe('FakeElbv2 listener attributes', () => {
  it('a TCP listener has a 350 s idle timeout that can be set within 60-6000', async () => {
    const { lb, group } = await lbWithGroup();
    const tcp = await elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    expect(await elb.describeListenerAttributes(tcp.arn)).toEqual({ 'tcp.idle_timeout.seconds': '350' });
    elb.resetCalls();
    await elb.modifyListenerAttributes(tcp.arn, { 'tcp.idle_timeout.seconds': '6000' });
    await elb.modifyListenerAttributes(tcp.arn, {});
    expect(elb.callCount('ModifyListenerAttributes')).toBe(1);
    expect(elb.writeCallCount()).toBe(1);
    expect(await elb.describeListenerAttributes(tcp.arn)).toEqual({ 'tcp.idle_timeout.seconds': '6000' });
    for (const value of ['59', '6001', '1e3', '']) {
      const err = await elb
        .modifyListenerAttributes(tcp.arn, { 'tcp.idle_timeout.seconds': value })
        .catch((e: unknown) => e);
      expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    }
    expect(codeOf(await elb.modifyListenerAttributes(tcp.arn, { nope: '1' }).catch((e: unknown) => e))).toBe(
      'ValidationError',
    );
    expect(await elb.describeListenerAttributes(tcp.arn)).toEqual({ 'tcp.idle_timeout.seconds': '6000' });
  });

  it('TLS (fixed at 350) and UDP listeners have no attribute to read or set', async () => {
    const { lb, group } = await lbWithGroup();
    const udpGroup = (await elb.createTargetGroup(tgInput('web-53', { protocol: 'UDP' }))) as { arn: string };
    const tls = await elb.createListener(
      lb.arn,
      { port: 443, protocol: 'TLS', certificateArn: 'c', targetGroupArn: group.arn },
      {},
    );
    const udp = await elb.createListener(lb.arn, { port: 53, protocol: 'UDP', targetGroupArn: udpGroup.arn }, {});
    for (const listener of [tls, udp]) {
      expect(await elb.describeListenerAttributes(listener.arn)).toEqual({});
      const err = await elb
        .modifyListenerAttributes(listener.arn, { 'tcp.idle_timeout.seconds': '600' })
        .catch((e: unknown) => e);
      expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    }
    // A listener turned TCP starts from the default.
    await elb.modifyListener(tls.arn, { port: 443, protocol: 'TCP', targetGroupArn: group.arn });
    expect(await elb.describeListenerAttributes(tls.arn)).toEqual({ 'tcp.idle_timeout.seconds': '350' });
    await elb.deleteListener(tls.arn);
    expect(codeOf(await elb.describeListenerAttributes(tls.arn).catch((e: unknown) => e))).toBe('ListenerNotFound');
    expect(elb.listenerAttributes.has(tls.arn)).toBe(false);
  });
});

describe('FakeElbv2 removing tags and the new operations under test controls', () => {
  it('removes tag keys from load balancers, target groups and listeners; a write; unknown ARNs are not found', async () => {
    const { lb, group } = await lbWithGroup();
    const listener = await elb.createListener(
      lb.arn,
      { port: 80, protocol: 'TCP', targetGroupArn: group.arn },
      { a: '1', b: '2' },
    );
    await elb.addTags(group.arn, { x: '1', y: '2' });
    elb.resetCalls();
    await elb.removeTags(lb.arn, ['team', 'absent']);
    await elb.removeTags(group.arn, ['x']);
    await elb.removeTags(listener.arn, ['a']);
    await elb.removeTags(listener.arn, []);
    expect(elb.tagsOf(lb.arn)).toEqual({});
    expect(elb.tagsOf(group.arn)).toEqual({ y: '2' });
    expect(elb.tagsOf(listener.arn)).toEqual({ b: '2' });
    expect(elb.callCount('RemoveTags')).toBe(3);
    expect(elb.writeCallCount()).toBe(3);
    await elb.deleteListener(listener.arn);
    await elb.deleteLoadBalancer(lb.arn);
    expect(codeOf(await elb.removeTags(listener.arn, ['b']).catch((e: unknown) => e))).toBe('ListenerNotFound');
    expect(codeOf(await elb.removeTags(lb.arn, ['b']).catch((e: unknown) => e))).toBe('LoadBalancerNotFound');
    const gone = group.arn.replace('web-80', 'gone-80');
    expect(codeOf(await elb.removeTags(gone, ['b']).catch((e: unknown) => e))).toBe('TargetGroupNotFound');
  });

  it('counts, throttles and plays queued errors for the new operations; describes are reads', async () => {
    const { lb, group } = await lbWithGroup();
    const listener = await elb.createListener(
      lb.arn,
      { port: 443, protocol: 'TLS', certificateArn: 'c', targetGroupArn: group.arn },
      {},
    );
    elb.resetCalls();
    elb.throttle('SetIpAddressType', 1);
    expect(await elb.setIpAddressType(lb.arn, 'ipv4').catch((e: unknown) => e)).toBeInstanceOf(ThrottledError);
    elb.queueError('DescribeListenerCertificates', new AwsServiceError('InternalFailure', 'oops', 500));
    expect(await elb.describeListenerCertificates(listener.arn).catch((e: unknown) => e)).toBeInstanceOf(
      RetryableError,
    );
    elb.throttle('RemoveTags', 1);
    expect(await elb.removeTags(lb.arn, ['team']).catch((e: unknown) => e)).toBeInstanceOf(ThrottledError);
    expect(elb.tagsOf(lb.arn)).toEqual({ team: 'web' });
    await elb.describeListenerCertificates(listener.arn);
    await elb.describeListenerAttributes(listener.arn);
    expect(elb.callCount('DescribeListenerCertificates')).toBe(2);
    expect(elb.callCount('DescribeListenerAttributes')).toBe(1);
    // Throttled and failed calls were made all the same: two writes, no write for the describes.
    expect(elb.writeCallCount()).toBe(2);
  });
});
