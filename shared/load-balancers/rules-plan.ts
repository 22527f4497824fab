import { RULE_LIMITS, type Rule, type RuleAction, type RuleCondition } from '../aws/elbv2-port.ts';
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
 * are made create-then-delete instead, and so are all of them when a rule that forwards moves in the same change.
 * Every intermediate state is checked, write by write, by rules.test.ts and rules-property.test.ts (random changes).
 * Rules that do not forward need care: a request they take on the way is lost. Those that go are pushed below
 * every rule that stays; those that come are made last; those that move wait below the others and take their place
 * last; one is modified in place only when its conditions stay.
 * The order of writes: creates of forward rules (in rule order) and modifications that keep the conditions and end
 * forwarding (all safe whatever else is in place), moves (one call), the other modifications, creates of the rules
 * that do not forward, moves of those (one call), deletes (rules that do not forward first).
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
  /** Rules that forward, in rule order: made first (a request finds its old rule or one of these). */
  creates: { priority: number; rule: DesiredRule }[];
  /**
   * Modifications that keep the rule's conditions and end forwarding: safe at any time, made with the creates, before
   * the moves.
   */
  earlyModifies: RuleModify[];
  /** The others, after the moves, in an order where no request loses its rule between two modifications. */
  modifies: RuleModify[];
  /**
   * Rules that do not forward (fixed responses, redirects), in rule order: made once every rule that forwards is in
   * place, so that none takes a request a forward rule still to come is to take.
   */
  lateCreates: { priority: number; rule: DesiredRule }[];
  /**
   * Rules that stay but do not forward and move: to their place once every rule that forwards is in place (a second
   * SetRulePriorities call); until then they wait below the others (`moves`).
   */
  lateMoves: RuleMove[];
  /** Rules that do not forward first, then in priority order. */
  deletes: ExistingRule[];
  /** The priority of each desired rule once the plan is applied, in desired order. */
  priorities: number[];
}

/** Pure: what to write to turn `existing` (DescribeRules, default rule included or not) into `desired` (final order). */
export function planRules(desired: readonly DesiredRule[], existing: readonly ExistingRule[]): RulesPlan {
  const plan = planWith(desired, existing, true);
  // A rule that forwards and moves may leave behind a request whose next rule, until a rule modified into new
  // conditions is done, does not forward; and done first, the modification may leave a request to a moved rule not
  // yet in place. With moves, rules change conditions by create-then-delete instead (creates are safe at any time).
  const forwardMoves = plan.moves.some(
    (m) => !plan.deletes.some((d) => d.arn === m.ruleArn) && !plan.lateMoves.some((l) => l.ruleArn === m.ruleArn),
  );
  if (forwardMoves && plan.modifies.some((m) => m.conditionsChange)) return planWith(desired, existing, false);
  return plan;
}

function planWith(
  desired: readonly DesiredRule[],
  existing: readonly ExistingRule[],
  conditionChanges: boolean,
): RulesPlan {
  const current = existing
    .filter((r): r is ExistingRule & { priority: number } => !r.isDefault && typeof r.priority === 'number')
    .sort((a, b) => a.priority - b.priority);
  const matched = matchByContent(desired, current);
  const anchors = longestIncreasing(matched, current);
  const slots: (number | undefined)[] = desired.map((_, i) =>
    anchors.has(i) ? current[matched[i]!]!.priority : undefined,
  );
  const taken = new Set(matched);
  const unwanted = new Set(range(0, current.length).filter((e) => !taken.has(e)));
  const desiredKeys = desired.map((r) => conditionsKey(r.conditions));
  const currentKeys = current.map((r) => conditionsKey(r.conditions));
  const sameConditions = (d: number, e: number) => desiredKeys[d] === currentKeys[e];
  const paired = pairInPlace(current, slots, matched, unwanted, sameConditions, conditionChanges);
  const order = orderModifies(desired, current, paired, sameConditions);
  for (const [i, e] of paired) slots[i] = current[e]!.priority;

  const { priorities, released } = assignPriorities(
    slots,
    current.map((r) => r.priority),
  );
  const plan: RulesPlan = {
    moves: [],
    creates: [],
    earlyModifies: [],
    modifies: [],
    lateCreates: [],
    lateMoves: [],
    deletes: [],
    priorities,
  };
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
      (forwards(rule) ? plan.creates : plan.lateCreates).push({ priority, rule });
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
      conditionsChange: !sameConditions(i, e),
    };
    if (current[e]!.tags) modify.tags = current[e]!.tags;
    (modify.conditionsChange || !forwards(rule) ? plan.modifies : plan.earlyModifies).push(modify);
  }
  plan.deletes = [...deleted]
    .map((e) => current[e]!)
    .sort((a, b) => Number(forwards(a)) - Number(forwards(b)) || a.priority - b.priority);
  // A rule that does not forward moves late (after every rule that forwards is in place), and meanwhile waits below
  // the rest, as one that goes does.
  const late = plan.moves.filter((m) => !forwards(current.find((r) => r.arn === m.ruleArn)!));
  plan.moves = plan.moves.filter((m) => !late.includes(m));
  const leaving = [...plan.deletes, ...current.filter((r) => late.some((m) => m.ruleArn === r.arn))];
  const aside = pushAside(leaving, priorities, current);
  const waiting = new Map(aside.map((a) => [a.ruleArn, a.priority]));
  plan.lateMoves = late.map((m) => ({ ...m, from: waiting.get(m.ruleArn) ?? m.from }));
  plan.moves.push(...aside);
  return plan;
}

/**
 * Rules that do not forward (a fixed response, a redirect) and are going, or moving, go below every rule that stays,
 * in the first SetRulePriorities call: until they are deleted (or moved to their place) they still answer what
 * nothing else takes, but never a request that a rule moved, created or modified on the way is to take. A forward
 * rule that is going may stay where it is: whatever it takes on the way still reaches a target group.
 */
function pushAside(
  leaving: readonly ExistingRule[],
  finals: readonly number[],
  current: readonly (Rule & { priority: number })[],
): RuleMove[] {
  const floor = Math.max(0, ...finals);
  const held = new Set(current.map((r) => r.priority));
  const aside = leaving.filter((r) => !forwards(r) && (r.priority as number) < floor);
  if (aside.length === 0) return [];
  const targets: number[] = [];
  for (let p = RULE_LIMITS.maxPriority; p > floor && targets.length < aside.length; p--) {
    if (!held.has(p)) targets.unshift(p);
  }
  // No room below the last rule that stays (priorities near 50000): they are deleted where they are.
  if (targets.length < aside.length) return [];
  return [...aside]
    .sort((a, b) => (a.priority as number) - (b.priority as number))
    .map((r, k) => ({ ruleArn: r.arn, from: r.priority as number, priority: targets[k]! }));
}

/**
 * For each desired rule, the existing rule (index) that does the same, each used once. Among several that do, the
 * first placed after the rule matched last (in order, so it need not move), else the first.
 */
function matchByContent(desired: readonly DesiredRule[], current: readonly Rule[]): (number | undefined)[] {
  const byKey = new Map<string, number[]>();
  for (const [e, rule] of current.entries()) {
    const key = ruleContentKey(rule);
    byKey.set(key, [...(byKey.get(key) ?? []), e]);
  }
  let last = -1;
  return desired.map((rule) => {
    const candidates = byKey.get(ruleContentKey(rule));
    if (!candidates || candidates.length === 0) return undefined;
    const k = Math.max(
      0,
      candidates.findIndex((e) => e > last),
    );
    const [e] = candidates.splice(k, 1);
    last = e!;
    return e;
  });
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
 * sides, as many as can be, those keeping their conditions first; a rule that does not forward keeps its conditions
 * or is not paired. Answers desired index -> existing index.
 */
function pairInPlace(
  current: readonly Rule[],
  slots: readonly (number | undefined)[],
  matched: readonly (number | undefined)[],
  unwanted: ReadonlySet<number>,
  sameConditions: (d: number, e: number) => boolean,
  conditionChanges: boolean,
): Map<number, number> {
  const pairs = new Map<number, number>();
  let lo = 0;
  let start = 0;
  for (let i = 0; i <= slots.length; i++) {
    if (i < slots.length && slots[i] === undefined) continue;
    const hi = i < slots.length ? slots[i]! : Number.POSITIVE_INFINITY;
    const wanted = range(start, i).filter((d) => matched[d] === undefined);
    const free = [...unwanted].filter(
      (e) => (current[e]!.priority as number) > lo && (current[e]!.priority as number) < hi,
    );
    // A rule that does not forward is not given other conditions: see pushAside.
    const weight = (d: number, e: number) =>
      sameConditions(d, e) ? 2 : conditionChanges && forwards(current[e]!) ? 1 : 0;
    for (const [d, e] of bestPairing(wanted, free, weight)) {
      pairs.set(d, e);
    }
    lo = hi;
    start = i + 1;
  }
  return pairs;
}

/**
 * An order-keeping pairing of two lists with the greatest total weight (a weighted longest common subsequence); a
 * weight of 0 forbids the pair.
 */
function bestPairing(a: readonly number[], b: readonly number[], weight: (x: number, y: number) => number) {
  const best: number[][] = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let x = a.length - 1; x >= 0; x--) {
    for (let y = b.length - 1; y >= 0; y--) {
      const w = weight(a[x]!, b[y]!);
      const pair = w > 0 ? w + best[x + 1]![y + 1]! : 0;
      best[x]![y] = Math.max(best[x + 1]![y]!, best[x]![y + 1]!, pair);
    }
  }
  const out: [number, number][] = [];
  let x = 0;
  let y = 0;
  while (x < a.length && y < b.length) {
    const w = weight(a[x]!, b[y]!);
    if (w > 0 && best[x]![y] === w + best[x + 1]![y + 1]!) out.push([a[x++]!, b[y++]!]);
    else if (best[x]![y] === best[x + 1]![y]) x++;
    else y++;
  }
  return out;
}

/**
 * The modifications in an order where every request keeps a rule. Modifying a rule takes requests from it when its
 * conditions change, and leaves them without a target group when its new action does not forward (and one that does
 * not forward takes what its new conditions match); a request so taken that another modified rule is to forward (its
 * new conditions may match it, and it comes first) must find that one done first, unless that one forwarded it
 * already (same conditions, forwarding before and after). Pairs that would each have to
 * go first are unpaired (their rules created and deleted instead). Answers desired indexes.
 */
function orderModifies(
  desired: readonly DesiredRule[],
  current: readonly Rule[],
  paired: Map<number, number>,
  sameConditions: (d: number, e: number) => boolean,
): number[] {
  // i -> the pairs i must wait for.
  const waitsFor = new Map<number, number[]>();
  for (const [i, ei] of paired) {
    const risky = !sameConditions(i, ei) || !forwards(desired[i]!);
    // A new rule that does not forward also takes requests that a rule before it is to forward.
    const captures = (j: number, ej: number) =>
      !forwards(desired[i]!) &&
      (current[ej]!.priority as number) < (current[ei]!.priority as number) &&
      mayOverlap(desired[i]!.conditions, desired[j]!.conditions);
    const deps = risky
      ? [...paired].filter(
          ([j, ej]) =>
            j !== i &&
            forwards(desired[j]!) &&
            !(sameConditions(j, ej) && forwards(current[ej]!)) &&
            (mayOverlap(current[ei]!.conditions, desired[j]!.conditions) || captures(j, ej)),
        )
      : [];
    waitsFor.set(
      i,
      deps.map(([j]) => j),
    );
  }
  for (;;) {
    // Kahn's algorithm over the pairs still paired.
    const blocking = new Map<number, number>();
    const unblocks = new Map<number, number[]>();
    for (const i of paired.keys()) {
      const deps = waitsFor.get(i)!.filter((j) => paired.has(j));
      blocking.set(i, deps.length);
      for (const j of deps) unblocks.set(j, [...(unblocks.get(j) ?? []), i]);
    }
    const ready = [...paired.keys()].filter((i) => blocking.get(i) === 0);
    const done: number[] = [];
    while (ready.length > 0) {
      const j = ready.shift()!;
      done.push(j);
      for (const i of unblocks.get(j) ?? []) {
        const left = blocking.get(i)! - 1;
        blocking.set(i, left);
        if (left === 0) ready.push(i);
      }
    }
    if (done.length === paired.size) return done;
    // What is left waits on a cycle: walk back along what it waits for until a pair comes round again, which is
    // on the cycle, and make that one create-then-delete instead.
    const finished = new Set(done);
    const seen = new Set<number>();
    let at = [...paired.keys()].find((i) => !finished.has(i))!;
    while (!seen.has(at)) {
      seen.add(at);
      at = waitsFor.get(at)!.find((j) => paired.has(j) && !finished.has(j))!;
    }
    paired.delete(at);
  }
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, k) => from + k);
}
