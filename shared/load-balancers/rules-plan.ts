import type { Rule, RuleAction, RuleCondition } from '../aws/elbv2-port.ts';
import { conditionsKey, forwards, mayOverlap, ruleContentKey } from './rule-content.ts';
import { assignPriorities } from './rule-priorities.ts';

/**
 * What to write to turn a listener's rules into the desired ones, so that no request is left without a rule on the
 * way (the AWS Load Balancer Controller's sporadic 404s, its issue #3816) and a change costs what it changes:
 * 1. Rules that do the same (rule-content.ts) are the same rule. The longest run of them already in the desired
 *    order stays where it is; the others move (one SetRulePriorities call, rule-priorities.ts).
 * 2. Between two rules that stay, a desired rule and an existing rule that is not wanted any more are paired and the
 *    existing rule is modified in place (a backend switched, a path renamed): one call instead of two, and the
 *    request finds the old rule or the new one, never neither.
 * 3. The rest are created, then what is no longer wanted is deleted. Creating first means the old rule still
 *    answers until its successor does.
 * Modifying a rule's conditions takes requests away from it; a request it had that another modified rule is to
 * take must find that rule done first. Such modifications are ordered so; two that would each have to go first
 * are made create-then-delete instead.
 * The order of writes is: moves, creates (in rule order), modifies, deletes (rules that do not forward first).
 */

export interface DesiredRule {
  conditions: RuleCondition[];
  actions: RuleAction[];
  /** Put on a rule when it is created (ownership), and on a rule modified into this one; moves do not re-tag. */
  tags: Readonly<Record<string, string>>;
}

/** A rule of the listener as DescribeRules answers it, with its tags when the caller read them (DescribeTags). */
export type ExistingRule = Rule & { tags?: Readonly<Record<string, string>> };

export interface RuleMove {
  ruleArn: string;
  from: number;
  priority: number;
}

export interface RuleModify {
  ruleArn: string;
  priority: number;
  rule: DesiredRule;
  /** The rule's tags when known: kept in line with the desired ones. */
  tags?: Readonly<Record<string, string>>;
  /** False when only the actions change (the rule keeps its requests). */
  conditionsChange: boolean;
}

export interface RulesPlan {
  /** Rules that stay as they are but move: one SetRulePriorities call, to priorities nobody holds. */
  moves: RuleMove[];
  /** In rule order. */
  creates: { priority: number; rule: DesiredRule }[];
  /** In an order where no request loses its rule between two modifications. */
  modifies: RuleModify[];
  /** Rules that do not forward first, then in priority order. */
  deletes: ExistingRule[];
  /** The priority of each desired rule once the plan is applied, in desired order. */
  priorities: number[];
}

/** Pure: what to write to turn `existing` (DescribeRules, default rule included or not) into `desired` (final order). */
export function planRules(desired: readonly DesiredRule[], existing: readonly ExistingRule[]): RulesPlan {
  const current = existing
    .filter((r): r is ExistingRule & { priority: number } => !r.isDefault && typeof r.priority === 'number')
    .sort((a, b) => a.priority - b.priority);
  const matched = matchByContent(desired, current);
  const anchors = longestIncreasing(matched, current);
  const slots: (number | undefined)[] = desired.map((_, i) =>
    anchors.has(i) ? current[matched[i]!]!.priority : undefined,
  );
  const unwanted = new Set(range(0, current.length).filter((e) => !matched.includes(e)));
  const paired = pairInPlace(desired, current, slots, matched, unwanted);
  const order = orderModifies(desired, current, paired);
  for (const [i, e] of paired) slots[i] = current[e]!.priority;

  const { priorities, released } = assignPriorities(
    slots,
    current.map((r) => r.priority),
  );
  const plan: RulesPlan = { moves: [], creates: [], modifies: [], deletes: [], priorities };
  const deleted = new Set(unwanted);
  for (const [i, rule] of desired.entries()) {
    const priority = priorities[i]!;
    const same = matched[i];
    const was = paired.get(i);
    if (same !== undefined) {
      const from = current[same]!.priority;
      if (from !== priority) plan.moves.push({ ruleArn: current[same]!.arn, from, priority });
    } else if (was !== undefined && !released.has(i)) {
      deleted.delete(was);
    } else {
      plan.creates.push({ priority, rule });
    }
  }
  for (const i of order) {
    const e = paired.get(i)!;
    if (released.has(i)) continue;
    const rule = desired[i]!;
    const modify: RuleModify = {
      ruleArn: current[e]!.arn,
      priority: current[e]!.priority,
      rule,
      conditionsChange: conditionsKey(rule.conditions) !== conditionsKey(current[e]!.conditions),
    };
    if (current[e]!.tags) modify.tags = current[e]!.tags;
    plan.modifies.push(modify);
  }
  plan.deletes = [...deleted]
    .map((e) => current[e]!)
    .sort((a, b) => Number(forwards(a)) - Number(forwards(b)) || a.priority - b.priority);
  return plan;
}

/** For each desired rule, the existing rule (index) that does the same, each used once, in priority order. */
function matchByContent(desired: readonly DesiredRule[], current: readonly Rule[]): (number | undefined)[] {
  const byKey = new Map<string, number[]>();
  for (const [e, rule] of current.entries()) {
    const key = ruleContentKey(rule);
    byKey.set(key, [...(byKey.get(key) ?? []), e]);
  }
  return desired.map((rule) => byKey.get(ruleContentKey(rule))?.shift());
}

/** The desired rules (indexes) whose matched rules are already in the desired order, as many as can be. */
function longestIncreasing(matched: readonly (number | undefined)[], current: readonly Rule[]): Set<number> {
  const items = matched.flatMap((e, i) => (e === undefined ? [] : [{ i, p: current[e]!.priority as number }]));
  // Patience sorting: tails[k] is the item ending the best run of length k + 1; back links rebuild the run.
  const tails: number[] = [];
  const back: number[] = new Array(items.length).fill(-1);
  for (const [n, item] of items.entries()) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[tails[mid]!]!.p < item.p) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) back[n] = tails[lo - 1]!;
    tails[lo] = n;
  }
  const run = new Set<number>();
  for (let n = tails.at(-1) ?? -1; n >= 0; n = back[n]!) run.add(items[n]!.i);
  return run;
}

/**
 * Pairs desired rules that match nothing with unwanted rules between the same two staying rules, in order on both
 * sides, as many as can be, those keeping their conditions first. Answers desired index -> existing index.
 */
function pairInPlace(
  desired: readonly DesiredRule[],
  current: readonly Rule[],
  slots: readonly (number | undefined)[],
  matched: readonly (number | undefined)[],
  unwanted: ReadonlySet<number>,
): Map<number, number> {
  const pairs = new Map<number, number>();
  let lo = 0;
  let start = 0;
  for (let i = 0; i <= desired.length; i++) {
    if (i < desired.length && slots[i] === undefined) continue;
    const hi = i < desired.length ? slots[i]! : Number.POSITIVE_INFINITY;
    const wanted = range(start, i).filter((d) => matched[d] === undefined);
    const free = [...unwanted].filter(
      (e) => (current[e]!.priority as number) > lo && (current[e]!.priority as number) < hi,
    );
    for (const [d, e] of bestPairing(wanted, free, (d, e) =>
      conditionsKey(desired[d]!.conditions) === conditionsKey(current[e]!.conditions) ? 2 : 1,
    )) {
      pairs.set(d, e);
    }
    lo = hi;
    start = i + 1;
  }
  return pairs;
}

/** An order-keeping pairing of two lists with the greatest total weight (a weighted longest common subsequence). */
function bestPairing(a: readonly number[], b: readonly number[], weight: (x: number, y: number) => number) {
  const best: number[][] = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let x = a.length - 1; x >= 0; x--) {
    for (let y = b.length - 1; y >= 0; y--) {
      best[x]![y] = Math.max(best[x + 1]![y]!, best[x]![y + 1]!, weight(a[x]!, b[y]!) + best[x + 1]![y + 1]!);
    }
  }
  const out: [number, number][] = [];
  let x = 0;
  let y = 0;
  while (x < a.length && y < b.length) {
    if (best[x]![y] === weight(a[x]!, b[y]!) + best[x + 1]![y + 1]!) out.push([a[x++]!, b[y++]!]);
    else if (best[x]![y] === best[x + 1]![y]) x++;
    else y++;
  }
  return out;
}

/**
 * The modifications in an order where every request keeps a rule: a rule whose conditions change loses the requests
 * only its old conditions matched; if another modified rule may take some of them, that one goes first. Pairs that
 * would each have to go first are unpaired (their rules created and deleted instead). Answers desired indexes.
 */
function orderModifies(
  desired: readonly DesiredRule[],
  current: readonly Rule[],
  paired: Map<number, number>,
): number[] {
  const changing = () =>
    [...paired].filter(([d, e]) => conditionsKey(desired[d]!.conditions) !== conditionsKey(current[e]!.conditions));
  for (;;) {
    const nodes = changing();
    // i must wait for j when a request the old rule of i matched may match the new rule of j.
    const waitsFor = new Map(
      nodes.map(([i, ei]) => [
        i,
        new Set(
          nodes.filter(([j]) => j !== i && mayOverlap(current[ei]!.conditions, desired[j]!.conditions)).map(([j]) => j),
        ),
      ]),
    );
    const done: number[] = [];
    let progress = true;
    while (progress) {
      progress = false;
      for (const [i, deps] of waitsFor) {
        if ([...deps].every((j) => done.includes(j))) {
          done.push(i);
          waitsFor.delete(i);
          progress = true;
        }
      }
    }
    if (waitsFor.size === 0) {
      const rest = [...paired.keys()].filter((d) => !done.includes(d));
      return [...rest, ...done];
    }
    // A cycle: the first of it is made create-then-delete instead.
    paired.delete(waitsFor.keys().next().value!);
  }
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, k) => from + k);
}
