import { expect } from 'vitest';
import { nlbTargetGroupAttributeDefaults } from '../../shared/aws/elbv2-defaults.ts';
import { TAGS_ARNS_PER_CALL } from '../../shared/aws/elbv2-port.ts';
import { RetryableError } from '../../shared/errors.ts';
import { elbv2Backends } from './backends.ts';
import { describeContract } from './contract.ts';
import { type ElbNetwork, elbNetwork, loadBalancerWithListener, OWNED, targetGroupInput } from './elbv2-network.ts';

/** Elbv2Port target groups, their targets, and tags of load balancers, target groups and listeners. */

describeContract('Elbv2Port: target groups, targets, tags', elbv2Backends(), (backend, test) => {
  async function created(network: ElbNetwork, name: string, extra: Parameters<typeof targetGroupInput>[2] = {}) {
    const group = await backend().elbv2.createTargetGroup(targetGroupInput(network, name, extra));
    if (group === 'name-taken') throw new Error(`${name} is taken`);
    return group;
  }

  test('creates a target group, read back with its health check and no load balancer', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const input = targetGroupInput(network, 'web-80');

    const group = await created(network, 'web-80');

    const expected = {
      arn: expect.stringMatching(/^arn:aws:elasticloadbalancing:eu-west-1:\d{12}:targetgroup\/web-80\/[0-9a-f]+$/),
      name: 'web-80',
      protocol: 'TCP',
      port: 30080,
      targetType: 'instance',
      ipAddressType: 'ipv4',
      vpcId: network.vpcId,
      healthCheck: input.healthCheck,
      loadBalancerArns: [],
    };
    expect(group).toEqual(expected);
    expect(await elbv2.findTargetGroups(['web-80'])).toEqual([expected]);
    expect((await elbv2.describeTags([group.arn])).get(group.arn)).toEqual(OWNED);
  });

  test('creates an IPv6 target group for IP targets', async () => {
    const network = await elbNetwork(backend(), { ipv6: true });

    const group = await created(network, 'web-80-v6', { targetType: 'ip', ipAddressType: 'ipv6' });

    expect(group).toMatchObject({ targetType: 'ip', ipAddressType: 'ipv6' });
  });

  test('finds target groups by name; unknown names are simply absent', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const web = await created(network, 'web-80');
    const api = await created(network, 'api-80');

    const found = await elbv2.findTargetGroups(['web-80', 'nobody-80', 'api-80']);

    expect(found.map((g) => g.arn).sort()).toEqual([web.arn, api.arn].sort());
    expect(await elbv2.findTargetGroups(['nobody-80'])).toEqual([]);
    expect(await elbv2.findTargetGroups([])).toEqual([]);
  });

  test('lists every target group of the region', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const web = await created(network, 'web-80');
    const api = await created(network, 'api-80');

    expect((await elbv2.listTargetGroups()).map((g) => g.arn).sort()).toEqual([web.arn, api.arn].sort());
  });

  test.differs(
    'elbv2.tg-create-same-name',
    'answers the existing target group when one of that name has the same settings',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const first = await created(network, 'web-80');

      const again = await elbv2.createTargetGroup(targetGroupInput(network, 'web-80'));

      expect(again).toMatchObject({ arn: first.arn });
    },
  );

  test('answers name-taken when a target group of that name has other settings', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    await created(network, 'web-80');

    expect(await elbv2.createTargetGroup(targetGroupInput(network, 'web-80', { port: 30099 }))).toBe('name-taken');
  });

  test('changes the health check of a target group', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const group = await created(network, 'web-80');
    const healthCheck = {
      protocol: 'HTTP' as const,
      port: '10256',
      path: '/healthz',
      intervalSeconds: 10,
      timeoutSeconds: 6,
      healthyThreshold: 2,
      unhealthyThreshold: 2,
    };

    await elbv2.modifyTargetGroupHealthCheck(group.arn, healthCheck);

    expect((await elbv2.findTargetGroups(['web-80']))[0]?.healthCheck).toEqual(healthCheck);
  });

  // The controller puts AWS's defaults back when an annotation goes away: they come from one fixture, which the
  // fake answers too (shared/aws/elbv2-defaults.ts).
  test.differs(
    'elbv2.tg-attribute-defaults',
    "reads back a new target group's attributes with AWS's defaults for a Network Load Balancer",
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const instance = await created(network, 'web-80');
      const ip = await created(network, 'web-ip', { targetType: 'ip' });

      expect(await elbv2.describeTargetGroupAttributes(instance.arn)).toEqual(
        nlbTargetGroupAttributeDefaults('instance', 'TCP'),
      );
      expect(await elbv2.describeTargetGroupAttributes(ip.arn)).toEqual(nlbTargetGroupAttributeDefaults('ip', 'TCP'));
    },
  );

  test("states each Network Load Balancer attribute it knows of a new target group with AWS's default", async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const group = await created(network, 'web-80');

    const defaults = nlbTargetGroupAttributeDefaults('instance', 'TCP');
    const stated = await elbv2.describeTargetGroupAttributes(group.arn);
    const known = Object.keys(stated).filter((key) => key in defaults);
    expect(known).toEqual(expect.arrayContaining(['deregistration_delay.timeout_seconds', 'stickiness.enabled']));
    expect(Object.fromEntries(known.map((key) => [key, stated[key]]))).toEqual(
      Object.fromEntries(known.map((key) => [key, defaults[key]])),
    );
  });

  test('changes target group attributes, leaving the others as they were', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const group = await created(network, 'web-80');
    const before = await elbv2.describeTargetGroupAttributes(group.arn);

    await elbv2.modifyTargetGroupAttributes(group.arn, {
      'deregistration_delay.timeout_seconds': '30',
      'proxy_protocol_v2.enabled': 'true',
    });

    expect(await elbv2.describeTargetGroupAttributes(group.arn)).toEqual({
      ...before,
      'deregistration_delay.timeout_seconds': '30',
      'proxy_protocol_v2.enabled': 'true',
    });
  });

  test('refuses to delete a target group a listener forwards to (ResourceInUse, retryable)', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const { group, listener } = await loadBalancerWithListener(backend(), network);

    const refused = await elbv2.deleteTargetGroup(group.arn).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(RetryableError);
    expect(String(refused)).toMatch(/ResourceInUse/);

    await elbv2.deleteListener(listener.arn);
    expect(await elbv2.deleteTargetGroup(group.arn)).toBe('deleted');
    expect(await elbv2.deleteTargetGroup(group.arn)).toBe('not-found');
    expect(await elbv2.findTargetGroups(['web-80'])).toEqual([]);
  });

  test('deleting a load balancer deletes its listeners, so its target group can go', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const { lb, group } = await loadBalancerWithListener(backend(), network);

    await elbv2.deleteLoadBalancer(lb.arn);

    expect(await elbv2.deleteTargetGroup(group.arn)).toBe('deleted');
  });

  async function instances(network: ElbNetwork, count: number) {
    return backend().seed.instances({ subnetId: network.subnets.a, count });
  }

  test('registers instance targets once each, however often they are registered', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const { group } = await loadBalancerWithListener(backend(), network);
    const [one, two] = await instances(network, 2);
    const targets = [
      { id: one!.instanceId, port: 30080 },
      { id: two!.instanceId, port: 30080 },
    ];

    await elbv2.registerTargets(group.arn, targets);
    await elbv2.registerTargets(group.arn, targets);

    const health = await elbv2.describeTargetHealth(group.arn);
    expect(health.map((h) => h.target).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
      [...targets].sort((a, b) => a.id.localeCompare(b.id)),
    );
  });

  test('registers IP targets in an IP target group', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const group = await created(network, 'web-ip', { targetType: 'ip' });

    await elbv2.registerTargets(group.arn, [{ id: '10.0.1.10', port: 8080 }]);

    expect((await elbv2.describeTargetHealth(group.arn)).map((h) => h.target)).toEqual([
      { id: '10.0.1.10', port: 8080 },
    ]);
  });

  test('refuses to register an instance that is not running', async () => {
    const { elbv2, seed } = backend();
    const network = await elbNetwork(backend());
    const group = await created(network, 'web-80');
    const [stopped] = await instances(network, 1);
    await seed.stop([stopped!.instanceId]);

    await expect(elbv2.registerTargets(group.arn, [{ id: stopped!.instanceId, port: 30080 }])).rejects.toThrow(
      /InvalidTarget/,
    );
  });

  test('a deregistered target no longer takes traffic; the others stay', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const { group } = await loadBalancerWithListener(backend(), network);
    const [one, two] = await instances(network, 2);
    await elbv2.registerTargets(group.arn, [
      { id: one!.instanceId, port: 30080 },
      { id: two!.instanceId, port: 30080 },
    ]);

    await elbv2.deregisterTargets(group.arn, [{ id: one!.instanceId, port: 30080 }]);

    const health = await elbv2.describeTargetHealth(group.arn);
    // Gone, or draining for the deregistration delay: either way not in service.
    expect(health.filter((h) => h.target.id === one!.instanceId && h.state !== 'draining')).toEqual([]);
    expect(health.find((h) => h.target.id === two!.instanceId)?.state).not.toBe('draining');
  });

  test.differs(
    'elbv2.deregister-unknown-target',
    'deregistering a target that is not registered is no error',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const group = await created(network, 'web-80');
      const [one] = await instances(network, 1);

      await expect(elbv2.deregisterTargets(group.arn, [{ id: one!.instanceId, port: 30080 }])).resolves.toBeUndefined();
    },
  );

  test.differs('elbv2.target-draining', 'a deregistered target is draining for the deregistration delay', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const { group } = await loadBalancerWithListener(backend(), network);
    const [one] = await instances(network, 1);
    await elbv2.registerTargets(group.arn, [{ id: one!.instanceId, port: 30080 }]);

    await elbv2.deregisterTargets(group.arn, [{ id: one!.instanceId, port: 30080 }]);

    expect(await elbv2.describeTargetHealth(group.arn)).toEqual([
      {
        target: { id: one!.instanceId, port: 30080 },
        state: 'draining',
        reason: 'Target.DeregistrationInProgress',
        description: 'Target deregistration is in progress',
      },
    ]);
  });

  test.differs(
    'elbv2.target-unused',
    'targets of a target group no listener forwards to are unused (Target.NotInUse)',
    async () => {
      const { elbv2 } = backend();
      const network = await elbNetwork(backend());
      const group = await created(network, 'web-80');
      const [one] = await instances(network, 1);

      await elbv2.registerTargets(group.arn, [{ id: one!.instanceId, port: 30080 }]);

      expect(await elbv2.describeTargetHealth(group.arn)).toEqual([
        {
          target: { id: one!.instanceId, port: 30080 },
          state: 'unused',
          reason: 'Target.NotInUse',
          description: 'Target group is not configured to receive traffic from the load balancer',
        },
      ]);
    },
  );

  test('adds, overwrites and removes tags of a load balancer, a target group and a listener', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const { lb, group, listener } = await loadBalancerWithListener(backend(), network);
    const arns = [lb.arn, group.arn, listener.arn];

    for (const arn of arns) await elbv2.addTags(arn, { team: 'web', 'kubernetes.io/service-name': 'default/web' });
    for (const arn of arns) await elbv2.addTags(arn, { team: 'api' });
    let tags = await elbv2.describeTags(arns);
    for (const arn of arns) {
      expect(tags.get(arn)).toEqual({ ...OWNED, team: 'api', 'kubernetes.io/service-name': 'default/web' });
    }

    // Keys the resource does not have are not an error.
    for (const arn of arns) await elbv2.removeTags(arn, ['team', 'never-set']);
    tags = await elbv2.describeTags(arns);
    for (const arn of arns) expect(tags.get(arn)).toEqual({ ...OWNED, 'kubernetes.io/service-name': 'default/web' });
  });

  test(`describes the tags of more resources than one DescribeTags call takes (${TAGS_ARNS_PER_CALL} ARNs)`, async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const groups = [];
    for (let n = 0; n < TAGS_ARNS_PER_CALL + 1; n++) groups.push(await created(network, `tg-${n}`));

    const tags = await elbv2.describeTags(groups.map((g) => g.arn));

    expect(tags.size).toBe(TAGS_ARNS_PER_CALL + 1);
    expect([...tags.values()].every((t) => t['kubernetes.io/cluster/contract'] === 'owned')).toBe(true);
  });

  test.differs('elbv2.tags-unknown-arn', 'leaves ARNs ELBv2 does not know out of the tags it describes', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const group = await created(network, 'web-80');
    const gone = await created(network, 'gone-80');
    await elbv2.deleteTargetGroup(gone.arn);

    const tags = await elbv2.describeTags([group.arn, gone.arn]);

    expect([...tags.keys()]).toEqual([group.arn]);
  });

  test('refuses to tag a resource ELBv2 does not know', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());
    const gone = await created(network, 'gone-80');
    await elbv2.deleteTargetGroup(gone.arn);

    await expect(elbv2.addTags(gone.arn, { team: 'web' })).rejects.toThrow(/TargetGroupNotFound/);
  });
});
