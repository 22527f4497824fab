import { describe, expect, it } from 'vitest';
import type { Rule, RuleAction, RuleCondition } from '../aws/elbv2-port.ts';
import { mayOverlap, sameRuleContent } from './rule-content.ts';
import { assignPriorities, PRIORITY_STEP } from './rule-priorities.ts';
import { type DesiredRule, planRules } from './rules-plan.ts';

/** The pure parts of listener rule syncing: normal form, priorities, plans. */

const fwd = (...groups: [string, number][]): RuleAction => ({
  type: 'forward',
  targetGroups: groups.map(([arn, weight]) => ({ arn, weight })),
  stickiness: { enabled: false },
});
const path = (...values: string[]): RuleCondition => ({ field: 'path-pattern', values });
const host = (...values: string[]): RuleCondition => ({ field: 'host-header', values });
const FIXED: RuleAction = { type: 'fixed-response', statusCode: '503', contentType: 'text/plain' };

describe('sameRuleContent', () => {
  const base = { conditions: [host('a.example.com'), path('/a', '/b')], actions: [fwd(['tg1', 1])] };
  it.each([
    ['conditions in another order', { ...base, conditions: [path('/a', '/b'), host('a.example.com')] }],
    ['values in another order, repeated', { ...base, conditions: [host('a.example.com'), path('/b', '/a', '/b')] }],
    ['a host in capitals', { ...base, conditions: [host('A.Example.COM'), path('/a', '/b')] }],
    ['a single group with another weight', { ...base, actions: [fwd(['tg1', 5])] }],
    [
      'stickiness off with a duration',
      {
        ...base,
        actions: [{ ...fwd(['tg1', 1]), stickiness: { enabled: false, durationSeconds: 3600 } } as RuleAction],
      },
    ],
  ])('is the same with %s', (_, other) => {
    expect(sameRuleContent(base, other)).toBe(true);
  });

  it.each([
    ['a path in another case', { ...base, conditions: [host('a.example.com'), path('/A', '/b')] }],
    ['another group', { ...base, actions: [fwd(['tg2', 1])] }],
    ['two groups weighted otherwise', { ...base, actions: [fwd(['tg1', 1], ['tg2', 2])] }],
    ['a fixed response', { ...base, actions: [FIXED] }],
    ['one value less', { ...base, conditions: [host('a.example.com'), path('/a')] }],
    [
      'a regular expression besides',
      {
        ...base,
        conditions: [
          host('a.example.com'),
          { field: 'path-pattern', values: ['/a', '/b'], regexValues: ['^/c'] } as RuleCondition,
        ],
      },
    ],
  ])('differs with %s', (_, other) => {
    expect(sameRuleContent(base, other)).toBe(false);
  });

  it('tells apart weighted forwards by weight but not by listing order', () => {
    expect(
      sameRuleContent({ ...base, actions: [fwd(['a', 1], ['b', 2])] }, { ...base, actions: [fwd(['b', 2], ['a', 1])] }),
    ).toBe(true);
    expect(
      sameRuleContent({ ...base, actions: [fwd(['a', 1], ['b', 2])] }, { ...base, actions: [fwd(['a', 2], ['b', 1])] }),
    ).toBe(false);
  });
});

describe('mayOverlap', () => {
  it.each([
    [[path('/a')], [path('/b')], false],
    [[path('/a/*')], [path('/b/*')], false],
    [[path('/a/*')], [path('/a/b')], true],
    [[path('*.png')], [path('*.jpg')], false],
    [[path('/a')], [path('/a/x')], false],
    [[host('a.example.com'), path('/x')], [host('b.example.com'), path('/x')], false],
    [[host('*.example.com')], [host('A.example.com')], true],
    [[path('/x')], [host('a.example.com')], true],
    [[path('/x')], [{ field: 'path-pattern', values: [], regexValues: ['^/y'] } as RuleCondition], true],
  ])('%j and %j: %s', (a, b, overlap) => {
    expect(mayOverlap(a, b)).toBe(overlap);
  });
});

describe('assignPriorities', () => {
  it.each([
    ['an empty listener: 100 apart', [undefined, undefined, undefined], [], [100, 200, 300], []],
    ['kept priorities stay; an insertion goes between', [10, undefined, 20], [10, 20], [10, 15, 20], []],
    ['appends go 100 past the last', [500, undefined, undefined], [500], [500, 600, 700], []],
    ['a rule in front of the first goes halfway', [undefined, 100], [100], [50, 100], []],
    ['never a priority someone holds', [10, undefined, 14], [10, 12, 14], [10, 13, 14], []],
    ['no room between 1 and 2: the rules above move up', [1, undefined, 2, 3], [1, 2, 3], [1, 101, 201, 301], [2, 3]],
    ['fixed slots out of order: the later one moves', [20, 10], [10, 20], [20, 120], [1]],
  ])('%s', (_, slots, held, priorities, released) => {
    const got = assignPriorities(slots, held);
    expect(got.priorities).toEqual(priorities);
    expect([...got.released].sort()).toEqual(released);
  });

  it('fits 1000 rules below 50000 whatever is held', () => {
    const held = Array.from({ length: 1000 }, (_, i) => i + 1);
    const { priorities } = assignPriorities(new Array(1000).fill(undefined), held);
    expect(new Set(priorities).size).toBe(1000);
    expect(priorities.every((p, i) => p > 1000 && p <= 50_000 && (i === 0 || p > priorities[i - 1]!))).toBe(true);
    expect(PRIORITY_STEP * 1000).toBeGreaterThan(50_000); // so the spread had to shrink to fit
  });
});

describe('planRules', () => {
  const existing = (priority: number, conditions: RuleCondition[], action: RuleAction): Rule => ({
    arn: `rule-${priority}`,
    priority,
    isDefault: false,
    conditions,
    actions: [action],
  });
  const want = (conditions: RuleCondition[], action: RuleAction): DesiredRule => ({
    conditions,
    actions: [action],
    tags: {},
  });
  const DEFAULT: Rule = { arn: 'default', priority: 'default', isDefault: true, conditions: [], actions: [FIXED] };

  it('plans nothing for rules as desired, the default rule aside', () => {
    const plan = planRules([want([path('/a')], fwd(['g', 1]))], [existing(3, [path('/a')], fwd(['g', 1])), DEFAULT]);
    expect(plan).toMatchObject({ moves: [], creates: [], modifies: [], lateCreates: [], deletes: [], priorities: [3] });
  });

  it('modifies in place a rule between the same neighbours, conditions kept first', () => {
    const plan = planRules(
      [want([path('/a')], fwd(['g', 1])), want([path('/b')], fwd(['h', 1])), want([path('/c')], fwd(['g', 1]))],
      [
        existing(1, [path('/a')], fwd(['g', 1])),
        existing(2, [path('/b')], fwd(['g', 1])),
        existing(3, [path('/c')], fwd(['g', 1])),
      ],
    );
    expect(plan.earlyModifies).toEqual([
      expect.objectContaining({ ruleArn: 'rule-2', priority: 2, conditionsChange: false }),
    ]);
    expect(plan.modifies).toEqual([]);
    expect(plan.creates).toEqual([]);
    expect(plan.deletes).toEqual([]);
  });

  it('pushes a fixed response that goes below the rules that stay, in the same call as the moves', () => {
    // Rules made 1, 2, 3 by the reference controller; a new first rule moves the others past the fixed response.
    const plan = planRules(
      [want([path('/new')], fwd(['g', 1])), want([path('/*')], fwd(['g', 1]))],
      [existing(1, [path('/*')], fwd(['g', 1])), existing(2, [path('/*')], FIXED)],
    );
    const pushed = plan.moves.find((m) => m.ruleArn === 'rule-2');
    expect(pushed?.priority).toBeGreaterThan(Math.max(...plan.priorities));
    expect(plan.deletes.map((r) => r.arn)).toEqual(['rule-2']);
  });

  it('creates a rule that does not forward after the modifications, one that forwards before', () => {
    const plan = planRules([want([path('/a')], fwd(['g', 1])), want([path('/b')], FIXED)], []);
    expect(plan.creates.map((c) => c.rule.conditions)).toEqual([[path('/a')]]);
    expect(plan.lateCreates.map((c) => c.rule.conditions)).toEqual([[path('/b')]]);
  });

  it('gives a fixed response no other conditions in place: it is replaced instead', () => {
    const plan = planRules(
      [want([path('/a')], fwd(['g', 1])), want([path('/y')], FIXED)],
      [existing(10, [path('/a')], fwd(['g', 1])), existing(20, [path('/x')], FIXED)],
    );
    expect(plan.modifies).toEqual([]);
    expect(plan.lateCreates).toHaveLength(1);
    expect(plan.deletes.map((r) => r.arn)).toEqual(['rule-20']);
  });

  it('orders modifications so the rule a request moves to is done before the one it leaves', () => {
    // /x/a moves from the second rule (/x/* becomes /z) to the first (/y becomes /x/a).
    const plan = planRules(
      [want([path('/x/a')], fwd(['g', 1])), want([path('/z')], fwd(['h', 1]))],
      [existing(10, [path('/y')], fwd(['g', 1])), existing(20, [path('/x/*')], fwd(['h', 1]))],
    );
    expect(plan.modifies.map((m) => m.ruleArn)).toEqual(['rule-10', 'rule-20']);
  });

  it('replaces two in-place modifications that would each have to go first (a swap of paths)', () => {
    const plan = planRules(
      [want([path('/b')], fwd(['g', 1])), want([path('/a')], fwd(['h', 1]))],
      [existing(10, [path('/a')], fwd(['g', 1])), existing(20, [path('/b')], fwd(['h', 1]))],
    );
    expect(plan.modifies.length).toBeLessThan(2);
    expect(plan.creates.length + plan.modifies.length).toBe(2);
  });

  it('unpairs only a modification on the cycle, not one that merely waits for it', () => {
    const plan = planRules(
      [want([path('/z')], fwd(['k', 1])), want([path('/b')], fwd(['g', 1])), want([path('/a')], fwd(['h', 1]))],
      [
        existing(10, [path('/a/*')], fwd(['k', 1])),
        existing(20, [path('/a')], fwd(['g', 1])),
        existing(30, [path('/b')], fwd(['h', 1])),
      ],
    );
    expect(plan.modifies.map((m) => m.ruleArn).sort()).toEqual(['rule-10', 'rule-20']);
    expect(plan.creates.map((c) => c.rule.conditions)).toEqual([[path('/a')]]);
    expect(plan.deletes.map((r) => r.arn)).toEqual(['rule-30']);
  });
});
