import { beforeEach, describe, expect, it } from 'vitest';
import type { Rule, RuleAction } from '../aws/elbv2-port.ts';
import { applyRules, type DesiredRule, sameRuleContent } from './rules.ts';
import {
  desiredRule,
  followChange,
  forwardTo,
  host,
  NOT_FOUND,
  path,
  probesOf,
  rulesWorld,
  watchWrites,
} from './testing/rules-world.ts';

/**
 * applyRules against the fake account: the end state, the writes it took, and, after every write, that each request
 * a forward rule took before and after the change still found a forward rule (fake.route).
 */

let w: Awaited<ReturnType<typeof rulesWorld>>;
beforeEach(async () => {
  w = await rulesWorld();
});

const rules = async (): Promise<Rule[]> => (await w.elb.describeRules(w.listener.arn)).filter((r) => !r.isDefault);

/** `count` rules, one path each (`/p0`, `/p1`...), forwarding round the target groups. */
function paths(count: number, name = (i: number) => `/p${i}`): DesiredRule[] {
  return Array.from({ length: count }, (_, i) =>
    desiredRule([path(name(i), `${name(i)}/*`)], forwardTo(w.groups[i % w.groups.length]!)),
  );
}

async function establish(desired: readonly DesiredRule[]) {
  await applyRules(w.listener.arn, desired, await rules(), w.elb);
}

/** Applies `desired` over what is there, following each write; answers what applyRules answered and what was lost. */
async function change(desired: readonly DesiredRule[]) {
  const existing = await w.elb.describeRules(w.listener.arn);
  const followed = followChange(w, probesOf([...existing, ...desired]));
  const applied = await applyRules(w.listener.arn, desired, existing, followed.port);
  return { applied, lost: followed.lost(), strays: followed.strays(), writes: followed.writes };
}

async function expectRules(desired: readonly DesiredRule[]) {
  const now = await rules();
  expect(now).toHaveLength(desired.length);
  for (const [i, rule] of desired.entries()) expect(sameRuleContent(now[i]!, rule), `rule ${i}`).toBe(true);
}

describe('applyRules', () => {
  it('creates rules 100 apart on an empty listener, tagged, in the desired order', async () => {
    const desired = paths(3);
    const { applied, lost } = await change(desired);

    expect(applied).toEqual({ created: 3, modified: 0, deleted: 0, moved: 0, calls: 3 });
    expect(lost).toEqual([]);
    expect((await rules()).map((r) => r.priority)).toEqual([100, 200, 300]);
    const arns = (await rules()).map((r) => r.arn);
    expect([...(await w.elb.describeTags(arns)).values()]).toEqual([
      { owner: 'test' },
      { owner: 'test' },
      { owner: 'test' },
    ]);
    await expectRules(desired);
  });

  it('writes nothing when the rules are as desired (and reads the default rule as no rule of its own)', async () => {
    await establish(paths(100));
    const { applied, writes } = await change(paths(100));

    expect(writes).toEqual([]);
    expect(applied).toEqual({ created: 0, modified: 0, deleted: 0, moved: 0, calls: 0 });
  });

  it('adds a path in the middle of 100 rules with one create, moving nothing', async () => {
    w.fake.ruleQuota = 200; // an adjustable quota, 100 by default
    await establish(paths(100));
    const desired = paths(100);
    desired.splice(50, 0, desiredRule([path('/new', '/new/*')], forwardTo(w.groups[0]!)));

    const { applied, lost, strays, writes } = await change(desired);

    expect(writes).toEqual(['createRule']);
    expect(applied).toMatchObject({ created: 1, moved: 0, calls: 1 });
    expect(lost).toEqual([]);
    expect(strays).toEqual([]);
    await expectRules(desired);
  });

  it('removes a path in the middle of 100 rules with one delete', async () => {
    await establish(paths(100));
    const desired = paths(100).filter((_, i) => i !== 37);

    const { writes, lost, strays } = await change(desired);

    expect(writes).toEqual(['deleteRule']);
    expect(lost).toEqual([]);
    expect(strays).toEqual([]);
    await expectRules(desired);
  });

  it('swaps two members’ blocks with one SetRulePriorities call', async () => {
    const a = paths(3, (i) => `/a${i}`);
    const b = paths(2, (i) => `/b${i}`);
    await establish([...a, ...b]);

    const { applied, writes, lost, strays } = await change([...b, ...a]);

    expect(writes).toEqual(['setRulePriorities']);
    expect(applied).toMatchObject({ moved: 2, calls: 1 });
    expect(lost).toEqual([]);
    expect(strays).toEqual([]);
    await expectRules([...b, ...a]);
  });

  it('switches a backend with one ModifyRule on the same rule', async () => {
    await establish(paths(5));
    const before = await rules();
    const desired = paths(5);
    desired[2] = { ...desired[2]!, actions: [forwardTo(w.groups[3]!)] };

    const { writes, lost, strays } = await change(desired);

    expect(writes).toEqual(['modifyRule', 'addTags']);
    expect(lost).toEqual([]);
    expect(strays).toEqual([]);
    expect((await rules()).map((r) => r.arn)).toEqual(before.map((r) => r.arn));
    await expectRules(desired);
  });

  it('adds a host block between two others: one create per rule, nothing moved', async () => {
    const block = (name: string, count: number, group: number) =>
      Array.from({ length: count }, (_, i) =>
        desiredRule([host(`${name}.example.com`), path(`/${i}`, `/${i}/*`)], forwardTo(w.groups[group]!)),
      );
    await establish([...block('a', 3, 0), ...block('c', 3, 2)]);
    const desired = [...block('a', 3, 0), ...block('b', 4, 1), ...block('c', 3, 2)];

    const { writes, lost, strays } = await change(desired);

    expect(writes).toEqual(['createRule', 'createRule', 'createRule', 'createRule']);
    expect(lost).toEqual([]);
    expect(strays).toEqual([]);
    await expectRules(desired);
  });

  it('takes over rules numbered 1, 2, 3... (the reference controller’s) and inserts with a create and one move', async () => {
    const desired = paths(40);
    for (const [i, rule] of desired.entries()) {
      await w.elb.createRule(w.listener.arn, { priority: i + 1, ...rule }, rule.tags);
    }
    desired.splice(10, 0, desiredRule([path('/new')], forwardTo(w.groups[1]!)));

    const { writes, lost, applied, strays } = await change(desired);

    expect(writes.sort()).toEqual(['createRule', 'setRulePriorities']);
    expect(applied.moved).toBe(30);
    expect(lost).toEqual([]);
    expect(strays).toEqual([]);
    await expectRules(desired);
    // Spread out now: the next insertion there moves nothing.
    desired.splice(11, 0, desiredRule([path('/newer')], forwardTo(w.groups[2]!)));
    expect((await change(desired)).writes).toEqual(['createRule']);
  });

  it('does not modify rules read back in another form of the same content', async () => {
    const weighted: RuleAction = {
      type: 'forward',
      targetGroups: [
        { arn: w.groups[1]!, weight: 20 },
        { arn: w.groups[0]!, weight: 80 },
      ],
      stickiness: { enabled: false },
    };
    await establish([
      { conditions: [path('/b', '/a'), host('API.example.com')], actions: [weighted], tags: {} },
      { conditions: [path('/c')], actions: [forwardTo(w.groups[2]!, 7)], tags: {} },
    ]);
    const reordered: RuleAction = {
      ...weighted,
      targetGroups: [
        { arn: w.groups[0]!, weight: 80 },
        { arn: w.groups[1]!, weight: 20 },
      ],
    };

    const { writes } = await change([
      { conditions: [host('api.example.com'), path('/a', '/b', '/a')], actions: [reordered], tags: {} },
      {
        conditions: [path('/c')],
        actions: [
          {
            type: 'forward',
            targetGroups: [{ arn: w.groups[2]!, weight: 1 }],
            stickiness: { enabled: false, durationSeconds: 60 },
          },
        ],
        tags: {},
      },
    ]);

    expect(writes).toEqual([]);
  });

  it('renames paths in place, ordering the modifications so a request moving between rules keeps one', async () => {
    // /x/* is split into /x/a (first) and /x/* (after it): the request /x/a goes from rule 1 to rule 0.
    await establish([
      desiredRule([path('/y')], forwardTo(w.groups[0]!)),
      desiredRule([path('/x/*')], forwardTo(w.groups[1]!)),
    ]);
    const desired = [
      desiredRule([path('/x/a')], forwardTo(w.groups[2]!)),
      desiredRule([path('/x/*')], forwardTo(w.groups[1]!)),
    ];

    const { writes, lost } = await change(desired);

    expect(writes).toEqual(['modifyRule', 'addTags']);
    expect(lost).toEqual([]);
    await expectRules(desired);
  });

  it('deletes rules that are no longer wanted after their successors exist; an empty desired list empties the listener', async () => {
    await establish(paths(4));
    const { lost, applied } = await change([desiredRule([path('/*')], forwardTo(w.groups[0]!))]);
    expect(lost).toEqual([]);
    expect(applied).toMatchObject({ created: 0, modified: 1, deleted: 3 });

    const emptied = await change([]);
    expect(emptied.applied).toMatchObject({ deleted: 1, calls: 1 });
    expect(await rules()).toEqual([]);
    expect(w.fake.route(w.listener.arn, { host: 'a.example.com', path: '/p1' }).actions).toEqual([NOT_FOUND]);
  });

  it('moves a fixed response up only once the forward rule to go before it is made', async () => {
    const m = desiredRule([path('/m')], forwardTo(w.groups[0]!));
    const a = desiredRule([path('/a')], forwardTo(w.groups[0]!));
    const busy = desiredRule([path('/*')], { type: 'fixed-response', statusCode: '503', contentType: 'text/plain' });
    await establish([m, a, busy]);
    const desired = [desiredRule([path('/a')], forwardTo(w.groups[1]!)), busy, m];

    const { lost } = await change(desired);

    expect(lost).toEqual([]);
    await expectRules(desired);
  });

  it('at the rule quota, deletes a rule that is going to make room for a create (TooManyRules)', async () => {
    const [a, b, c] = paths(3);
    await establish([a!, b!, c!]);
    w.fake.ruleQuota = 3;
    const x = desiredRule([path('/x')], forwardTo(w.groups[3]!));

    const { applied, writes } = await change([x, a!, b!]);

    expect(writes).toEqual(['deleteRule', 'createRule']);
    expect(applied).toMatchObject({ created: 1, deleted: 1, calls: 3 });
    await expectRules([x, a!, b!]);
  });

  it('at the rule quota, a fixed response deleted early to make room is not moved afterwards', async () => {
    const fixed = desiredRule([path('/z')], { type: 'fixed-response', statusCode: '503', contentType: 'text/plain' });
    const [a] = paths(1);
    await establish([fixed, a!]);
    w.fake.ruleQuota = 2;
    const x = desiredRule([path('/x')], forwardTo(w.groups[3]!));

    const { applied } = await change([a!, x]);

    expect(applied).toMatchObject({ created: 1, deleted: 1, moved: 0 });
    await expectRules([a!, x]);
  });

  it('gives up on the rule quota when nothing is going (TooManyRules, nothing deleted)', async () => {
    await establish(paths(2));
    w.fake.ruleQuota = 2;

    await expect(change([...paths(2), desiredRule([path('/x')], forwardTo(w.groups[3]!))])).rejects.toThrow(
      /TooManyRules/,
    );
    expect(await rules()).toHaveLength(2);
  });

  it('keeps the tags of a rule in line when it is modified into another and its tags are known', async () => {
    await establish([desiredRule([path('/a')], forwardTo(w.groups[0]!), { owner: 'a', old: 'x' })]);
    const [rule] = await rules();
    const tags = (await w.elb.describeTags([rule!.arn])).get(rule!.arn)!;
    const { port, writes } = watchWrites(w.elb);

    await applyRules(
      w.listener.arn,
      [desiredRule([path('/a')], forwardTo(w.groups[1]!), { owner: 'b' })],
      [{ ...rule!, tags }],
      port,
    );

    expect(writes).toEqual(['modifyRule', 'addTags', 'removeTags']);
    expect(w.fake.tagsOf(rule!.arn)).toEqual({ owner: 'b' });
  });
});
