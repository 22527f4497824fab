import { expect } from 'vitest';
import { nlbListenerAttributeDefaults } from '../../shared/aws/elbv2-defaults.ts';
import type { ListenerSpec } from '../../shared/aws/elbv2-port.ts';
import { TerminalError } from '../../shared/errors.ts';
import { elbv2Backends } from './backends.ts';
import { describeContract } from './contract.ts';
import { elbNetwork, loadBalancerWithListener, OWNED, targetGroupInput } from './elbv2-network.ts';

/** Elbv2Port listeners: TCP and TLS, certificates, attributes; and how they tie target groups to load balancers. */

describeContract('Elbv2Port: listeners', elbv2Backends(), (backend, test) => {
  async function setup() {
    const network = await elbNetwork(backend());
    return { network, ...(await loadBalancerWithListener(backend(), network)) };
  }

  async function secondGroup(network: Awaited<ReturnType<typeof setup>>['network'], name = 'web-8080') {
    const group = await backend().elbv2.createTargetGroup(targetGroupInput(network, name, { port: 30081 }));
    if (group === 'name-taken') throw new Error(`${name} is taken`);
    return group;
  }

  test('creates a TCP listener forwarding to a target group, listed with its tags', async () => {
    const { elbv2 } = backend();
    const { lb, group, listener } = await setup();

    expect(listener).toMatchObject({
      loadBalancerArn: lb.arn,
      port: 80,
      protocol: 'TCP',
      certificateArns: [],
      targetGroupArn: group.arn,
    });
    expect(await elbv2.describeListeners(lb.arn)).toEqual([listener]);
    expect((await elbv2.describeTags([listener.arn])).get(listener.arn)).toEqual(OWNED);
  });

  test('a listener ties its target group to the load balancer', async () => {
    const { elbv2 } = backend();
    const { lb, group } = await setup();

    expect((await elbv2.findTargetGroups([group.name]))[0]?.loadBalancerArns).toEqual([lb.arn]);
    expect((await elbv2.describeTargetGroupsOfLoadBalancer(lb.arn)).map((g) => g.arn)).toEqual([group.arn]);
  });

  test.differs(
    'elbv2.listener-create-same-port',
    'answers the existing listener when one on that port has the same settings',
    async () => {
      const { elbv2 } = backend();
      const { lb, listener, spec } = await setup();

      const again = await elbv2.createListener(lb.arn, spec, OWNED);

      expect(again.arn).toBe(listener.arn);
      expect(await elbv2.describeListeners(lb.arn)).toHaveLength(1);
    },
  );

  test.differs(
    'elbv2.listener-create-same-port',
    'refuses a second listener on a port in use with other settings (DuplicateListener)',
    async () => {
      const { elbv2 } = backend();
      const { lb, network } = await setup();
      const other = await secondGroup(network);

      await expect(
        elbv2.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: other.arn }, OWNED),
      ).rejects.toThrow(/DuplicateListener/);
      expect(await elbv2.describeListeners(lb.arn)).toHaveLength(1);
    },
  );

  test('changes the port and target group of a TCP listener', async () => {
    const { elbv2 } = backend();
    const { lb, listener, network } = await setup();
    const other = await secondGroup(network);

    await elbv2.modifyListener(listener.arn, { port: 8080, protocol: 'TCP', targetGroupArn: other.arn });

    expect(await elbv2.describeListeners(lb.arn)).toEqual([{ ...listener, port: 8080, targetGroupArn: other.arn }]);
  });

  test.differs(
    'elbv2.target-group-load-balancers',
    'a target group no listener forwards to any more is tied to no load balancer',
    async () => {
      const { elbv2 } = backend();
      const { lb, group, listener, network } = await setup();
      const other = await secondGroup(network);

      await elbv2.modifyListener(listener.arn, { port: 80, protocol: 'TCP', targetGroupArn: other.arn });

      const groups = await elbv2.findTargetGroups([group.name, other.name]);
      expect(groups.find((g) => g.arn === group.arn)?.loadBalancerArns).toEqual([]);
      expect(groups.find((g) => g.arn === other.arn)?.loadBalancerArns).toEqual([lb.arn]);
    },
  );

  test('deletes a listener; deleting it again is not-found', async () => {
    const { elbv2 } = backend();
    const { lb, listener } = await setup();

    expect(await elbv2.deleteListener(listener.arn)).toBe('deleted');
    expect(await elbv2.describeListeners(lb.arn)).toEqual([]);
    expect(await elbv2.deleteListener(listener.arn)).toBe('not-found');
  });

  test('creates a TLS listener with its default certificate, security policy and ALPN policy', async () => {
    const { elbv2, elbSeed } = backend();
    const { lb, network } = await setup();
    const group = await secondGroup(network, 'web-443');
    const certificate = await elbSeed.certificate('web.example.com');
    const spec: ListenerSpec = {
      port: 443,
      protocol: 'TLS',
      certificateArn: certificate,
      sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      alpnPolicy: 'HTTP2Preferred',
      targetGroupArn: group.arn,
    };

    const listener = await elbv2.createListener(lb.arn, spec, OWNED);

    expect(listener).toMatchObject({
      port: 443,
      protocol: 'TLS',
      certificateArns: [certificate],
      sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      alpnPolicy: 'HTTP2Preferred',
      targetGroupArn: group.arn,
    });
    expect(await elbv2.describeListenerCertificates(listener.arn)).toEqual([
      { certificateArn: certificate, isDefault: true },
    ]);
  });

  test('gives a TLS listener created without a security policy the API default, ELBSecurityPolicy-2016-08', async () => {
    const { elbv2, elbSeed } = backend();
    const { lb, network } = await setup();
    const group = await secondGroup(network, 'web-443');
    const certificate = await elbSeed.certificate('web.example.com');

    const listener = await elbv2.createListener(
      lb.arn,
      { port: 443, protocol: 'TLS', certificateArn: certificate, targetGroupArn: group.arn },
      OWNED,
    );

    expect(listener.sslPolicy).toBe('ELBSecurityPolicy-2016-08');
    expect((await elbv2.describeListeners(lb.arn)).find((l) => l.port === 443)?.sslPolicy).toBe(
      'ELBSecurityPolicy-2016-08',
    );
  });

  async function tlsListener() {
    const { elbv2, elbSeed } = backend();
    const { lb, network } = await setup();
    const group = await secondGroup(network, 'web-443');
    const certificate = await elbSeed.certificate('web.example.com');
    const spec: ListenerSpec = { port: 443, protocol: 'TLS', certificateArn: certificate, targetGroupArn: group.arn };
    const listener = await elbv2.createListener(lb.arn, spec, OWNED);
    return { lb, listener, certificate, spec };
  }

  test('adds and removes SNI certificates beside the default one', async () => {
    const { elbv2, elbSeed } = backend();
    const { listener, certificate } = await tlsListener();
    const api = await elbSeed.certificate('api.example.com');
    const admin = await elbSeed.certificate('admin.example.com');

    await elbv2.addListenerCertificates(listener.arn, [api, admin]);
    const listed = await elbv2.describeListenerCertificates(listener.arn);
    expect(listed).toHaveLength(3);
    expect(listed).toEqual(
      expect.arrayContaining([
        { certificateArn: certificate, isDefault: true },
        { certificateArn: api, isDefault: false },
        { certificateArn: admin, isDefault: false },
      ]),
    );

    await elbv2.removeListenerCertificates(listener.arn, [api]);
    expect((await elbv2.describeListenerCertificates(listener.arn)).map((c) => c.certificateArn).sort()).toEqual(
      [certificate, admin].sort(),
    );
  });

  test.differs(
    'elbv2.listener-sni-certificates',
    'DescribeListeners states only the default certificate, however many SNI certificates there are',
    async () => {
      const { elbv2, elbSeed } = backend();
      const { lb, listener, certificate } = await tlsListener();
      await elbv2.addListenerCertificates(listener.arn, [await elbSeed.certificate('api.example.com')]);

      expect((await elbv2.describeListeners(lb.arn)).find((l) => l.arn === listener.arn)?.certificateArns).toEqual([
        certificate,
      ]);
    },
  );

  test.differs(
    'elbv2.listener-sni-certificates',
    'adding a certificate the list has already changes nothing',
    async () => {
      const { elbv2, elbSeed } = backend();
      const { listener } = await tlsListener();
      const api = await elbSeed.certificate('api.example.com');

      await elbv2.addListenerCertificates(listener.arn, [api]);
      await elbv2.addListenerCertificates(listener.arn, [api]);

      expect((await elbv2.describeListenerCertificates(listener.arn)).filter((c) => !c.isDefault)).toEqual([
        { certificateArn: api, isDefault: false },
      ]);
    },
  );

  test.differs(
    'elbv2.listener-sni-certificates',
    'refuses to remove the default certificate (OperationNotPermitted)',
    async () => {
      const { elbv2 } = backend();
      const { listener, certificate } = await tlsListener();

      await expect(elbv2.removeListenerCertificates(listener.arn, [certificate])).rejects.toThrow(
        /OperationNotPermitted/,
      );
    },
  );

  test.differs('elbv2.modify-tls-listener', 'replaces the default certificate of a TLS listener', async () => {
    const { elbv2, elbSeed } = backend();
    const { lb, listener, spec } = await tlsListener();
    const renewed = await elbSeed.certificate('web2.example.com');

    await elbv2.modifyListener(listener.arn, { ...spec, certificateArn: renewed });

    expect((await elbv2.describeListeners(lb.arn)).find((l) => l.arn === listener.arn)?.certificateArns).toEqual([
      renewed,
    ]);
  });

  test('states the idle timeout of a TCP listener (350 s by default) and changes it', async () => {
    const { elbv2 } = backend();
    const { listener } = await setup();

    // AWS's default, from the fixture the controller's model and the fake read (shared/aws/elbv2-defaults.ts).
    expect(await elbv2.describeListenerAttributes(listener.arn)).toEqual(nlbListenerAttributeDefaults('TCP'));
    expect(nlbListenerAttributeDefaults('TCP')).toEqual({ 'tcp.idle_timeout.seconds': '350' });

    await elbv2.modifyListenerAttributes(listener.arn, { 'tcp.idle_timeout.seconds': '600' });
    expect(await elbv2.describeListenerAttributes(listener.arn)).toEqual({ 'tcp.idle_timeout.seconds': '600' });
  });

  test.differs('elbv2.listener-idle-timeout', 'refuses a TCP idle timeout outside 60-6000 seconds', async () => {
    const { elbv2 } = backend();
    const { listener } = await setup();

    await expect(elbv2.modifyListenerAttributes(listener.arn, { 'tcp.idle_timeout.seconds': '30' })).rejects.toThrow(
      TerminalError,
    );
    expect(await elbv2.describeListenerAttributes(listener.arn)).toEqual(nlbListenerAttributeDefaults('TCP'));
  });

  test.differs('elbv2.listener-idle-timeout', 'a TLS listener has no TCP idle timeout attribute', async () => {
    const { elbv2 } = backend();
    const { listener } = await tlsListener();

    expect(await elbv2.describeListenerAttributes(listener.arn)).toEqual(nlbListenerAttributeDefaults('TLS'));
  });
});
