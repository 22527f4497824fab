import { beforeEach, describe, expect, it } from 'vitest';
import {
  ALB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS,
  ALB_TARGET_GROUP_ATTRIBUTE_DEFAULTS,
  albHealthCheckDefaults,
} from '../../elbv2-defaults.ts';
import type { ApplicationListenerSpec, RuleAction } from '../../elbv2-port.ts';
import { codeOf, elbv2World, failure, lbInput, SUBNET_A, SUBNET_A2, SUBNET_B, tgInput, VPC } from './testing.ts';

/** The fake's Application Load Balancers behind the real adapter: load balancers, HTTP/HTTPS listeners and groups. */
let w: ReturnType<typeof elbv2World>;
beforeEach(() => {
  w = elbv2World();
});

const CERT = 'arn:aws:acm:eu-west-1:111122223333:certificate/web';

async function alb(extra: Parameters<typeof lbInput>[0] = {}) {
  const created = await w.elb.createLoadBalancer(lbInput({ name: 'alb', type: 'application', ...extra }));
  if (created === 'name-taken') throw new Error('alb is taken');
  return created;
}

async function httpGroup(name = 'web-http', extra: Parameters<typeof tgInput>[0] = {}) {
  const created = await w.elb.createTargetGroup(
    tgInput({ name, protocol: 'HTTP', port: 8080, healthCheck: albHealthCheckDefaults(), ...extra }),
  );
  if (created === 'name-taken') throw new Error(`${name} is taken`);
  return created;
}

const forward = (...arns: string[]): RuleAction => ({
  type: 'forward',
  targetGroups: arns.map((arn) => ({ arn, weight: 1 })),
  stickiness: { enabled: false },
});

describe('FakeElbv2 Application Load Balancers', () => {
  it('creates one with an app/ ARN, its attributes and, without security groups, the VPC default group', async () => {
    w.ec2.putSecurityGroup({
      groupId: 'sg-default',
      groupName: 'default',
      vpcId: VPC,
      description: '',
      tags: {},
      ingress: [],
    });

    const created = await alb({ securityGroups: [] });

    expect(created).toMatchObject({ type: 'application', securityGroups: ['sg-default'] });
    expect(created.arn).toMatch(/:loadbalancer\/app\/alb\/[0-9a-f]{16}$/);
    expect(await w.elb.describeLoadBalancerAttributes(created.arn)).toEqual(ALB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS);
    await w.elb.modifyLoadBalancerAttributes(created.arn, { 'idle_timeout.timeout_seconds': '120' });
    expect(w.fake.attributesOf(created.arn)?.['idle_timeout.timeout_seconds']).toBe('120');
  });

  it.each([
    ['a single zone', { subnetMappings: [{ subnetId: SUBNET_A.subnetId }] }, 'ValidationError'],
    [
      'two subnets of one zone',
      { subnetMappings: [{ subnetId: SUBNET_A.subnetId }, { subnetId: SUBNET_A2.subnetId }] },
      'InvalidConfigurationRequest',
    ],
    [
      'an Elastic IP',
      {
        subnetMappings: [{ subnetId: SUBNET_A.subnetId, allocationId: 'eipalloc-1' }, { subnetId: SUBNET_B.subnetId }],
      },
      'InvalidConfigurationRequest',
    ],
  ])('refuses %s (%s)', async (_, extra, code) => {
    expect(codeOf(await failure(alb(extra)))).toBe(code);
    expect(w.fake.loadBalancers.size).toBe(0);
  });

  it('replaces its subnets at once, but keeps two zones at least', async () => {
    const created = await alb();
    await w.elb.setSubnets(created.arn, [{ subnetId: SUBNET_A2.subnetId }, { subnetId: SUBNET_B.subnetId }]);
    expect(w.fake.loadBalancerNamed('alb')?.subnets.map((s) => s.subnetId)).toEqual([
      SUBNET_A2.subnetId,
      SUBNET_B.subnetId,
    ]);
    expect(codeOf(await failure(w.elb.setSubnets(created.arn, [{ subnetId: SUBNET_B.subnetId }])))).toBe(
      'ValidationError',
    );
  });
});

describe('FakeElbv2 HTTP and HTTPS target groups', () => {
  it('default to HTTP1, an HTTP health check answering 200, and the Application Load Balancer attributes', async () => {
    const group = await httpGroup();
    expect(group).toMatchObject({ protocol: 'HTTP', protocolVersion: 'HTTP1', healthCheck: albHealthCheckDefaults() });
    expect(await w.elb.describeTargetGroupAttributes(group.arn)).toEqual(ALB_TARGET_GROUP_ATTRIBUTE_DEFAULTS);
  });

  it('a GRPC group checks the AWS health service for gRPC code 12 by default, and takes other codes', async () => {
    const created = await w.elb.createTargetGroup({
      ...tgInput({ name: 'grpc', protocol: 'HTTP', protocolVersion: 'GRPC', port: 50051 }),
      healthCheck: albHealthCheckDefaults('HTTP', 'GRPC'),
    });
    expect(created).toMatchObject({
      protocolVersion: 'GRPC',
      healthCheck: { path: '/AWS.ALB/healthcheck', matcher: { grpcCode: '12' } },
    });
    if (created === 'name-taken') throw new Error('taken');
    await w.elb.modifyTargetGroupHealthCheck(created.arn, {
      ...albHealthCheckDefaults('HTTP', 'GRPC'),
      matcher: { grpcCode: '0-5' },
    });
    expect((await w.elb.findTargetGroups(['grpc']))[0]?.healthCheck.matcher).toEqual({ grpcCode: '0-5' });
  });

  it.each([
    [
      'a TCP health check',
      { ...albHealthCheckDefaults(), protocol: 'TCP' as const, path: undefined, matcher: undefined },
    ],
    ['an HTTP code out of range', { ...albHealthCheckDefaults(), matcher: { httpCode: '600' } }],
    ['a gRPC code on an HTTP1 group', { ...albHealthCheckDefaults(), matcher: { grpcCode: '12' } }],
    ['a timeout not below the interval', { ...albHealthCheckDefaults(), timeoutSeconds: 30 }],
  ])('refuses %s (ValidationError)', async (_, healthCheck) => {
    expect(
      codeOf(await failure(w.elb.createTargetGroup(tgInput({ name: 'bad', protocol: 'HTTP', healthCheck })))),
    ).toBe('ValidationError');
  });

  it('refuses a protocol version on a TCP group', async () => {
    const err = await failure(w.elb.createTargetGroup(tgInput({ name: 'tcp', protocolVersion: 'HTTP2' })));
    expect(codeOf(err)).toBe('ValidationError');
  });
});

describe('FakeElbv2 HTTP and HTTPS listeners', () => {
  const http = (
    defaultActions: RuleAction[],
    extra: Partial<ApplicationListenerSpec> = {},
  ): ApplicationListenerSpec => ({
    port: 80,
    protocol: 'HTTP',
    defaultActions,
    ...extra,
  });

  it('an HTTPS listener needs a certificate, and gets ELBSecurityPolicy-2016-08 without a policy', async () => {
    const lb = await alb();
    const group = await httpGroup();
    const spec: ApplicationListenerSpec = { port: 443, protocol: 'HTTPS', defaultActions: [forward(group.arn)] };

    expect(codeOf(await failure(w.elb.createApplicationListener(lb.arn, spec, {})))).toBe('ValidationError');
    const listener = await w.elb.createApplicationListener(lb.arn, { ...spec, certificateArn: CERT }, {});

    expect(listener).toMatchObject({
      protocol: 'HTTPS',
      certificateArns: [CERT],
      sslPolicy: 'ELBSecurityPolicy-2016-08',
      targetGroupArn: group.arn,
      defaultActions: [forward(group.arn)],
    });
    expect((await w.elb.findTargetGroups([group.name]))[0]?.loadBalancerArns).toEqual([lb.arn]);
  });

  it('forwards to weighted groups with stickiness, answers fixed responses and redirects', async () => {
    const lb = await alb();
    const [a, b] = [await httpGroup('a'), await httpGroup('b')];
    const weighted: RuleAction = {
      type: 'forward',
      targetGroups: [
        { arn: a.arn, weight: 90 },
        { arn: b.arn, weight: 10 },
      ],
      stickiness: { enabled: true, durationSeconds: 3600 },
    };
    const redirect: RuleAction = {
      type: 'redirect',
      statusCode: 'HTTP_301',
      protocol: 'HTTPS',
      host: '#{host}',
      port: '443',
      path: '/#{path}',
      query: '#{query}',
    };

    const listener = await w.elb.createApplicationListener(lb.arn, http([weighted]), {});
    expect(listener.targetGroupArn).toBeUndefined();
    expect(listener.defaultActions).toEqual([weighted]);

    await w.elb.modifyApplicationListener(listener.arn, http([{ type: 'fixed-response', statusCode: '404' }]));
    expect((await w.elb.describeListeners(lb.arn))[0]?.defaultActions).toEqual([
      { type: 'fixed-response', statusCode: '404' },
    ]);
    // No listener forwards to the groups any more.
    expect((await w.elb.findTargetGroups(['a']))[0]?.loadBalancerArns).toEqual([]);

    await w.elb.modifyApplicationListener(listener.arn, http([redirect]));
    expect((await w.elb.describeListeners(lb.arn))[0]?.defaultActions).toEqual([redirect]);
  });

  it.each([
    [
      'a redirect that changes nothing',
      {
        type: 'redirect',
        statusCode: 'HTTP_302',
        protocol: '#{protocol}',
        host: '#{host}',
        port: '#{port}',
        path: '/#{path}',
        query: '#{query}',
      },
      'InvalidLoadBalancerAction',
    ],
    ['a fixed response with a 3XX code', { type: 'fixed-response', statusCode: '302' }, 'InvalidLoadBalancerAction'],
    [
      'a fixed response of an unknown content type',
      { type: 'fixed-response', statusCode: '200', contentType: 'image/png' },
      'InvalidLoadBalancerAction',
    ],
    [
      'a weight above 999',
      { type: 'forward', targetGroups: [{ arn: 'GROUP', weight: 1000 }], stickiness: { enabled: false } },
      'ValidationError',
    ],
    [
      'stickiness longer than 7 days',
      {
        type: 'forward',
        targetGroups: [{ arn: 'GROUP', weight: 1 }],
        stickiness: { enabled: true, durationSeconds: 604801 },
      },
      'ValidationError',
    ],
  ] as [string, RuleAction, string][])('refuses %s (%s)', async (_, action, code) => {
    const lb = await alb();
    const group = await httpGroup();
    const resolved = JSON.parse(JSON.stringify(action).replaceAll('GROUP', group.arn)) as RuleAction;
    expect(codeOf(await failure(w.elb.createApplicationListener(lb.arn, http([resolved]), {})))).toBe(code);
    expect(w.fake.listenersOf(lb.arn)).toEqual([]);
  });

  it('refuses a TCP group (IncompatibleProtocols), a TCP listener (UnsupportedProtocol), and a group another load balancer uses', async () => {
    const lb = await alb();
    const tcp = await w.group();
    expect(codeOf(await failure(w.elb.createApplicationListener(lb.arn, http([forward(tcp.arn)]), {})))).toBe(
      'IncompatibleProtocols',
    );
    const group = await httpGroup();
    expect(
      codeOf(await failure(w.elb.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {}))),
    ).toBe('UnsupportedProtocol');

    await w.elb.createApplicationListener(lb.arn, http([forward(group.arn)]), {});
    const other = await alb({ name: 'other' });
    expect(codeOf(await failure(w.elb.createApplicationListener(other.arn, http([forward(group.arn)]), {})))).toBe(
      'TargetGroupAssociationLimit',
    );
    // The same load balancer may forward to it from several listeners.
    await w.elb.createApplicationListener(lb.arn, http([forward(group.arn)], { port: 8080 }), {});
    expect(w.fake.listenersOf(lb.arn)).toHaveLength(2);
  });

  it('a target group an HTTP listener forwards to cannot be deleted (ResourceInUse)', async () => {
    const lb = await alb();
    const group = await httpGroup();
    const listener = await w.elb.createApplicationListener(lb.arn, http([forward(group.arn)]), {});
    expect(codeOf(await failure(w.elb.deleteTargetGroup(group.arn)))).toBe('ResourceInUse');
    await w.elb.deleteListener(listener.arn);
    expect(await w.elb.deleteTargetGroup(group.arn)).toBe('deleted');
  });
});
