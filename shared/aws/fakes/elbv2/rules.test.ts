import { beforeEach, describe, expect, it } from 'vitest';
import { albHealthCheckDefaults } from '../../elbv2-defaults.ts';
import type { Listener, RuleAction, RuleCondition, RuleSpec } from '../../elbv2-port.ts';
import { codeOf, elbv2World, failure, lbInput, tgInput } from './testing.ts';

/** The fake's listener rules behind the real adapter, and its `route` helper. */
let w: ReturnType<typeof elbv2World>;
let listener: Listener;
let groups: { api: string; web: string; canary: string };
beforeEach(async () => {
  w = elbv2World();
  const lb = await w.elb.createLoadBalancer(lbInput({ name: 'alb', type: 'application' }));
  if (lb === 'name-taken') throw new Error('taken');
  const group = async (name: string) => {
    const created = await w.elb.createTargetGroup(
      tgInput({ name, protocol: 'HTTP', port: 8080, healthCheck: albHealthCheckDefaults() }),
    );
    if (created === 'name-taken') throw new Error('taken');
    return created.arn;
  };
  groups = { api: await group('api'), web: await group('web'), canary: await group('canary') };
  listener = await w.elb.createApplicationListener(
    lb.arn,
    { port: 80, protocol: 'HTTP', defaultActions: [NOT_FOUND] },
    {},
  );
});

const NOT_FOUND: RuleAction = { type: 'fixed-response', statusCode: '404' };
const to = (arn: string): RuleAction => ({
  type: 'forward',
  targetGroups: [{ arn, weight: 1 }],
  stickiness: { enabled: false },
});
const path = (...values: string[]): RuleCondition => ({ field: 'path-pattern', values });
const host = (...values: string[]): RuleCondition => ({ field: 'host-header', values });
const rule = (priority: number, conditions: RuleCondition[], arn: string): RuleSpec => ({
  priority,
  conditions,
  actions: [to(arn)],
});

describe('FakeElbv2 listener rules', () => {
  it('creates rules, lists them in priority order with the default rule last, and tags them', async () => {
    const b = await w.elb.createRule(listener.arn, rule(20, [path('/b')], groups.web), { owner: 'us' });
    const a = await w.elb.createRule(listener.arn, rule(10, [path('/a')], groups.api), {});

    const rules = await w.elb.describeRules(listener.arn);

    expect(rules.map((r) => r.priority)).toEqual([10, 20, 'default']);
    expect(rules[0]).toEqual({ ...a, priority: 10, isDefault: false });
    expect(rules[2]).toMatchObject({ isDefault: true, conditions: [], actions: [NOT_FOUND] });
    expect(b.arn).toMatch(/:listener-rule\/app\/alb\/[0-9a-f]{16}\/[0-9a-f]{16}\/[0-9a-f]{16}$/);
    expect((await w.elb.describeTags([b.arn])).get(b.arn)).toEqual({ owner: 'us' });
    await w.elb.addTags(a.arn, { owner: 'them' });
    expect(w.fake.tagsOf(a.arn)).toEqual({ owner: 'them' });
    // The rules' groups are tied to the load balancer, and cannot go while a rule uses them.
    expect((await w.elb.findTargetGroups(['api']))[0]?.loadBalancerArns).toEqual([listener.loadBalancerArn]);
    expect(codeOf(await failure(w.elb.deleteTargetGroup(groups.api)))).toBe('ResourceInUse');
  });

  it('refuses a priority another rule of the listener holds (PriorityInUse) or outside 1-50000', async () => {
    await w.elb.createRule(listener.arn, rule(10, [path('/a')], groups.api), {});
    expect(codeOf(await failure(w.elb.createRule(listener.arn, rule(10, [path('/b')], groups.web), {})))).toBe(
      'PriorityInUse',
    );
    for (const priority of [0, 50_001]) {
      expect(codeOf(await failure(w.elb.createRule(listener.arn, rule(priority, [path('/b')], groups.web), {})))).toBe(
        'ValidationError',
      );
    }
    expect(w.fake.rulesOf(listener.arn)).toHaveLength(1);
  });

  it('counts the rules of every listener of the load balancer against the quota (TooManyRules)', async () => {
    w.fake.ruleQuota = 2;
    const second = await w.elb.createApplicationListener(
      listener.loadBalancerArn,
      { port: 8080, protocol: 'HTTP', defaultActions: [NOT_FOUND] },
      {},
    );
    await w.elb.createRule(listener.arn, rule(1, [path('/a')], groups.api), {});
    await w.elb.createRule(second.arn, rule(1, [path('/a')], groups.api), {});
    expect(codeOf(await failure(w.elb.createRule(listener.arn, rule(2, [path('/b')], groups.web), {})))).toBe(
      'TooManyRules',
    );
  });

  it.each([
    ['no condition', []],
    ['four values in one condition', [path('/a', '/b', '/c', '/d')]],
    ['six values in the rule', [path('/a', '/b', '/c'), host('a.example.com', 'b.example.com', 'c.example.com')]],
    ['six wildcards in the rule', [path('/*/*/*'), host('*.*.*.example.com')]],
    ['two path-pattern conditions', [path('/a'), path('/b')]],
    ['a lowercase method', [{ field: 'http-request-method', values: ['get'] } as RuleCondition]],
    ['a header name with a wildcard', [{ field: 'http-header', headerName: 'X-*', values: ['a'] } as RuleCondition]],
    ['a bad CIDR block', [{ field: 'source-ip', values: ['10.0.0.0/33'] } as RuleCondition]],
    ['a host with a slash', [host('a/b.example.com')]],
    ['a host without a dot', [host('localhost')]],
    ['a host ending in digits', [host('10.0.0.1')]],
  ])('refuses a rule with %s (ValidationError)', async (_, conditions) => {
    expect(codeOf(await failure(w.elb.createRule(listener.arn, rule(1, conditions, groups.api), {})))).toBe(
      'ValidationError',
    );
  });

  it('modifies a rule’s conditions and actions; the default rule takes new actions but no conditions', async () => {
    const created = await w.elb.createRule(listener.arn, rule(10, [path('/a')], groups.api), {});
    const modified = await w.elb.modifyRule(created.arn, { conditions: [path('/b')], actions: [to(groups.web)] });
    expect(modified).toMatchObject({ priority: 10, conditions: [path('/b')], actions: [to(groups.web)] });

    const defaultRule = (await w.elb.describeRules(listener.arn)).at(-1)!;
    await w.elb.modifyRule(defaultRule.arn, { conditions: [], actions: [to(groups.canary)] });
    expect(
      codeOf(await failure(w.elb.modifyRule(defaultRule.arn, { conditions: [path('/x')], actions: [NOT_FOUND] }))),
    ).toBe('OperationNotPermitted');
    expect((await w.elb.describeListeners(listener.loadBalancerArn))[0]).toMatchObject({
      targetGroupArn: groups.canary,
      defaultActions: [to(groups.canary)],
    });
  });

  it('deletes a rule (then not-found); the default rule cannot be deleted; deleting the listener drops its rules', async () => {
    const created = await w.elb.createRule(listener.arn, rule(10, [path('/a')], groups.api), {});
    const defaultRule = (await w.elb.describeRules(listener.arn)).at(-1)!;

    expect(codeOf(await failure(w.elb.deleteRule(defaultRule.arn)))).toBe('OperationNotPermitted');
    expect(await w.elb.deleteRule(created.arn)).toBe('deleted');
    expect(await w.elb.deleteRule(created.arn)).toBe('not-found');

    await w.elb.createRule(listener.arn, rule(10, [path('/a')], groups.api), {});
    await w.elb.deleteListener(listener.arn);
    expect(w.fake.rules.size).toBe(0);
    expect(await w.elb.deleteTargetGroup(groups.api)).toBe('deleted');
  });

  it('sets priorities checking the new order as a whole: two rules trade priorities in one call', async () => {
    const a = await w.elb.createRule(listener.arn, rule(1, [path('/a')], groups.api), {});
    const b = await w.elb.createRule(listener.arn, rule(2, [path('/b')], groups.web), {});

    await w.elb.setRulePriorities([
      { ruleArn: a.arn, priority: 2 },
      { ruleArn: b.arn, priority: 1 },
    ]);

    expect((await w.elb.describeRules(listener.arn)).map((r) => r.arn)).toEqual([
      b.arn,
      a.arn,
      expect.stringContaining(':listener-rule/'),
    ]);
  });

  it('refuses a priority a rule it does not move keeps (PriorityInUse), changing nothing; and the default rule', async () => {
    const a = await w.elb.createRule(listener.arn, rule(1, [path('/a')], groups.api), {});
    const b = await w.elb.createRule(listener.arn, rule(2, [path('/b')], groups.web), {});
    await w.elb.createRule(listener.arn, rule(3, [path('/c')], groups.canary), {});

    const err = await failure(
      w.elb.setRulePriorities([
        { ruleArn: a.arn, priority: 5 },
        { ruleArn: b.arn, priority: 3 },
      ]),
    );

    expect(codeOf(err)).toBe('PriorityInUse');
    expect(w.fake.rulesOf(listener.arn).map((r) => r.priority)).toEqual([1, 2, 3]);
    const defaultRule = (await w.elb.describeRules(listener.arn)).at(-1)!;
    expect(codeOf(await failure(w.elb.setRulePriorities([{ ruleArn: defaultRule.arn, priority: 9 }])))).toBe(
      'OperationNotPermitted',
    );
  });
});

describe('FakeElbv2.route: which rule a request matches now', () => {
  it('evaluates the rules in priority order, then the default rule', async () => {
    const exact = await w.elb.createRule(listener.arn, rule(1, [path('/api/v2')], groups.canary), {});
    await w.elb.createRule(listener.arn, rule(2, [path('/api', '/api/*')], groups.api), {});

    expect(w.fake.route(listener.arn, { host: 'x.example.com', path: '/api/v2' })).toEqual({
      ruleArn: exact.arn,
      priority: 1,
      actions: [to(groups.canary)],
    });
    expect(w.fake.route(listener.arn, { host: 'x', path: '/api/v1?x=1' }).actions).toEqual([to(groups.api)]);
    expect(w.fake.route(listener.arn, { host: 'x', path: '/api' }).priority).toBe(2);
    const miss = w.fake.route(listener.arn, { host: 'x', path: '/apis' });
    expect(miss).toMatchObject({ priority: 'default', actions: [NOT_FOUND] });
    expect(miss.ruleArn).toBe((await w.elb.describeRules(listener.arn)).at(-1)?.arn);
  });

  it('paths are case-sensitive with * and ?; hosts are not, with wildcards and without the port', async () => {
    await w.elb.createRule(listener.arn, rule(1, [host('*.Example.com'), path('/v?/*')], groups.api), {});

    expect(w.fake.route(listener.arn, { host: 'API.example.COM:8443', path: '/v1/users' }).priority).toBe(1);
    expect(w.fake.route(listener.arn, { host: 'api.example.com', path: '/V1/users' }).priority).toBe('default');
    expect(w.fake.route(listener.arn, { host: 'api.example.com', path: '/v10/users' }).priority).toBe('default');
    expect(w.fake.route(listener.arn, { host: 'example.com', path: '/v1/users' }).priority).toBe('default');
  });

  it('headers, methods, query strings and source addresses', async () => {
    await w.elb.createRule(
      listener.arn,
      rule(1, [{ field: 'http-header', headerName: 'X-Canary', values: ['on', 'y*'] }], groups.canary),
      {},
    );
    await w.elb.createRule(listener.arn, rule(2, [{ field: 'http-request-method', values: ['POST'] }], groups.api), {});
    await w.elb.createRule(
      listener.arn,
      rule(3, [{ field: 'query-string', values: [{ key: 'v', value: '2' }, { value: 'beta' }] }], groups.web),
      {},
    );
    await w.elb.createRule(
      listener.arn,
      rule(4, [{ field: 'source-ip', values: ['10.1.0.0/16', '2001:db8::/32'] }], groups.web),
      {},
    );
    const at = (request: Parameters<typeof w.fake.route>[1]) => w.fake.route(listener.arn, request).priority;

    expect(at({ host: 'h', path: '/', headers: { 'x-canary': 'YES' } })).toBe(1);
    expect(at({ host: 'h', path: '/', headers: { 'x-canary': ['no', 'On'] } })).toBe(1);
    expect(at({ host: 'h', path: '/', method: 'POST' })).toBe(2);
    expect(at({ host: 'h', path: '/', method: 'post' })).toBe('default');
    expect(at({ host: 'h', path: '/', query: [['V', '2']] })).toBe(3);
    expect(at({ host: 'h', path: '/', query: [['anything', 'BETA']] })).toBe(3);
    expect(at({ host: 'h', path: '/', query: [['v', '3']] })).toBe('default');
    expect(at({ host: 'h', path: '/', sourceIp: '10.1.200.3' })).toBe(4);
    expect(at({ host: 'h', path: '/', sourceIp: '2001:db8::1' })).toBe(4);
    expect(at({ host: 'h', path: '/', sourceIp: '10.2.0.1' })).toBe('default');
  });

  it('follows every intermediate state of a priority swap', async () => {
    const a = await w.elb.createRule(listener.arn, rule(1, [path('/*')], groups.api), {});
    const b = await w.elb.createRule(listener.arn, rule(2, [path('/x')], groups.web), {});
    expect(w.fake.route(listener.arn, { host: 'h', path: '/x' }).ruleArn).toBe(a.arn);

    await w.elb.setRulePriorities([
      { ruleArn: a.arn, priority: 2 },
      { ruleArn: b.arn, priority: 1 },
    ]);

    expect(w.fake.route(listener.arn, { host: 'h', path: '/x' }).ruleArn).toBe(b.arn);
    expect(w.fake.route(listener.arn, { host: 'h', path: '/y' }).ruleArn).toBe(a.arn);
  });
});
