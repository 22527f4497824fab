import { expect } from 'vitest';
import { CLASSIC_ATTRIBUTE_DEFAULTS, CLASSIC_HEALTH_CHECK_DEFAULTS } from '../../shared/aws/elb-defaults.ts';
import type { ClassicAttributes, CreateClassicLoadBalancerInput } from '../../shared/aws/elb-port.ts';
import { describeContract } from './contract.ts';
import { elbBackends } from './elb-backends.ts';
import { classicNetwork, createdLoadBalancer, lbInput, OWNED, TCP_80 } from './elb-network.ts';

/**
 * ElbPort load balancers (Classic, API 2012-06-01): create (tags, idempotency, name clashes), find, list, delete,
 * DNS names, subnets, security groups, health check and attributes. Listeners, instances and tags have
 * elb-members.contract.test.ts; policies elb-policies.contract.test.ts.
 */

describeContract('ElbPort: load balancers', elbBackends(), (backend, test) => {
  test('creates a load balancer, found again by name with its VPC, subnets, groups, listeners and tags', async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());

    const dnsName = await createdLoadBalancer(backend(), lbInput(network));

    const found = await elb.findLoadBalancer('web');
    expect(found).toMatchObject({
      name: 'web',
      dnsName,
      scheme: 'internet-facing',
      vpcId: network.vpcId,
      securityGroups: [network.securityGroups[0]],
      listeners: [{ ...TCP_80, policyNames: [] }],
      instanceIds: [],
      backendPolicies: [],
    });
    expect(found?.subnets.sort()).toEqual([network.subnets.a, network.subnets.b].sort());
    // Tagged in the create call: the ownership tag is there from the first moment.
    expect((await elb.describeTags(['web'])).get('web')).toEqual(OWNED);
  });

  test.differs(
    'elb.dns-name',
    'names a load balancer after itself and its region, an internal one with internal- in front',
    async () => {
      const network = await classicNetwork(backend());

      const web = await createdLoadBalancer(backend(), lbInput(network));
      const api = await createdLoadBalancer(backend(), lbInput(network, { name: 'api', scheme: 'internal' }));

      // The Service's status shows this name; the internal- prefix is how users tell the two schemes apart.
      expect(web).toMatch(/^web-\d+\.eu-west-1\.elb\.amazonaws\.com$/);
      expect(api).toMatch(/^internal-api-\d+\.eu-west-1\.elb\.amazonaws\.com$/);
      expect((await backend().elb.findLoadBalancer('api'))?.scheme).toBe('internal');
    },
  );

  test.differs(
    'elb.internet-facing-needs-gateway',
    'refuses an internet-facing load balancer in a VPC without an internet gateway (InvalidSubnet); an internal one is fine',
    async () => {
      const { elb, seed } = backend();
      const vpcId = await seed.vpc({ cidr: '10.1.0.0/16', internetGateway: false });
      const subnet = await seed.subnet({ vpcId, cidr: '10.1.1.0/24', zone: 'eu-west-1a' });
      const input: CreateClassicLoadBalancerInput = {
        name: 'web',
        scheme: 'internet-facing',
        subnets: [subnet],
        securityGroups: [],
        listeners: [TCP_80],
        tags: OWNED,
      };

      // A Service asking for a public load balancer in private-only subnets must fail, not get one nobody can reach.
      await expect(elb.createLoadBalancer(input)).rejects.toThrow(/InvalidSubnet/);
      expect(await elb.findLoadBalancer('web')).toBeUndefined();
      expect(await elb.createLoadBalancer({ ...input, scheme: 'internal' })).toEqual({ dnsName: expect.any(String) });
    },
  );

  test('finds no load balancer for an unknown name, without an error', async () => {
    expect(await backend().elb.findLoadBalancer('no-such-lb')).toBeUndefined();
  });

  test.differs(
    'elb.create-same-name',
    'answers the existing DNS name when a load balancer of that name has the same listeners',
    async () => {
      const { elb } = backend();
      const network = await classicNetwork(backend());
      const first = await createdLoadBalancer(backend(), lbInput(network));

      // A reconcile that crashed after its create sends the same create again: it must find its own load balancer.
      const again = await elb.createLoadBalancer(lbInput(network));

      expect(again).toEqual({ dnsName: first });
      expect((await elb.listLoadBalancers()).map((lb) => lb.name)).toEqual(['web']);
    },
  );

  test('answers name-taken when a load balancer of that name has other listeners', async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));

    const other = lbInput(network, { listeners: [{ ...TCP_80, instancePort: 31000 }] });

    expect(await elb.createLoadBalancer(other)).toBe('name-taken');
    expect((await elb.findLoadBalancer('web'))?.listeners).toEqual([{ ...TCP_80, policyNames: [] }]);
  });

  test('lists every load balancer of the region, beyond one page of 400', async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());
    const names = Array.from({ length: 401 }, (_, i) => `lb-${i}`);
    for (const name of names) await createdLoadBalancer(backend(), lbInput(network, { name, tags: {} }));

    const all = await elb.listLoadBalancers();

    // The garbage collector's inventory: a load balancer on the second page that went unseen would leak.
    expect(all.map((lb) => lb.name).sort()).toEqual([...names].sort());
  }, 60_000);

  test('deletes a load balancer; deleting it again succeeds', async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));

    await elb.deleteLoadBalancer('web');

    expect(await elb.findLoadBalancer('web')).toBeUndefined();
    expect(await elb.listLoadBalancers()).toEqual([]);
    await expect(elb.deleteLoadBalancer('web')).resolves.toBeUndefined();
  });

  test('attaches and detaches subnets', async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));

    await elb.attachSubnets('web', [network.subnets.c]);
    await elb.detachSubnets('web', [network.subnets.a]);

    expect((await elb.findLoadBalancer('web'))?.subnets.sort()).toEqual([network.subnets.b, network.subnets.c].sort());
  });

  test.differs(
    'elb.subnet-same-zone',
    'refuses a second subnet in a zone the load balancer has already (InvalidConfigurationRequest)',
    async () => {
      const { elb } = backend();
      const network = await classicNetwork(backend());
      await createdLoadBalancer(backend(), lbInput(network));

      // To move a zone to another subnet the caller detaches the old subnet first.
      await expect(elb.attachSubnets('web', [network.subnets.a2])).rejects.toThrow(/InvalidConfigurationRequest/);
      expect((await elb.findLoadBalancer('web'))?.subnets.sort()).toEqual(
        [network.subnets.a, network.subnets.b].sort(),
      );
    },
  );

  test('replaces the security groups of a load balancer', async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));

    await elb.applySecurityGroups('web', [network.securityGroups[1]]);

    expect((await elb.findLoadBalancer('web'))?.securityGroups).toEqual([network.securityGroups[1]]);
  });

  test("reads back a new load balancer's health check with the API's defaults, and a configured one", async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));
    expect((await elb.findLoadBalancer('web'))?.healthCheck).toEqual(CLASSIC_HEALTH_CHECK_DEFAULTS);

    const healthCheck = {
      target: 'HTTP:32000/healthz',
      intervalSeconds: 10,
      timeoutSeconds: 5,
      healthyThreshold: 2,
      unhealthyThreshold: 6,
    };
    await elb.configureHealthCheck('web', healthCheck);

    expect((await elb.findLoadBalancer('web'))?.healthCheck).toEqual(healthCheck);
  });

  test.differs(
    'elb.health-check-timeout',
    'refuses a health check whose timeout is not below its interval, keeping the one it has',
    async () => {
      const { elb } = backend();
      const network = await classicNetwork(backend());
      await createdLoadBalancer(backend(), lbInput(network));

      // Health check settings come from Service annotations: a bad pair must be refused, not stored.
      const bad = { ...CLASSIC_HEALTH_CHECK_DEFAULTS, intervalSeconds: 5, timeoutSeconds: 10 };
      await expect(elb.configureHealthCheck('web', bad)).rejects.toThrow();

      expect((await elb.findLoadBalancer('web'))?.healthCheck).toEqual(CLASSIC_HEALTH_CHECK_DEFAULTS);
    },
  );

  test("reads back a new load balancer's attributes with AWS's defaults", async () => {
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));

    // What "no annotation" puts back: the controller compares with these (elb-defaults.ts).
    expect(await backend().elb.describeAttributes('web')).toEqual(CLASSIC_ATTRIBUTE_DEFAULTS);
  });

  test('modifies cross-zone, idle timeout, connection draining and the access log, and reads them back', async () => {
    const { elb } = backend();
    const network = await classicNetwork(backend());
    await createdLoadBalancer(backend(), lbInput(network));
    const attributes: ClassicAttributes = {
      crossZone: true,
      idleTimeoutSeconds: 300,
      connectionDraining: { enabled: true, timeoutSeconds: 120 },
      accessLog: { enabled: true, s3BucketName: 'logs', s3BucketPrefix: 'web', emitIntervalMinutes: 5 },
    };

    await elb.modifyAttributes('web', attributes);
    expect(await elb.describeAttributes('web')).toEqual(attributes);

    // Turning the log off again: AWS keeps no bucket for a disabled log.
    await elb.modifyAttributes('web', { ...attributes, accessLog: { enabled: false } });
    expect((await elb.describeAttributes('web')).accessLog).toEqual({ enabled: false });
  });
});
