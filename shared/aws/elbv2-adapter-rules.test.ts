import {
  CreateListenerCommand,
  CreateLoadBalancerCommand,
  CreateRuleCommand,
  CreateTargetGroupCommand,
  DeleteRuleCommand,
  DescribeListenersCommand,
  DescribeRulesCommand,
  DescribeTagsCommand,
  DescribeTargetGroupsCommand,
  ElasticLoadBalancingV2Client,
  ModifyListenerCommand,
  ModifyRuleCommand,
  SetRulePrioritiesCommand,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { TerminalError } from '../errors.ts';
import { Elbv2Adapter } from './elbv2-adapter.ts';
import type { RuleAction, RuleCondition } from './elbv2-port.ts';
import { AwsServiceError } from './errors.ts';

/** The requests Elbv2Adapter makes for Application Load Balancers and listener rules, and how it reads the answers. */

const client = new ElasticLoadBalancingV2Client({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
});
const elb = mockClient(client);
const adapter = new Elbv2Adapter(client);

function sdkError(code: string, message = code, status = 400): Error {
  return Object.assign(new AwsServiceError(`${code}Exception`, message, status), { Code: code });
}

const BASE = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333';
const LB_ARN = `${BASE}:loadbalancer/app/web/0123456789abcdef`;
const LISTENER_ARN = `${BASE}:listener/app/web/0123456789abcdef/fedcba9876543210`;
const RULE_ARN = `${BASE}:listener-rule/app/web/0123456789abcdef/fedcba9876543210/1111111111111111`;
const DEFAULT_RULE_ARN = `${BASE}:listener-rule/app/web/0123456789abcdef/fedcba9876543210/2222222222222222`;
const TG_A = `${BASE}:targetgroup/a/0000000000000001`;
const TG_B = `${BASE}:targetgroup/b/0000000000000002`;

const FORWARD: RuleAction = {
  type: 'forward',
  targetGroups: [
    { arn: TG_A, weight: 80 },
    { arn: TG_B, weight: 20 },
  ],
  stickiness: { enabled: true, durationSeconds: 300 },
};
const NOT_FOUND: RuleAction = { type: 'fixed-response', statusCode: '404', contentType: 'text/plain' };
const CONDITIONS: RuleCondition[] = [
  { field: 'host-header', values: ['*.example.com'] },
  { field: 'path-pattern', values: ['/api/*'] },
  { field: 'http-header', headerName: 'X-Canary', values: ['on'] },
  { field: 'query-string', values: [{ key: 'v', value: '2' }, { value: 'beta' }] },
  { field: 'http-request-method', values: ['GET'] },
];

const SDK_FORWARD = {
  Type: 'forward' as const,
  Order: 1,
  ForwardConfig: {
    TargetGroups: [
      { TargetGroupArn: TG_A, Weight: 80 },
      { TargetGroupArn: TG_B, Weight: 20 },
    ],
    TargetGroupStickinessConfig: { Enabled: true, DurationSeconds: 300 },
  },
};
const SDK_CONDITIONS = [
  { Field: 'host-header', HostHeaderConfig: { Values: ['*.example.com'] } },
  { Field: 'path-pattern', PathPatternConfig: { Values: ['/api/*'] } },
  { Field: 'http-header', HttpHeaderConfig: { HttpHeaderName: 'X-Canary', Values: ['on'] } },
  { Field: 'query-string', QueryStringConfig: { Values: [{ Key: 'v', Value: '2' }, { Value: 'beta' }] } },
  { Field: 'http-request-method', HttpRequestMethodConfig: { Values: ['GET'] } },
];

beforeEach(() => {
  elb.reset();
});

describe('Elbv2Adapter: Application Load Balancers', () => {
  it('creates an application load balancer; without security groups it sends none (the VPC default applies)', async () => {
    elb.on(CreateLoadBalancerCommand).resolves({
      LoadBalancers: [
        { LoadBalancerArn: LB_ARN, LoadBalancerName: 'web', Type: 'application', State: { Code: 'provisioning' } },
      ],
    });

    const created = await adapter.createLoadBalancer({
      name: 'web',
      type: 'application',
      scheme: 'internal',
      subnetMappings: [{ subnetId: 'subnet-a' }, { subnetId: 'subnet-b' }],
      securityGroups: [],
      ipAddressType: 'dualstack',
      tags: { team: 'web' },
    });

    expect(created).toMatchObject({ arn: LB_ARN, type: 'application' });
    expect(elb.commandCalls(CreateLoadBalancerCommand)[0]!.args[0].input).toEqual({
      Name: 'web',
      Type: 'application',
      Scheme: 'internal',
      IpAddressType: 'dualstack',
      SubnetMappings: [{ SubnetId: 'subnet-a' }, { SubnetId: 'subnet-b' }],
      Tags: [{ Key: 'team', Value: 'web' }],
    });
  });

  it('creates an HTTPS listener with its certificate, policy and default actions, tagged', async () => {
    elb.on(CreateListenerCommand).resolves({
      Listeners: [
        {
          ListenerArn: LISTENER_ARN,
          LoadBalancerArn: LB_ARN,
          Port: 443,
          Protocol: 'HTTPS',
          Certificates: [{ CertificateArn: 'cert' }],
          SslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
          DefaultActions: [{ ...SDK_FORWARD, TargetGroupArn: undefined }],
        },
      ],
    });

    const listener = await adapter.createApplicationListener(
      LB_ARN,
      {
        port: 443,
        protocol: 'HTTPS',
        certificateArn: 'cert',
        sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
        defaultActions: [FORWARD],
      },
      { owner: 'us' },
    );

    expect(elb.commandCalls(CreateListenerCommand)[0]!.args[0].input).toEqual({
      LoadBalancerArn: LB_ARN,
      Port: 443,
      Protocol: 'HTTPS',
      Certificates: [{ CertificateArn: 'cert' }],
      SslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      DefaultActions: [SDK_FORWARD],
      Tags: [{ Key: 'owner', Value: 'us' }],
    });
    expect(listener).toEqual({
      arn: LISTENER_ARN,
      loadBalancerArn: LB_ARN,
      port: 443,
      protocol: 'HTTPS',
      certificateArns: ['cert'],
      sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      defaultActions: [FORWARD],
    });
  });

  it('modifies an HTTP listener: no certificate or policy is sent, a fixed response as the default action', async () => {
    elb.on(ModifyListenerCommand).resolves({});

    await adapter.modifyApplicationListener(LISTENER_ARN, {
      port: 80,
      protocol: 'HTTP',
      certificateArn: 'ignored',
      defaultActions: [NOT_FOUND],
    });

    expect(elb.commandCalls(ModifyListenerCommand)[0]!.args[0].input).toEqual({
      ListenerArn: LISTENER_ARN,
      Port: 80,
      Protocol: 'HTTP',
      DefaultActions: [
        { Type: 'fixed-response', Order: 1, FixedResponseConfig: { StatusCode: '404', ContentType: 'text/plain' } },
      ],
    });
  });

  it('reads an HTTP listener with a single forward as its target group too, and its redirect defaults', async () => {
    elb.on(DescribeListenersCommand).resolves({
      Listeners: [
        {
          ListenerArn: LISTENER_ARN,
          LoadBalancerArn: LB_ARN,
          Port: 80,
          Protocol: 'HTTP',
          DefaultActions: [
            {
              Type: 'forward',
              TargetGroupArn: TG_A,
              ForwardConfig: {
                TargetGroups: [{ TargetGroupArn: TG_A, Weight: 1 }],
                TargetGroupStickinessConfig: { Enabled: false },
              },
            },
          ],
        },
        {
          ListenerArn: `${LISTENER_ARN}x`,
          LoadBalancerArn: LB_ARN,
          Port: 8080,
          Protocol: 'HTTP',
          DefaultActions: [
            { Type: 'redirect', RedirectConfig: { Protocol: 'HTTPS', Port: '443', StatusCode: 'HTTP_301' } },
          ],
        },
      ],
    });

    const [forward, redirect] = await adapter.describeListeners(LB_ARN);

    expect(forward).toMatchObject({
      targetGroupArn: TG_A,
      defaultActions: [{ type: 'forward', targetGroups: [{ arn: TG_A, weight: 1 }], stickiness: { enabled: false } }],
    });
    expect(redirect?.targetGroupArn).toBeUndefined();
    expect(redirect?.defaultActions).toEqual([
      {
        type: 'redirect',
        statusCode: 'HTTP_301',
        protocol: 'HTTPS',
        host: '#{host}',
        port: '443',
        path: '/#{path}',
        query: '#{query}',
      },
    ]);
  });

  it('creates an HTTP target group with its protocol version and matcher, and reads them back', async () => {
    elb.on(CreateTargetGroupCommand).resolves({
      TargetGroups: [
        {
          TargetGroupArn: TG_A,
          TargetGroupName: 'a',
          Protocol: 'HTTP',
          ProtocolVersion: 'GRPC',
          Port: 8080,
          TargetType: 'ip',
          HealthCheckProtocol: 'HTTP',
          HealthCheckPath: '/AWS.ALB/healthcheck',
          Matcher: { GrpcCode: '0-12' },
        },
      ],
    });

    const created = await adapter.createTargetGroup({
      name: 'a',
      protocol: 'HTTP',
      protocolVersion: 'GRPC',
      port: 8080,
      targetType: 'ip',
      vpcId: 'vpc-1',
      healthCheck: {
        protocol: 'HTTP',
        port: 'traffic-port',
        path: '/AWS.ALB/healthcheck',
        intervalSeconds: 30,
        timeoutSeconds: 5,
        healthyThreshold: 5,
        unhealthyThreshold: 2,
        matcher: { grpcCode: '0-12' },
      },
      tags: {},
    });

    expect(elb.commandCalls(CreateTargetGroupCommand)[0]!.args[0].input).toMatchObject({
      Protocol: 'HTTP',
      ProtocolVersion: 'GRPC',
      HealthCheckPath: '/AWS.ALB/healthcheck',
      Matcher: { GrpcCode: '0-12' },
    });
    expect(created).toMatchObject({ protocolVersion: 'GRPC', healthCheck: { matcher: { grpcCode: '0-12' } } });
  });

  it('states no matcher or protocol version for a Network Load Balancer group, whatever the answer holds', async () => {
    elb.on(DescribeTargetGroupsCommand).resolves({
      TargetGroups: [
        {
          TargetGroupArn: TG_A,
          TargetGroupName: 'a',
          Protocol: 'TCP',
          HealthCheckProtocol: 'HTTP',
          HealthCheckPath: '/healthz',
          Matcher: { HttpCode: '200-399' },
        },
      ],
    });

    const [group] = await adapter.findTargetGroups(['a']);

    expect(group?.protocolVersion).toBeUndefined();
    expect(group?.healthCheck).not.toHaveProperty('matcher');
  });
});

describe('Elbv2Adapter: listener rules', () => {
  it('describes every page of a listener’s rules, in priority order with the default rule last', async () => {
    elb
      .on(DescribeRulesCommand, { ListenerArn: LISTENER_ARN, PageSize: 400, Marker: undefined })
      .resolves({
        Rules: [
          {
            RuleArn: DEFAULT_RULE_ARN,
            Priority: 'default',
            IsDefault: true,
            Conditions: [],
            Actions: [{ Type: 'fixed-response', FixedResponseConfig: { StatusCode: '404' } }],
          },
          {
            RuleArn: `${RULE_ARN}-20`,
            Priority: '20',
            Conditions: [{ Field: 'path-pattern', Values: ['/b'] }],
            Actions: [SDK_FORWARD],
          },
        ],
        NextMarker: 'm1',
      })
      .on(DescribeRulesCommand, { ListenerArn: LISTENER_ARN, PageSize: 400, Marker: 'm1' })
      .resolves({
        Rules: [
          { RuleArn: RULE_ARN, Priority: '5', IsDefault: false, Conditions: SDK_CONDITIONS, Actions: [SDK_FORWARD] },
        ],
      });

    const rules = await adapter.describeRules(LISTENER_ARN);

    expect(rules.map((r) => r.priority)).toEqual([5, 20, 'default']);
    expect(rules[0]).toEqual({
      arn: RULE_ARN,
      priority: 5,
      isDefault: false,
      conditions: CONDITIONS,
      actions: [FORWARD],
    });
    // A rule stated in the legacy form (Values) reads as the config form.
    expect(rules[1]?.conditions).toEqual([{ field: 'path-pattern', values: ['/b'] }]);
    expect(rules[2]).toEqual({
      arn: DEFAULT_RULE_ARN,
      priority: 'default',
      isDefault: true,
      conditions: [],
      actions: [{ type: 'fixed-response', statusCode: '404' }],
    });
    expect(elb.commandCalls(DescribeRulesCommand)).toHaveLength(2);
  });

  it('creates a rule with its conditions and actions in the config form, tagged; untagged sends no Tags', async () => {
    elb.on(CreateRuleCommand).resolves({
      Rules: [{ RuleArn: RULE_ARN, Priority: '5', Conditions: SDK_CONDITIONS, Actions: [SDK_FORWARD] }],
    });

    const rule = await adapter.createRule(
      LISTENER_ARN,
      { priority: 5, conditions: CONDITIONS, actions: [FORWARD] },
      { owner: 'us' },
    );
    await adapter.createRule(LISTENER_ARN, { priority: 6, conditions: CONDITIONS, actions: [FORWARD] }, {});

    const [tagged, untagged] = elb.commandCalls(CreateRuleCommand).map((c) => c.args[0].input);
    expect(tagged).toEqual({
      ListenerArn: LISTENER_ARN,
      Priority: 5,
      Conditions: SDK_CONDITIONS,
      Actions: [SDK_FORWARD],
      Tags: [{ Key: 'owner', Value: 'us' }],
    });
    expect(untagged).not.toHaveProperty('Tags');
    expect(rule).toEqual({ arn: RULE_ARN, priority: 5, isDefault: false, conditions: CONDITIONS, actions: [FORWARD] });
  });

  it('a priority in use is a terminal error naming the rule', async () => {
    elb.on(CreateRuleCommand).rejects(sdkError('PriorityInUse', "Priority '5' is currently in use"));

    const err = await adapter
      .createRule(LISTENER_ARN, { priority: 5, conditions: CONDITIONS, actions: [FORWARD] }, {})
      .catch((e: unknown) => e);

    expect(err).toBeInstanceOf(TerminalError);
    expect((err as Error).message).toMatch(/creating rule 5/);
  });

  it('modifies a rule’s conditions and actions with one ModifyRule; the default rule’s actions only', async () => {
    elb.on(ModifyRuleCommand).resolves({
      Rules: [{ RuleArn: RULE_ARN, Priority: '5', Conditions: SDK_CONDITIONS, Actions: [SDK_FORWARD] }],
    });

    await adapter.modifyRule(RULE_ARN, { conditions: CONDITIONS, actions: [FORWARD] });
    await adapter.modifyRule(DEFAULT_RULE_ARN, { conditions: [], actions: [FORWARD] });

    expect(elb.commandCalls(ModifyRuleCommand).map((c) => c.args[0].input)).toEqual([
      { RuleArn: RULE_ARN, Conditions: SDK_CONDITIONS, Actions: [SDK_FORWARD] },
      { RuleArn: DEFAULT_RULE_ARN, Actions: [SDK_FORWARD] },
    ]);
  });

  it('deletes a rule; one already gone is not-found', async () => {
    elb.on(DeleteRuleCommand).resolvesOnce({}).rejectsOnce(sdkError('RuleNotFound'));

    expect(await adapter.deleteRule(RULE_ARN)).toBe('deleted');
    expect(await adapter.deleteRule(RULE_ARN)).toBe('not-found');
    expect(elb.commandCalls(DeleteRuleCommand).map((c) => c.args[0].input)).toEqual([
      { RuleArn: RULE_ARN },
      { RuleArn: RULE_ARN },
    ]);
  });

  it('sets priorities in one call, and sends nothing when there is nothing to move', async () => {
    elb.on(SetRulePrioritiesCommand).resolves({});

    await adapter.setRulePriorities([]);
    await adapter.setRulePriorities([
      { ruleArn: RULE_ARN, priority: 2 },
      { ruleArn: `${RULE_ARN}-20`, priority: 1 },
    ]);

    expect(elb.commandCalls(SetRulePrioritiesCommand).map((c) => c.args[0].input)).toEqual([
      {
        RulePriorities: [
          { RuleArn: RULE_ARN, Priority: 2 },
          { RuleArn: `${RULE_ARN}-20`, Priority: 1 },
        ],
      },
    ]);
  });

  it('describes the tags of rules, leaving out a rule deleted since it was listed (RuleNotFound)', async () => {
    elb
      .on(DescribeTagsCommand, { ResourceArns: [RULE_ARN, DEFAULT_RULE_ARN] })
      .rejects(sdkError('RuleNotFound'))
      .on(DescribeTagsCommand, { ResourceArns: [RULE_ARN] })
      .rejects(sdkError('RuleNotFound'))
      .on(DescribeTagsCommand, { ResourceArns: [DEFAULT_RULE_ARN] })
      .resolves({ TagDescriptions: [{ ResourceArn: DEFAULT_RULE_ARN, Tags: [{ Key: 'a', Value: 'b' }] }] });

    const tags = await adapter.describeTags([RULE_ARN, DEFAULT_RULE_ARN]);

    expect(tags).toEqual(new Map([[DEFAULT_RULE_ARN, { a: 'b' }]]));
  });
});
