import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RuleAction, RuleCondition } from '../aws/elbv2-port.ts';
import { applyRules, type DesiredRule, sameRuleContent } from './rules.ts';
import { followChange, host, path, probesOf, rulesWorld } from './testing/rules-world.ts';

/**
 * Random rule sets turned into other random rule sets (many of them close to the first, as real changes are: a path
 * added, removed, moved, a backend switched, a path renamed): after every write, each request a forward rule took
 * before and after still finds a forward rule; the end state is the desired list in order; applying it again writes
 * nothing.
 */

const HOSTS = [undefined, 'a.example.com', 'b.example.com', '*.example.com'] as const;
const PATHS = [
  ['/*'],
  ['/api', '/api/*'],
  ['/api/v1', '/api/v1/*'],
  ['/api/v?/*'],
  ['/static/*'],
  ['/x'],
  ['/x/*'],
  ['/x/y'],
] as const;

/** A rule as indexes into the pools: host, path, action (0-3 forward to a group, 4 weighted, 5 fixed 503). */
type Shape = [number, number, number];

const shape: fc.Arbitrary<Shape> = fc.tuple(
  fc.nat({ max: HOSTS.length - 1 }),
  fc.nat({ max: PATHS.length - 1 }),
  fc.oneof({ arbitrary: fc.nat({ max: 4 }), weight: 3 }, { arbitrary: fc.constant(5), weight: 1 }),
);

/** A change to a list: insert, delete, move, switch the action, change the path. */
type Edit = { kind: 'insert' | 'delete' | 'move' | 'action' | 'path'; at: number; to: number; shape: Shape };
const edit: fc.Arbitrary<Edit> = fc.record({
  kind: fc.constantFrom('insert', 'delete', 'move', 'action', 'path'),
  at: fc.nat(),
  to: fc.nat(),
  shape,
});

function applyEdit(list: Shape[], e: Edit): Shape[] {
  const next = [...list];
  const at = next.length === 0 ? 0 : e.at % next.length;
  if (e.kind === 'insert' || next.length === 0) next.splice(e.at % (next.length + 1), 0, e.shape);
  else if (e.kind === 'delete') next.splice(at, 1);
  else if (e.kind === 'move') next.splice(e.to % next.length, 0, ...next.splice(at, 1));
  else if (e.kind === 'action') next[at] = [next[at]![0], next[at]![1], e.shape[2]];
  else next[at] = [next[at]![0], e.shape[1], next[at]![2]];
  return next;
}

function toRules(shapes: readonly Shape[], groups: readonly string[]): DesiredRule[] {
  return shapes.map(([h, p, a]) => {
    const conditions: RuleCondition[] = [path(...PATHS[p]!)];
    if (HOSTS[h]) conditions.unshift(host(HOSTS[h]));
    const action: RuleAction =
      a < 4
        ? { type: 'forward', targetGroups: [{ arn: groups[a]!, weight: 1 }], stickiness: { enabled: false } }
        : a === 4
          ? {
              type: 'forward',
              targetGroups: [
                { arn: groups[0]!, weight: 3 },
                { arn: groups[1]!, weight: 1 },
              ],
              stickiness: { enabled: true, durationSeconds: 60 },
            }
          : { type: 'fixed-response', statusCode: '503', contentType: 'text/plain', messageBody: 'no backend' };
    return { conditions, actions: [action], tags: { rule: `${h}-${p}-${a}` } };
  });
}

/** One change: edits of the current list, or (null edits) an unrelated list. */
const change = fc.record({
  edits: fc.oneof(
    { arbitrary: fc.array(edit, { minLength: 1, maxLength: 4 }), weight: 4 },
    { arbitrary: fc.constant(null), weight: 1 },
  ),
  unrelated: fc.array(shape, { maxLength: 12 }),
});

const scenario = fc.record({
  before: fc.array(shape, { maxLength: 12 }),
  /** Changes made one after another, each checked. */
  changes: fc.array(change, { minLength: 1, maxLength: 4 }),
  /** Whether `before` was made as the reference controller numbers its rules (1, 2, 3...). */
  dense: fc.boolean(),
});

describe('applyRules on random changes', () => {
  it('never leaves a request that had a target group without one, and ends in the desired order', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ before, changes, dense }) => {
        const w = await rulesWorld();
        const first = toRules(before, w.groups);
        if (dense) {
          for (const [i, r] of first.entries())
            await w.elb.createRule(w.listener.arn, { priority: i + 1, ...r }, r.tags);
        } else {
          await applyRules(w.listener.arn, first, await w.elb.describeRules(w.listener.arn), w.elb);
        }
        let shapes = before;
        for (const { edits, unrelated } of changes) {
          const previous = toRules(shapes, w.groups);
          shapes = edits ? edits.reduce(applyEdit, shapes) : unrelated;
          const after = toRules(shapes, w.groups);
          const existing = await w.elb.describeRules(w.listener.arn);
          const followed = followChange(w, probesOf([...previous, ...after]));

          await applyRules(w.listener.arn, after, existing, followed.port);

          expect(followed.lost()).toEqual([]);
          const now = (await w.elb.describeRules(w.listener.arn)).filter((r) => !r.isDefault);
          expect(now.length).toBe(after.length);
          for (const [i, r] of after.entries()) expect(sameRuleContent(now[i]!, r)).toBe(true);
          const again = followChange(w, []);
          await applyRules(w.listener.arn, after, await w.elb.describeRules(w.listener.arn), again.port);
          expect(again.writes).toEqual([]);
        }
      }),
      // RULES_PROPERTY_RUNS=2000 for a longer search.
      { numRuns: Number(process.env.RULES_PROPERTY_RUNS ?? 200) },
    );
  }, 300_000);

  it('inserts at the same place again and again: each costs a create, now and then one move besides', async () => {
    const w = await rulesWorld();
    w.fake.ruleQuota = 200;
    const rule = (name: string): DesiredRule => ({
      conditions: [path(`/${name}`)],
      actions: [{ type: 'forward', targetGroups: [{ arn: w.groups[0]!, weight: 1 }], stickiness: { enabled: false } }],
      tags: {},
    });
    const list = [rule('first'), rule('last')];
    await applyRules(w.listener.arn, list, [], w.elb);
    let moves = 0;
    for (let n = 0; n < 60; n++) {
      list.splice(1, 0, rule(`r${n}`));
      const existing = await w.elb.describeRules(w.listener.arn);
      const followed = followChange(w, probesOf(list));
      const applied = await applyRules(w.listener.arn, list, existing, followed.port);
      expect(followed.lost()).toEqual([]);
      expect(applied.created).toBe(1);
      expect(applied.calls).toBeLessThanOrEqual(2);
      if (applied.moved > 0) moves++;
    }
    // The gap between the first two rules halves at each insertion: a move spreads them out now and then.
    expect(moves).toBeGreaterThan(0);
    expect(moves).toBeLessThan(15);
  });
});
