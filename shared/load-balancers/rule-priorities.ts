import { RULE_LIMITS } from '../aws/elbv2-port.ts';

/**
 * Which priority each rule of a listener gets. The scheme leaves gaps, and every priority it hands out is one no
 * rule of the listener holds when the change starts:
 * - A rule that does not move keeps its priority (a no-op writes nothing); one rule added between two others takes
 *   a priority between theirs, so nothing else moves. New rules at the end go 100 apart, and rules placed between
 *   two others are spread evenly over the gap, so later insertions usually find room without moving anything.
 * - A rule that must move goes to a priority nobody holds. SetRulePriorities then never names a priority another
 *   rule holds or leaves in the same call, so one call moves any number of rules at once on AWS (which checks the new
 *   order as a whole) and on emulators that refuse a priority any rule holds at the time of the call (moto, see
 *   docs/emulator-differences.md `elbv2.rule-priorities-swap`). One call means no intermediate state: a request sees
 *   the old order or the new one, never rules half way (as two calls, first to spare priorities, would show).
 * - Where the gap between two rules that stay is too narrow (rules made by the AWS Load Balancer Controller are
 *   numbered 1, 2, 3...), the nearest of those rules are moved too, until the gap is wide enough to spread them out
 *   for next time (SPREAD_SLACK); the top of the range (50000) is always far away, so this ends.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetRulePriorities.html
 */

/** Apart from each other, rules added after the last one. */
export const PRIORITY_STEP = 100;
/**
 * When rules must move to make room, enough move that the crowded stretch has this many free priorities per rule in
 * it (a gap of about 32: five more insertions at one place before another move), if the range allows.
 */
export const SPREAD_SLACK = 32;

const BELOW = RULE_LIMITS.minPriority - 1;
const ABOVE = RULE_LIMITS.maxPriority + 1;

export interface PriorityAssignment {
  /** The priority of each slot, in slot order, strictly increasing. */
  priorities: number[];
  /** Slots that had a priority to keep and could not keep it (no room around it): they move. */
  released: Set<number>;
}

/**
 * Priorities for slots in rule order: a slot with a number keeps it if it can; the others (rules to create or to
 * move) get priorities nobody in `held` has. `held`: every priority the listener's rules hold now.
 */
export function assignPriorities(slots: readonly (number | undefined)[], held: Iterable<number>): PriorityAssignment {
  const free = new FreePriorities(held);
  const released = new Set<number>();
  // Fixed slots must increase; one that does not is moved.
  const kept: number[] = [];
  for (const [i, priority] of slots.entries()) {
    if (priority === undefined) continue;
    const last = kept.at(-1);
    if (last !== undefined && slots[last]! >= priority) released.add(i);
    else kept.push(i);
  }
  const at = (k: number) => (k < 0 ? BELOW : k >= kept.length ? ABOVE : slots[kept[k]!]!);
  const index = (k: number) => (k < 0 ? -1 : k >= kept.length ? slots.length : kept[k]!);
  for (;;) {
    // Segment s lies between kept[s - 1] and kept[s].
    let crowded = -1;
    for (let s = 0; s <= kept.length; s++) {
      if (index(s) - index(s - 1) - 1 > free.between(at(s - 1), at(s))) {
        crowded = s;
        break;
      }
    }
    if (crowded < 0) break;
    const fits = (slack: number) => (l: number, r: number) => {
      const needed = index(crowded + r) - index(crowded - 1 - l) - 1;
      return needed * slack <= free.between(at(crowded - 1 - l), at(crowded + r));
    };
    // Moving one rule or many costs the same call: when some must move, as many move as spreads them out well.
    const [left, right] = widen(crowded, kept.length, fits(SPREAD_SLACK)) ?? widen(crowded, kept.length, fits(1))!;
    const gone = kept.splice(crowded - left, left + right);
    for (const i of gone) released.add(i);
  }
  const priorities: number[] = new Array(slots.length);
  for (let s = 0; s <= kept.length; s++) {
    const from = index(s - 1) + 1;
    const to = index(s);
    const picked = free.spread(at(s - 1), at(s), to - from);
    for (let i = from; i < to; i++) priorities[i] = picked[i - from]!;
    if (s < kept.length) priorities[kept[s]!] = at(s);
  }
  return { priorities, released };
}

/**
 * The fewest fixed slots to give up around a crowded segment (`left` below it, `right` above), upwards first: the
 * top of the range always has room.
 */
function widen(
  segment: number,
  keptCount: number,
  fits: (left: number, right: number) => boolean,
): [number, number] | undefined {
  for (let d = 1; d <= keptCount; d++) {
    for (let right = d; right >= 0; right--) {
      const left = d - right;
      if (left > segment || right > keptCount - segment) continue;
      if (fits(left, right)) return [left, right];
    }
  }
  return fits(segment, keptCount - segment) ? [segment, keptCount - segment] : undefined;
}

/** Priorities 1-50000 not held by any rule. */
class FreePriorities {
  private readonly held: number[];
  private readonly set: Set<number>;

  constructor(held: Iterable<number>) {
    this.set = new Set(held);
    this.held = [...this.set].sort((a, b) => a - b);
  }

  /** How many priorities strictly between `lo` and `hi` nobody holds. */
  between(lo: number, hi: number): number {
    if (hi - lo <= 1) return 0;
    return hi - lo - 1 - (this.countBelow(hi) - this.countBelow(lo + 1));
  }

  /** `k` free priorities strictly between `lo` and `hi`, increasing, spread out (PRIORITY_STEP apart at the top). */
  spread(lo: number, hi: number, k: number): number[] {
    const span = hi === ABOVE ? Math.min(PRIORITY_STEP * (k + 1), hi - lo) : hi - lo;
    const out: number[] = [];
    let previous = lo;
    for (let j = 0; j < k; j++) {
      const ideal = lo + Math.floor((span * (j + 1)) / (k + 1));
      let p = this.nextFree(Math.max(ideal, previous + 1));
      // Keep room for the rest; failing that, the first free one (there is room: the caller checked).
      if (p >= hi || this.between(p, hi) < k - j - 1) p = this.nextFree(previous + 1);
      out.push(p);
      previous = p;
    }
    return out;
  }

  private nextFree(p: number): number {
    let q = p;
    while (this.set.has(q)) q++;
    return q;
  }

  /** How many held priorities are below `p`. */
  private countBelow(p: number): number {
    let lo = 0;
    let hi = this.held.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.held[mid]! < p) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
