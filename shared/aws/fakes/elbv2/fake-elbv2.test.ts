import { beforeEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../../../errors.ts';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import { NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS } from '../../elbv2-defaults.ts';
import { makeSubnet } from '../ec2/fake-ec2.ts';
import { codeOf, elbv2World, failure, lbInput, SUBNET_A, SUBNET_A2, SUBNET_B } from './testing.ts';

/** The fake ELBv2 API behind the real adapter: load balancers, their zones and IP address types. */
let w: ReturnType<typeof elbv2World>;
beforeEach(() => {
  w = elbv2World();
});

describe('FakeElbv2 load balancers, through Elbv2Adapter', () => {
  it('provision for a few describes (or minutes), then are active; DNS names and zones as AWS gives them', async () => {
    const created = await w.lb();
    expect(created).toMatchObject({
      name: 'web',
      state: 'provisioning',
      type: 'network',
      dnsName: expect.stringMatching(/^web-[0-9a-f]{16}\.elb\.eu-west-1\.amazonaws\.com$/),
      subnets: [
        { subnetId: SUBNET_A.subnetId, zoneName: 'eu-west-1a' },
        { subnetId: SUBNET_B.subnetId, zoneName: 'eu-west-1b' },
      ],
    });
    expect((await w.elb.findLoadBalancer('web'))?.state).toBe('provisioning');
    expect((await w.elb.findLoadBalancer('web'))?.state).toBe('provisioning');
    expect((await w.elb.findLoadBalancer('WEB'))?.state).toBe('active');

    await w.lb({ name: 'slow' });
    w.clock.advance(w.fake.provisioningMs);
    expect((await w.elb.findLoadBalancer('slow'))?.state).toBe('active');
    expect(await w.elb.findLoadBalancer('missing')).toBeUndefined();
  });

  it('create is idempotent with the same settings; other settings are DuplicateLoadBalancerName: the name is taken', async () => {
    const first = await w.lb();
    expect(await w.elb.createLoadBalancer(lbInput())).toMatchObject({ arn: first.arn });
    expect(await w.elb.createLoadBalancer(lbInput({ scheme: 'internal' }))).toBe('name-taken');
    expect(w.fake.loadBalancers.size).toBe(1);
    expect(w.fake.callCount('CreateLoadBalancer')).toBe(3);
    expect(w.fake.writeCallCount()).toBe(3);
  });

  it.each([
    ['an unknown subnet', { subnetMappings: [{ subnetId: 'subnet-nope' }] }, 'SubnetNotFound'],
    [
      'two subnets in one zone',
      { subnetMappings: [{ subnetId: SUBNET_A.subnetId }, { subnetId: SUBNET_A2.subnetId }] },
      'InvalidConfigurationRequest',
    ],
    ['an unknown security group', { securityGroups: ['sg-nope'] }, 'InvalidSecurityGroup'],
    [
      'a private address on an internet-facing one',
      { subnetMappings: [{ subnetId: SUBNET_A.subnetId, privateIPv4Address: '10.0.1.5' }] },
      'InvalidConfigurationRequest',
    ],
    ['a bad name', { name: 'internal-web' }, 'ValidationError'],
  ])('refuses %s (%s)', async (_, extra, code) => {
    const err = await failure(w.elb.createLoadBalancer(lbInput(extra)));
    expect(codeOf(err)).toBe(code);
    expect(w.fake.loadBalancers.size).toBe(0);
  });

  it('deletion removes the listeners, succeeds when already gone, and keeps the security groups in use while ENIs drain', async () => {
    const { lb, group } = await w.lbWithGroup();
    await w.elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    await w.elb.deleteLoadBalancer(lb.arn);
    await w.elb.deleteLoadBalancer(lb.arn);
    expect(w.fake.listeners.size).toBe(0);
    expect(w.fake.callCount('DeleteLoadBalancer')).toBe(2);
    const ec2 = new Ec2Adapter(w.ec2);
    expect(codeOf(await failure(ec2.deleteSecurityGroup('sg-lb')))).toBe('DependencyViolation');
    w.clock.advance(w.fake.eniDrainMs);
    expect(await ec2.deleteSecurityGroup('sg-lb')).toBe('deleted');
  });

  it('deletion protection refuses deletion (OperationNotPermitted, a terminal error)', async () => {
    const lb = await w.lb();
    await w.elb.modifyLoadBalancerAttributes(lb.arn, { 'deletion_protection.enabled': 'true' });
    const err = await failure(w.elb.deleteLoadBalancer(lb.arn));
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('OperationNotPermitted');
    expect(w.fake.loadBalancerNamed('web')).toBeDefined();
  });

  it("attributes: AWS's defaults (elbv2-defaults.ts), unknown keys refused, access logs need a bucket", async () => {
    const lb = await w.lb();
    expect(await w.elb.describeLoadBalancerAttributes(lb.arn)).toEqual(NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS);
    expect(codeOf(await failure(w.elb.modifyLoadBalancerAttributes(lb.arn, { nope: '1' })))).toBe('ValidationError');
    const noBucket = await failure(w.elb.modifyLoadBalancerAttributes(lb.arn, { 'access_logs.s3.enabled': 'true' }));
    expect(codeOf(noBucket)).toBe('InvalidConfigurationRequest');
    // A refused change changes nothing, even the valid attributes of the same call.
    const mixed = { 'load_balancing.cross_zone.enabled': 'true', nope: '1' };
    await failure(w.elb.modifyLoadBalancerAttributes(lb.arn, mixed));
    expect(w.fake.attributesOf(lb.arn)).toEqual(NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS);
  });

  it('security groups can be changed only on a load balancer created with some', async () => {
    w.ec2.putSecurityGroup({
      groupId: 'sg-2',
      groupName: 'two',
      vpcId: 'vpc-0a1b2c3d',
      description: '',
      tags: {},
      ingress: [],
    });
    const lb = await w.lb();
    await w.elb.setSecurityGroups(lb.arn, ['sg-2']);
    expect(w.fake.loadBalancerNamed('web')?.securityGroups).toEqual(['sg-2']);
    const bare = w.fake.putLoadBalancer(lbInput({ name: 'bare', securityGroups: [] }));
    expect(codeOf(await failure(w.elb.setSecurityGroups(bare.arn, ['sg-2'])))).toBe('InvalidConfigurationRequest');
    expect(codeOf(await failure(w.elb.setSecurityGroups(`${lb.arn}0`, ['sg-2'])))).toBe('LoadBalancerNotFound');
  });
});

describe('FakeElbv2 IP address types', () => {
  const a6 = makeSubnet({ index: 4, zone: 'eu-west-1a', ipv6: true });
  const b6 = makeSubnet({ index: 5, zone: 'eu-west-1b', ipv6: true });
  const c4 = makeSubnet({ index: 6, zone: 'eu-west-1c' });
  const dual = (extra = {}) =>
    lbInput({
      name: 'dual',
      subnetMappings: [{ subnetId: a6.subnetId }, { subnetId: b6.subnetId }],
      ipAddressType: 'dualstack',
      ...extra,
    });
  beforeEach(() => {
    for (const s of [a6, b6, c4]) w.ec2.putSubnet(s);
  });

  it('a load balancer is ipv4 unless created dualstack, which needs an IPv6 CIDR in every subnet', async () => {
    expect((await w.lb()).ipAddressType).toBe('ipv4');
    expect(await w.elb.createLoadBalancer(dual())).toMatchObject({ ipAddressType: 'dualstack' });
    expect(await w.elb.createLoadBalancer(dual())).toMatchObject({ ipAddressType: 'dualstack' });
    expect(await w.elb.createLoadBalancer(dual({ ipAddressType: 'ipv4' }))).toBe('name-taken');
    const mixed = lbInput({
      name: 'mixed',
      subnetMappings: [{ subnetId: a6.subnetId }, { subnetId: c4.subnetId }],
      ipAddressType: 'dualstack',
    });
    const err = await failure(w.elb.createLoadBalancer(mixed));
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    expect(w.fake.loadBalancerNamed('mixed')).toBeUndefined();
  });

  it('SetIpAddressType is a write, checks the subnets for dualstack, and goes back to ipv4', async () => {
    const lb = await w.lb();
    w.fake.resetCalls();
    expect(codeOf(await failure(w.elb.setIpAddressType(lb.arn, 'dualstack')))).toBe('InvalidConfigurationRequest');
    expect(w.fake.loadBalancerNamed('web')?.ipAddressType).toBe('ipv4');
    const v6 = w.fake.putLoadBalancer(lbInput({ name: 'v6', subnetMappings: [{ subnetId: a6.subnetId }] }));
    await w.elb.setIpAddressType(v6.arn, 'dualstack');
    expect((await w.elb.findLoadBalancer('v6'))?.ipAddressType).toBe('dualstack');
    await w.elb.setIpAddressType(v6.arn, 'ipv4');
    expect(w.fake.loadBalancerNamed('v6')?.ipAddressType).toBe('ipv4');
    expect(w.fake.callCount('SetIpAddressType')).toBe(3);
    expect(w.fake.writeCallCount()).toBe(3);
    expect(codeOf(await failure(w.elb.setIpAddressType('arn:nope', 'ipv4')))).toBe('LoadBalancerNotFound');
  });

  it('a dualstack load balancer takes only subnets with IPv6 CIDR blocks', async () => {
    const lb = (await w.elb.createLoadBalancer(dual())) as { arn: string };
    const subnets = [{ subnetId: a6.subnetId }, { subnetId: b6.subnetId }, { subnetId: c4.subnetId }];
    expect(codeOf(await failure(w.elb.setSubnets(lb.arn, subnets)))).toBe('InvalidConfigurationRequest');
    expect(w.fake.loadBalancerNamed('dual')?.subnets).toHaveLength(2);
  });

  it('an IPv6 target group serves a dualstack load balancer only, which then cannot go back to ipv4', async () => {
    const v6 = await w.group({ name: 'v6', targetType: 'ip', ipAddressType: 'ipv6' });
    const lb = await w.lb();
    const spec = { port: 80, protocol: 'TCP' as const, targetGroupArn: v6.arn };
    expect(codeOf(await failure(w.elb.createListener(lb.arn, spec, {})))).toBe('InvalidConfigurationRequest');
    const dualLb = (await w.elb.createLoadBalancer(dual())) as { arn: string };
    await w.elb.createListener(dualLb.arn, spec, {});
    expect(codeOf(await failure(w.elb.setIpAddressType(dualLb.arn, 'ipv4')))).toBe('InvalidConfigurationRequest');
  });
});

describe('FakeElbv2 subnets of a Network Load Balancer', () => {
  const c = makeSubnet({ index: 7, zone: 'eu-west-1c' });
  beforeEach(() => {
    w.ec2.putSubnet(c);
  });
  const zonesOf = async (name: string) => (await w.elb.findLoadBalancer(name))?.subnets.map((s) => s.zoneName);

  it('adds zones and keeps the ones that stay with their addresses (an address left out is kept)', async () => {
    const lb = await w.lb({ subnetMappings: [{ subnetId: SUBNET_A.subnetId, allocationId: 'eipalloc-1' }] });
    await w.elb.setSubnets(lb.arn, [
      { subnetId: SUBNET_A.subnetId },
      { subnetId: SUBNET_B.subnetId, allocationId: 'eipalloc-2' },
    ]);
    expect((await w.elb.findLoadBalancer('web'))?.subnets).toEqual([
      { subnetId: SUBNET_A.subnetId, allocationId: 'eipalloc-1', zoneName: 'eu-west-1a' },
      { subnetId: SUBNET_B.subnetId, allocationId: 'eipalloc-2', zoneName: 'eu-west-1b' },
    ]);
    expect(w.fake.callCount('SetSubnets')).toBe(1);
  });

  it.each([
    ['another subnet in a zone that stays', [{ subnetId: SUBNET_A2.subnetId }, { subnetId: SUBNET_B.subnetId }]],
    ['another Elastic IP in a zone that stays', [{ subnetId: SUBNET_A.subnetId, allocationId: 'eipalloc-9' }]],
  ])('refuses %s in one call (InvalidConfigurationRequest): the zone must be removed first', async (_, mappings) => {
    const lb = await w.lb();
    const err = await failure(w.elb.setSubnets(lb.arn, mappings));
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    expect(await zonesOf('web')).toEqual(['eu-west-1a', 'eu-west-1b']);
  });

  it('a removed zone is gone at once, but no subnet of it can be added until the removal completes', async () => {
    const lb = await w.lb();
    await w.elb.setSubnets(lb.arn, [{ subnetId: SUBNET_B.subnetId }]);
    expect(await zonesOf('web')).toEqual(['eu-west-1b']);
    w.clock.advance(w.fake.subnetRemovalMs - 1);
    for (const subnetId of [SUBNET_A.subnetId, SUBNET_A2.subnetId]) {
      const err = await failure(w.elb.setSubnets(lb.arn, [{ subnetId: SUBNET_B.subnetId }, { subnetId }]));
      expect(codeOf(err)).toBe('InvalidConfigurationRequest');
    }
    // Other zones can be added meanwhile.
    await w.elb.setSubnets(lb.arn, [{ subnetId: SUBNET_B.subnetId }, { subnetId: c.subnetId }]);
    w.clock.advance(1);
    const all = [{ subnetId: SUBNET_B.subnetId }, { subnetId: c.subnetId }, { subnetId: SUBNET_A2.subnetId }];
    await w.elb.setSubnets(lb.arn, all);
    expect(w.fake.loadBalancerNamed('web')?.subnets.map((s) => s.subnetId)).toEqual(all.map((s) => s.subnetId));
  });

  it('keeps at least one subnet and checks subnets as on create', async () => {
    const lb = await w.lb();
    expect(codeOf(await failure(w.elb.setSubnets(lb.arn, [])))).toBe('ValidationError');
    expect(codeOf(await failure(w.elb.setSubnets(lb.arn, [{ subnetId: 'subnet-nope' }])))).toBe('SubnetNotFound');
    const twoInOneZone = [
      { subnetId: SUBNET_A.subnetId },
      { subnetId: SUBNET_B.subnetId },
      { subnetId: SUBNET_A2.subnetId },
    ];
    expect(codeOf(await failure(w.elb.setSubnets(lb.arn, twoInOneZone)))).toBe('InvalidConfigurationRequest');
    expect(await zonesOf('web')).toEqual(['eu-west-1a', 'eu-west-1b']);
  });
});
