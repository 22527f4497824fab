import { expect } from 'vitest';
import { NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS } from '../../shared/aws/elbv2-defaults.ts';
import type { CreateLoadBalancerInput } from '../../shared/aws/elbv2-port.ts';
import { TerminalError } from '../../shared/errors.ts';
import { elbv2Backends } from './backends.ts';
import { describeContract } from './contract.ts';
import { type ElbNetwork, elbNetwork, OWNED } from './elbv2-network.ts';

/**
 * Elbv2Port load balancers: create (idempotency, name clashes), find, list, delete, security groups, subnets,
 * IP address type and attributes. Listeners and target groups have their own files.
 */

const lbInput = (network: ElbNetwork, extra: Partial<CreateLoadBalancerInput> = {}): CreateLoadBalancerInput => ({
  name: 'web',
  scheme: 'internet-facing',
  subnetMappings: [{ subnetId: network.subnets.a }, { subnetId: network.subnets.b }],
  securityGroups: [network.securityGroups[0]],
  tags: OWNED,
  ...extra,
});

describeContract('Elbv2Port: load balancers', elbv2Backends(), (backend, test) => {
  async function created(input: CreateLoadBalancerInput) {
    const lb = await backend().elbv2.createLoadBalancer(input);
    if (lb === 'name-taken') throw new Error(`${input.name} is taken`);
    return lb;
  }

  test('creates a network load balancer, found again by name with its zones, groups and tags', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());

    const lb = await created(lbInput(network));

    expect(lb).toMatchObject({
      name: 'web',
      dnsName: expect.stringContaining('.elb.'),
      scheme: 'internet-facing',
      type: 'network',
      ipAddressType: 'ipv4',
      vpcId: network.vpcId,
      securityGroups: [network.securityGroups[0]],
    });
    expect(['provisioning', 'active']).toContain(lb.state);
    expect(lb.subnets.map((s) => [s.zoneName, s.subnetId]).sort()).toEqual([
      ['eu-west-1a', network.subnets.a],
      ['eu-west-1b', network.subnets.b],
    ]);
    const found = await elbv2.findLoadBalancer('web');
    expect(found?.arn).toBe(lb.arn);
    expect(found?.subnets.map((s) => s.subnetId).sort()).toEqual([network.subnets.a, network.subnets.b].sort());
    expect((await elbv2.describeTags([lb.arn])).get(lb.arn)).toEqual(OWNED);
  });

  test.differs('elbv2.nlb-arn', 'puts net/ in the ARN of a Network Load Balancer', async () => {
    const network = await elbNetwork(backend());

    const lb = await created(lbInput(network));

    // IAM policies and the listener ARNs derived from it depend on the `net/` part.
    expect(lb.arn).toMatch(/^arn:aws:elasticloadbalancing:eu-west-1:\d{12}:loadbalancer\/net\/web\/[0-9a-f]+$/);
  });

  test.differs(
    'elbv2.nlb-dns-name',
    'names a Network Load Balancer <name>-<id>.elb.<region>.amazonaws.com',
    async () => {
      const network = await elbNetwork(backend());

      const lb = await created(lbInput(network));

      // The service controller tells an NLB's hostname in a Service's status from a Classic ELB's by this form
      // (functions/service/decide.ts isClassicHostname): a Classic ELB is <name>-<n>.<region>.elb.amazonaws.com.
      expect(lb.dnsName).toMatch(/^web-[0-9a-f]+\.elb\.eu-west-1\.amazonaws\.com$/);
    },
  );

  test('finds no load balancer for an unknown name, without an error', async () => {
    const { elbv2 } = backend();

    expect(await elbv2.findLoadBalancer('no-such-lb')).toBeUndefined();
  });

  test.differs(
    'elbv2.lb-create-same-name',
    'answers the existing load balancer when one of that name has the same settings',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const first = await created(lbInput(network));

      const again = await elbv2.createLoadBalancer(lbInput(network));

      expect(again).toMatchObject({ arn: first.arn });
      expect((await elbv2.listLoadBalancers()).filter((lb) => lb.name === 'web')).toHaveLength(1);
    },
  );

  test.differs(
    'elbv2.lb-create-same-name',
    'answers name-taken when a load balancer of that name has other settings',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      await created(lbInput(network));

      expect(await elbv2.createLoadBalancer(lbInput(network, { scheme: 'internal' }))).toBe('name-taken');
      expect(
        await elbv2.createLoadBalancer(lbInput(network, { subnetMappings: [{ subnetId: network.subnets.c }] })),
      ).toBe('name-taken');
    },
  );

  test('lists every load balancer of the region', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const web = await created(lbInput(network));
    const api = await created(lbInput(network, { name: 'api', scheme: 'internal' }));

    const all = await elbv2.listLoadBalancers();

    expect(all.map((lb) => lb.arn).sort()).toEqual([web.arn, api.arn].sort());
    expect(all.find((lb) => lb.arn === api.arn)?.scheme).toBe('internal');
  });

  test('deletes a load balancer; deleting it again succeeds', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await created(lbInput(network));

    await elbv2.deleteLoadBalancer(lb.arn);

    expect(await elbv2.findLoadBalancer('web')).toBeUndefined();
    expect(await elbv2.listLoadBalancers()).toEqual([]);
    await expect(elbv2.deleteLoadBalancer(lb.arn)).resolves.toBeUndefined();
  });

  test('replaces the security groups of a load balancer', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await created(lbInput(network));

    await elbv2.setSecurityGroups(lb.arn, [network.securityGroups[1], network.securityGroups[0]]);

    expect((await elbv2.findLoadBalancer('web'))?.securityGroups.sort()).toEqual([...network.securityGroups].sort());
  });

  test('adds a zone to a load balancer', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await created(lbInput(network));

    await elbv2.setSubnets(lb.arn, [
      { subnetId: network.subnets.a },
      { subnetId: network.subnets.b },
      { subnetId: network.subnets.c },
    ]);

    const zones = (await elbv2.findLoadBalancer('web'))?.subnets.map((s) => [s.zoneName, s.subnetId]).sort();
    expect(zones).toEqual([
      ['eu-west-1a', network.subnets.a],
      ['eu-west-1b', network.subnets.b],
      ['eu-west-1c', network.subnets.c],
    ]);
  });

  test.differs('elbv2.nlb-single-zone', 'removes zones from a load balancer, down to a single one', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await created(lbInput(network));

    await elbv2.setSubnets(lb.arn, [{ subnetId: network.subnets.b }]);

    expect((await elbv2.findLoadBalancer('web'))?.subnets.map((s) => s.subnetId)).toEqual([network.subnets.b]);
  });

  test.differs(
    'elbv2.nlb-subnet-in-place',
    'refuses to change the subnet of a zone the load balancer keeps (remove the zone first)',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const lb = await created(lbInput(network));

      const refused = elbv2.setSubnets(lb.arn, [{ subnetId: network.subnets.a2 }, { subnetId: network.subnets.b }]);

      await expect(refused).rejects.toThrow(/InvalidConfigurationRequest/);
      expect((await elbv2.findLoadBalancer('web'))?.subnets.map((s) => s.subnetId).sort()).toEqual(
        [network.subnets.a, network.subnets.b].sort(),
      );
    },
  );

  test('creates a dualstack load balancer in IPv6 subnets and turns it back to ipv4', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend(), { ipv6: true });
    const lb = await created(lbInput(network, { ipAddressType: 'dualstack' }));
    expect(lb.ipAddressType).toBe('dualstack');

    await elbv2.setIpAddressType(lb.arn, 'ipv4');
    expect((await elbv2.findLoadBalancer('web'))?.ipAddressType).toBe('ipv4');

    await elbv2.setIpAddressType(lb.arn, 'dualstack');
    expect((await elbv2.findLoadBalancer('web'))?.ipAddressType).toBe('dualstack');
  });

  test.differs(
    'elbv2.dualstack-needs-ipv6-subnets',
    'refuses dualstack for a load balancer whose subnets have no IPv6 block',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const lb = await created(lbInput(network));

      await expect(elbv2.setIpAddressType(lb.arn, 'dualstack')).rejects.toThrow(TerminalError);
      expect((await elbv2.findLoadBalancer('web'))?.ipAddressType).toBe('ipv4');
    },
  );

  // The controller puts AWS's defaults back when an annotation goes away: they come from one fixture, which the
  // fake answers too (shared/aws/elbv2-defaults.ts).
  test.differs(
    'elbv2.lb-attribute-defaults',
    "reads back a new load balancer's attributes with AWS's defaults",
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const lb = await created(lbInput(network));

      expect(await elbv2.describeLoadBalancerAttributes(lb.arn)).toEqual(NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS);
    },
  );

  test("states each attribute it knows of a new load balancer with AWS's default", async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await created(lbInput(network));

    const stated = await elbv2.describeLoadBalancerAttributes(lb.arn);
    const defaults = Object.fromEntries(
      Object.keys(stated).map((key) => [key, NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS[key]]),
    );
    expect(Object.keys(stated).length).toBeGreaterThan(0);
    expect(stated).toEqual(defaults);
  });

  test('changes load balancer attributes, leaving the others as they were', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await created(lbInput(network));
    const before = await elbv2.describeLoadBalancerAttributes(lb.arn);

    await elbv2.modifyLoadBalancerAttributes(lb.arn, { 'load_balancing.cross_zone.enabled': 'true' });

    expect(await elbv2.describeLoadBalancerAttributes(lb.arn)).toEqual({
      ...before,
      'load_balancing.cross_zone.enabled': 'true',
    });
  });

  test('refuses an attribute a load balancer does not have', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const lb = await created(lbInput(network));

    await expect(elbv2.modifyLoadBalancerAttributes(lb.arn, { 'no.such.attribute': 'true' })).rejects.toThrow(
      TerminalError,
    );
  });

  test.differs(
    'elbv2.lb-deletion-protection',
    'refuses to delete a load balancer with deletion protection on',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const lb = await created(lbInput(network));
      await elbv2.modifyLoadBalancerAttributes(lb.arn, { 'deletion_protection.enabled': 'true' });

      await expect(elbv2.deleteLoadBalancer(lb.arn)).rejects.toThrow(/OperationNotPermitted/);
      expect((await elbv2.findLoadBalancer('web'))?.arn).toBe(lb.arn);
    },
  );
});
