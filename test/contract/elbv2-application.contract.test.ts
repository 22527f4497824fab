import { expect } from 'vitest';
import {
  ALB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS,
  ALB_TARGET_GROUP_ATTRIBUTE_DEFAULTS,
  albHealthCheckDefaults,
} from '../../shared/aws/elbv2-defaults.ts';
import type { ApplicationListenerSpec, RuleAction, RuleCondition, RuleSpec } from '../../shared/aws/elbv2-port.ts';
import { TerminalError } from '../../shared/errors.ts';
import { elbv2Backends } from './backends.ts';
import { describeContract } from './contract.ts';
import { type ElbNetwork, elbNetwork, OWNED, targetGroupInput } from './elbv2-network.ts';

/**
 * Elbv2Port for Application Load Balancers: the load balancer, HTTP/HTTPS target groups and listeners with their
 * default actions, and listener rules (create, describe, modify, delete, reprioritise, tags).
 */

const NOT_FOUND: RuleAction = { type: 'fixed-response', statusCode: '404', contentType: 'text/plain' };
const forward = (arn: string): RuleAction => ({
  type: 'forward',
  targetGroups: [{ arn, weight: 1 }],
  stickiness: { enabled: false },
});
const path = (...values: string[]): RuleCondition => ({ field: 'path-pattern', values });
const rule = (priority: number, conditions: RuleCondition[], actions: RuleAction[]): RuleSpec => ({
  priority,
  conditions,
  actions,
});

describeContract('Elbv2Port: Application Load Balancers and listener rules', elbv2Backends(), (backend, test) => {
  async function alb(network: ElbNetwork, securityGroups = [network.securityGroups[0]], name = 'alb') {
    const created = await backend().elbv2.createLoadBalancer({
      name,
      type: 'application',
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: network.subnets.a }, { subnetId: network.subnets.b }],
      securityGroups,
      tags: OWNED,
    });
    if (created === 'name-taken') throw new Error(`${name} is taken`);
    return created;
  }

  async function httpGroup(network: ElbNetwork, name: string, extra: Parameters<typeof targetGroupInput>[2] = {}) {
    const created = await backend().elbv2.createTargetGroup(
      targetGroupInput(network, name, {
        protocol: 'HTTP',
        port: 8080,
        healthCheck: albHealthCheckDefaults(),
        ...extra,
      }),
    );
    if (created === 'name-taken') throw new Error(`${name} is taken`);
    return created;
  }

  /** An ALB with groups `api` and `web` and an HTTP listener on port 80 answering 404 by default. */
  async function setup() {
    const network = await elbNetwork(backend());
    const lb = await alb(network);
    const api = await httpGroup(network, 'api');
    const web = await httpGroup(network, 'web');
    const spec: ApplicationListenerSpec = { port: 80, protocol: 'HTTP', defaultActions: [NOT_FOUND] };
    const listener = await backend().elbv2.createApplicationListener(lb.arn, spec, OWNED);
    return { network, lb, api, web, listener, spec };
  }

  test('creates an application load balancer, found again by name as such', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());

    const created = await alb(network);

    expect(created).toMatchObject({ name: 'alb', type: 'application', securityGroups: [network.securityGroups[0]] });
    expect(created.arn).toMatch(/:loadbalancer\/app\/alb\//);
    expect((await elbv2.findLoadBalancer('alb'))?.arn).toBe(created.arn);
  });

  test.differs(
    'elbv2.alb-default-security-group',
    'gives an application load balancer created without security groups the VPC default group',
    async () => {
      const { elbv2, ec2 } = backend();
      const network = await elbNetwork(backend());
      const [defaultGroup] = await ec2.findSecurityGroups({ vpcId: network.vpcId, groupNames: ['default'] });

      const created = await alb(network, []);

      expect(defaultGroup).toBeDefined();
      expect((await elbv2.findLoadBalancer(created.name))?.securityGroups).toEqual([defaultGroup!.groupId]);
    },
  );

  test.differs('elbv2.alb-single-zone', 'refuses an application load balancer in a single zone', async () => {
    const { elbv2 } = backend();
    const network = await elbNetwork(backend());

    await expect(
      elbv2.createLoadBalancer({
        name: 'alb',
        type: 'application',
        scheme: 'internet-facing',
        subnetMappings: [{ subnetId: network.subnets.a }],
        securityGroups: [network.securityGroups[0]],
        tags: OWNED,
      }),
    ).rejects.toThrow(TerminalError);
    expect(await elbv2.findLoadBalancer('alb')).toBeUndefined();
  });

  test.differs(
    'elbv2.alb-attribute-defaults',
    "reads back a new application load balancer's attributes with AWS's defaults",
    async () => {
      const { elbv2 } = backend();
      const created = await alb(await elbNetwork(backend()));

      expect(await elbv2.describeLoadBalancerAttributes(created.arn)).toEqual(ALB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS);
    },
  );

  test('creates an HTTP target group with its protocol version and health check, HTTP1 by default', async () => {
    const network = await elbNetwork(backend());

    const group = await httpGroup(network, 'api');
    const grpc = await httpGroup(network, 'grpc', {
      protocolVersion: 'GRPC',
      healthCheck: albHealthCheckDefaults('HTTP', 'GRPC'),
    });

    expect(group).toMatchObject({
      protocol: 'HTTP',
      port: 8080,
      protocolVersion: 'HTTP1',
      healthCheck: albHealthCheckDefaults(),
    });
    expect(grpc).toMatchObject({ protocolVersion: 'GRPC', healthCheck: albHealthCheckDefaults('HTTP', 'GRPC') });
    expect((await backend().elbv2.findTargetGroups(['grpc']))[0]).toEqual(grpc);
  });

  test.differs(
    'elbv2.alb-tg-attribute-defaults',
    "reads back a new HTTP target group's attributes with AWS's defaults",
    async () => {
      const group = await httpGroup(await elbNetwork(backend()), 'api');

      expect(await backend().elbv2.describeTargetGroupAttributes(group.arn)).toEqual(
        ALB_TARGET_GROUP_ATTRIBUTE_DEFAULTS,
      );
    },
  );

  test('creates an HTTP listener answering 404 by default, described with its default actions and tags', async () => {
    const { elbv2 } = backend();
    const { lb, listener } = await setup();

    expect(listener).toMatchObject({
      loadBalancerArn: lb.arn,
      port: 80,
      protocol: 'HTTP',
      defaultActions: [NOT_FOUND],
    });
    expect(await elbv2.describeListeners(lb.arn)).toEqual([listener]);
    expect((await elbv2.describeTags([listener.arn])).get(listener.arn)).toEqual(OWNED);
  });

  const weighted = (a: string, b: string): RuleAction => ({
    type: 'forward',
    targetGroups: [
      { arn: a, weight: 90 },
      { arn: b, weight: 10 },
    ],
    stickiness: { enabled: true, durationSeconds: 3600 },
  });

  test('forwards by default to weighted groups with stickiness', async () => {
    const { elbv2 } = backend();
    const { lb, api, web, listener, spec } = await setup();

    await elbv2.modifyApplicationListener(listener.arn, { ...spec, defaultActions: [weighted(api.arn, web.arn)] });

    expect((await elbv2.describeListeners(lb.arn))[0]?.defaultActions).toEqual([weighted(api.arn, web.arn)]);
  });

  // Created with the listener: moto ties a listener's groups only on CreateListener (`elbv2.target-group-load-balancers`).
  test('ties every group of a weighted forward to the load balancer', async () => {
    const { elbv2 } = backend();
    const { lb, api, web } = await setup();

    await elbv2.createApplicationListener(
      lb.arn,
      { port: 8080, protocol: 'HTTP', defaultActions: [weighted(api.arn, web.arn)] },
      OWNED,
    );

    const groups = await elbv2.findTargetGroups(['api', 'web']);
    expect(groups.map((g) => g.loadBalancerArns)).toEqual([[lb.arn], [lb.arn]]);
  });

  test('redirects HTTP to HTTPS by default, every component stated', async () => {
    const { elbv2 } = backend();
    const { lb, listener, spec } = await setup();
    const redirect: RuleAction = {
      type: 'redirect',
      statusCode: 'HTTP_301',
      protocol: 'HTTPS',
      host: '#{host}',
      port: '443',
      path: '/#{path}',
      query: '#{query}',
    };

    await elbv2.modifyApplicationListener(listener.arn, { ...spec, defaultActions: [redirect] });

    expect((await elbv2.describeListeners(lb.arn))[0]?.defaultActions).toEqual([redirect]);
  });

  test('creates an HTTPS listener with its certificate and the API default security policy', async () => {
    const { elbv2, elbSeed } = backend();
    const { lb, api } = await setup();
    const certificate = await elbSeed.certificate('web.example.com');

    const listener = await elbv2.createApplicationListener(
      lb.arn,
      { port: 443, protocol: 'HTTPS', certificateArn: certificate, defaultActions: [forward(api.arn)] },
      OWNED,
    );

    expect(listener).toMatchObject({
      protocol: 'HTTPS',
      certificateArns: [certificate],
      sslPolicy: 'ELBSecurityPolicy-2016-08',
      targetGroupArn: api.arn,
    });
  });

  test.differs('elbv2.https-listener-certificate', 'refuses an HTTPS listener without a certificate', async () => {
    const { elbv2 } = backend();
    const { lb, api } = await setup();

    await expect(
      elbv2.createApplicationListener(
        lb.arn,
        { port: 443, protocol: 'HTTPS', defaultActions: [forward(api.arn)] },
        OWNED,
      ),
    ).rejects.toThrow(TerminalError);
    expect(await elbv2.describeListeners(lb.arn)).toHaveLength(1);
  });

  async function httpsListener() {
    const { elbv2, elbSeed } = backend();
    const { lb, api } = await setup();
    const certificate = await elbSeed.certificate('web.example.com');
    const spec: ApplicationListenerSpec = {
      port: 443,
      protocol: 'HTTPS',
      certificateArn: certificate,
      defaultActions: [forward(api.arn)],
    };
    const listener = await elbv2.createApplicationListener(lb.arn, spec, OWNED);
    const sni = await elbSeed.certificate('api.example.com');
    await elbv2.addListenerCertificates(listener.arn, [sni]);
    return { lb, listener, spec, certificate, sni };
  }

  test('adds SNI certificates to an HTTPS listener beside its default one', async () => {
    const { elbv2 } = backend();
    const { listener, certificate, sni } = await httpsListener();

    const listed = await elbv2.describeListenerCertificates(listener.arn);

    expect(listed).toHaveLength(2);
    expect(listed).toEqual(
      expect.arrayContaining([
        { certificateArn: certificate, isDefault: true },
        { certificateArn: sni, isDefault: false },
      ]),
    );
  });

  test.differs(
    'elbv2.modify-listener-keeps-sni',
    'replacing the default certificate of an HTTPS listener keeps its SNI certificates',
    async () => {
      const { elbv2, elbSeed } = backend();
      const { lb, listener, spec, sni } = await httpsListener();
      const renewed = await elbSeed.certificate('web2.example.com');

      await elbv2.modifyApplicationListener(listener.arn, { ...spec, certificateArn: renewed });

      expect((await elbv2.describeListeners(lb.arn)).find((l) => l.port === 443)?.certificateArns).toEqual([renewed]);
      expect(await elbv2.describeListenerCertificates(listener.arn)).toEqual(
        expect.arrayContaining([
          { certificateArn: renewed, isDefault: true },
          { certificateArn: sni, isDefault: false },
        ]),
      );
    },
  );

  test("changes an HTTP target group's health check codes", async () => {
    const { elbv2 } = backend();
    const group = await httpGroup(await elbNetwork(backend()), 'api');
    const healthCheck = { ...albHealthCheckDefaults(), path: '/healthz', matcher: { httpCode: '200-299' } };

    await elbv2.modifyTargetGroupHealthCheck(group.arn, healthCheck);

    expect((await elbv2.findTargetGroups(['api']))[0]?.healthCheck).toEqual(healthCheck);
  });

  test('rules answer fixed responses, redirect, and forward to weighted groups', async () => {
    const { elbv2 } = backend();
    const { api, web, listener } = await setup();
    const actions: RuleAction[][] = [
      [{ type: 'fixed-response', statusCode: '503', contentType: 'application/json', messageBody: '{"down":true}' }],
      [
        {
          type: 'redirect',
          statusCode: 'HTTP_302',
          protocol: '#{protocol}',
          host: 'new.example.com',
          port: '#{port}',
          path: '/#{path}',
          query: '#{query}',
        },
      ],
      [weighted(api.arn, web.arn)],
    ];

    for (const [n, list] of actions.entries()) {
      await elbv2.createRule(listener.arn, rule(n + 1, [path(`/${n}`)], list), {});
    }

    expect((await elbv2.describeRules(listener.arn)).slice(0, 3).map((r) => r.actions)).toEqual(actions);
  });

  test('creates rules and describes them in priority order, the default rule last', async () => {
    const { elbv2 } = backend();
    const { api, web, listener } = await setup();
    const conditions: RuleCondition[] = [
      { field: 'host-header', values: ['*.example.com'] },
      path('/api/*'),
      { field: 'http-header', headerName: 'X-Canary', values: ['on'] },
    ];

    const second = await elbv2.createRule(listener.arn, rule(20, [path('/web')], [forward(web.arn)]), OWNED);
    const first = await elbv2.createRule(listener.arn, rule(10, conditions, [forward(api.arn)]), OWNED);

    expect(first).toEqual({ arn: first.arn, priority: 10, isDefault: false, conditions, actions: [forward(api.arn)] });
    const rules = await elbv2.describeRules(listener.arn);
    expect(rules.map((r) => r.arn)).toEqual([first.arn, second.arn, expect.any(String)]);
    expect(rules[0]).toEqual(first);
    expect(rules[2]).toMatchObject({ priority: 'default', isDefault: true, conditions: [], actions: [NOT_FOUND] });
  });

  test('states query-string, method and source-ip conditions as created', async () => {
    const { elbv2 } = backend();
    const { api, listener } = await setup();
    const conditions: RuleCondition[] = [
      { field: 'query-string', values: [{ key: 'v', value: '2' }, { value: 'beta' }] },
      { field: 'http-request-method', values: ['GET', 'HEAD'] },
      { field: 'source-ip', values: ['10.0.0.0/8'] },
    ];

    const created = await elbv2.createRule(listener.arn, rule(1, conditions, [forward(api.arn)]), {});

    expect((await elbv2.describeRules(listener.arn))[0]?.conditions).toEqual(conditions);
    expect(created.conditions).toEqual(conditions);
  });

  test('refuses a priority another rule of the listener holds (PriorityInUse)', async () => {
    const { elbv2 } = backend();
    const { api, web, listener } = await setup();
    await elbv2.createRule(listener.arn, rule(10, [path('/a')], [forward(api.arn)]), {});

    await expect(elbv2.createRule(listener.arn, rule(10, [path('/b')], [forward(web.arn)]), {})).rejects.toThrow(
      /PriorityInUse/,
    );
    expect(await elbv2.describeRules(listener.arn)).toHaveLength(2);
  });

  test.differs('elbv2.rule-condition-values', 'refuses more than three values in one condition', async () => {
    const { elbv2 } = backend();
    const { api, listener } = await setup();

    await expect(
      elbv2.createRule(listener.arn, rule(1, [path('/a', '/b', '/c', '/d')], [forward(api.arn)]), {}),
    ).rejects.toThrow(TerminalError);
    expect(await elbv2.describeRules(listener.arn)).toHaveLength(1);
  });

  test('modifies the conditions and actions of a rule, keeping its priority', async () => {
    const { elbv2 } = backend();
    const { api, web, listener } = await setup();
    const created = await elbv2.createRule(listener.arn, rule(10, [path('/a')], [forward(api.arn)]), {});

    await elbv2.modifyRule(created.arn, { conditions: [path('/b')], actions: [forward(web.arn)] });

    expect((await elbv2.describeRules(listener.arn))[0]).toEqual({
      ...created,
      conditions: [path('/b')],
      actions: [forward(web.arn)],
    });
  });

  test.differs(
    'elbv2.default-rule-actions',
    "modifies the default rule's actions, which are the listener's default actions",
    async () => {
      const { elbv2 } = backend();
      const { lb, api, listener } = await setup();
      const defaultRule = (await elbv2.describeRules(listener.arn)).at(-1)!;

      await elbv2.modifyRule(defaultRule.arn, { conditions: [], actions: [forward(api.arn)] });

      expect((await elbv2.describeListeners(lb.arn))[0]?.defaultActions).toEqual([forward(api.arn)]);
      expect((await elbv2.describeRules(listener.arn)).at(-1)?.actions).toEqual([forward(api.arn)]);
    },
  );

  test('deletes a rule', async () => {
    const { elbv2 } = backend();
    const { api, listener } = await setup();
    const created = await elbv2.createRule(listener.arn, rule(10, [path('/a')], [forward(api.arn)]), {});

    expect(await elbv2.deleteRule(created.arn)).toBe('deleted');
    expect((await elbv2.describeRules(listener.arn)).map((r) => r.priority)).toEqual(['default']);
  });

  test.differs('elbv2.rule-delete-unknown', 'deleting a rule that is gone is not-found (RuleNotFound)', async () => {
    const { elbv2 } = backend();
    const { api, listener } = await setup();
    const created = await elbv2.createRule(listener.arn, rule(10, [path('/a')], [forward(api.arn)]), {});
    await elbv2.deleteRule(created.arn);

    expect(await elbv2.deleteRule(created.arn)).toBe('not-found');
  });

  test.differs('elbv2.rule-default-delete', 'refuses to delete the default rule (OperationNotPermitted)', async () => {
    const { elbv2 } = backend();
    const { listener } = await setup();
    const defaultRule = (await elbv2.describeRules(listener.arn)).at(-1)!;

    await expect(elbv2.deleteRule(defaultRule.arn)).rejects.toThrow(/OperationNotPermitted/);
  });

  test('moves rules to free priorities, the others keeping theirs', async () => {
    const { elbv2 } = backend();
    const { api, web, listener } = await setup();
    const a = await elbv2.createRule(listener.arn, rule(1, [path('/a')], [forward(api.arn)]), {});
    const b = await elbv2.createRule(listener.arn, rule(2, [path('/b')], [forward(web.arn)]), {});

    // The two-step swap every backend takes: each target priority is free when it is asked for.
    await elbv2.setRulePriorities([{ ruleArn: a.arn, priority: 3 }]);
    await elbv2.setRulePriorities([{ ruleArn: b.arn, priority: 1 }]);
    await elbv2.setRulePriorities([{ ruleArn: a.arn, priority: 2 }]);

    expect((await elbv2.describeRules(listener.arn)).map((r) => [r.arn, r.priority])).toEqual([
      [b.arn, 1],
      [a.arn, 2],
      [expect.any(String), 'default'],
    ]);
  });

  test.differs('elbv2.rule-priorities-swap', 'two rules trade priorities in one SetRulePriorities call', async () => {
    const { elbv2 } = backend();
    const { api, web, listener } = await setup();
    const a = await elbv2.createRule(listener.arn, rule(1, [path('/a')], [forward(api.arn)]), {});
    const b = await elbv2.createRule(listener.arn, rule(2, [path('/b')], [forward(web.arn)]), {});

    await elbv2.setRulePriorities([
      { ruleArn: a.arn, priority: 2 },
      { ruleArn: b.arn, priority: 1 },
    ]);

    expect((await elbv2.describeRules(listener.arn)).map((r) => r.arn).slice(0, 2)).toEqual([b.arn, a.arn]);
  });

  test('refuses a priority a rule it does not move keeps (PriorityInUse)', async () => {
    const { elbv2 } = backend();
    const { api, web, listener } = await setup();
    const a = await elbv2.createRule(listener.arn, rule(1, [path('/a')], [forward(api.arn)]), {});
    await elbv2.createRule(listener.arn, rule(2, [path('/b')], [forward(web.arn)]), {});

    await expect(elbv2.setRulePriorities([{ ruleArn: a.arn, priority: 2 }])).rejects.toThrow(/PriorityInUse/);
    expect((await elbv2.describeRules(listener.arn))[0]?.arn).toBe(a.arn);
  });

  test('tags rules on create and through the tag calls', async () => {
    const { elbv2 } = backend();
    const { api, listener } = await setup();
    const created = await elbv2.createRule(listener.arn, rule(1, [path('/a')], [forward(api.arn)]), OWNED);

    await elbv2.addTags(created.arn, { team: 'web' });
    await elbv2.removeTags(created.arn, Object.keys(OWNED));

    expect((await elbv2.describeTags([created.arn])).get(created.arn)).toEqual({ team: 'web' });
  });

  test('refuses to delete a target group a rule forwards to (ResourceInUse)', async () => {
    const { elbv2 } = backend();
    const { api, listener } = await setup();
    const created = await elbv2.createRule(listener.arn, rule(1, [path('/a')], [forward(api.arn)]), {});

    await expect(elbv2.deleteTargetGroup(api.arn)).rejects.toThrow(/ResourceInUse/);
    await elbv2.deleteRule(created.arn);
    expect(await elbv2.deleteTargetGroup(api.arn)).toBe('deleted');
  });
});
