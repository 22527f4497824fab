import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { type Cluster, createCluster } from './cluster.ts';
import {
  type AwsFault,
  FaultPlayer,
  type FaultSchedule,
  type MessageFault,
  NO_FAULTS,
  type PollFault,
} from './faults.ts';
import { HistoryPlayer, historyArbitrary, type Step } from './history.ts';
import { ingressViolations, No404Watch } from './ingress-observe.ts';
import { modelViolations, orphans, type Projection, projection, stepViolations } from './observe.ts';
import { tgbViolations } from './tgb-observe.ts';

/**
 * The model-based property over the whole controller: a generated cluster history runs twice, calm and under a
 * generated fault schedule; both settle; the faulted run must end where the calm one did (modulo generated IDs),
 * with every owned AWS resource wanted by someone, nothing in a DLQ, and the step invariants (budgets, addresses,
 * Nodes) holding after every step of both runs.
 */

/** Polls of every queue before a settle gives up: a run that does not settle is a failure too. */
const MAX_SETTLE_POLLS = 3000;
/**
 * Resync rounds while settling: at least MIN_ROUNDS (a Node whose instance EC2 hides for a few more lookups after
 * the young-Node grace is looked at again once a round), until two in a row leave the state as it was.
 */
const MIN_ROUNDS = 5;
const MAX_ROUNDS = 10;
/** Between resync rounds: past SQS's 5-minute deduplication window, the young-Node grace, requeues, cooldowns. */
const ROUND_MS = 6 * 60_000;

export interface RunResult {
  final: Projection;
  violations: string[];
  played: string[];
  /** The cluster as the run left it, for a closer look at a failure. */
  cluster: Cluster;
}

class RunFailure extends Error {}

export async function runHistory(history: readonly Step[], schedule: FaultSchedule): Promise<RunResult> {
  const faults = new FaultPlayer(schedule);
  const c = createCluster(faults, { newResourceInvisibleMs: schedule.newResourceInvisibleMs });
  const player = new HistoryPlayer(c);
  const violations: string[] = [];
  // Every AWS state on the way is looked at (before each ELBv2 call, after each step and poll): no 404 window.
  const no404 = new No404Watch(c, player.ingressTruth);
  const check = (when: string) => {
    player.replaceEvicted();
    no404.look();
    for (const v of stepViolations(c, player.truth)) violations.push(`${when}: ${v}`);
    for (const v of no404.violations.splice(0)) violations.push(`${when}: ${v}`);
    if (violations.length > 0) throw new RunFailure(violations[0]!);
  };

  const drain = async (when: string) => {
    for (let polls = 0; polls < MAX_SETTLE_POLLS; polls++) {
      const handled = await c.pumpOnce();
      check(when);
      if (handled > 0 || c.held() > 0) continue;
      const wait = c.nextVisibleInMs();
      if (wait === undefined) return;
      c.clock.advance(Math.max(wait, 1));
    }
    throw new RunFailure(`${when}: the queues did not drain in ${MAX_SETTLE_POLLS} polls`);
  };

  try {
    for (const [i, step] of history.entries()) {
      await player.apply(step.op);
      no404.wantedChanged();
      check(`step ${i} (${step.op.op})`);
      for (let p = 0; p < step.pumps; p++) {
        await c.pumpOnce();
        check(`step ${i} poll ${p}`);
        c.clock.advance(Math.floor(step.gapMs / step.pumps));
      }
      if (step.pumps === 0) c.clock.advance(step.gapMs);
    }
    await drain('settling');
    let last: Projection | undefined;
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      c.clock.advance(ROUND_MS);
      await c.resyncRound(`round-${round}`);
      await drain(`resync round ${round}`);
      const now = projection(c, player.truth);
      if (round >= MIN_ROUNDS && last && isDeepStrictEqual(now, last)) break;
      if (round === MAX_ROUNDS) violations.push(`still changing after ${MAX_ROUNDS} resync rounds`);
      last = now;
    }
    violations.push(
      ...orphans(c),
      ...modelViolations(c, player.truth),
      ...ingressViolations(c, player.ingressTruth),
      ...tgbViolations(c, player.tgbTruth),
    );
    if (c.dlqDepth() > 0) violations.push(`dead-lettered: ${c.dlqBodies().join('; ')}`);
  } catch (err) {
    if (!(err instanceof RunFailure)) throw err;
    if (!violations.includes(err.message)) violations.push(err.message);
  }
  return { final: projection(c, player.truth), violations, played: faults.played, cluster: c };
}

const awsFault: fc.Arbitrary<AwsFault> = fc.oneof(
  { weight: 70, arbitrary: fc.constant('ok' as const) },
  { weight: 20, arbitrary: fc.constant('throttle' as const) },
  { weight: 5, arbitrary: fc.constant('5xx' as const) },
  { weight: 3, arbitrary: fc.constant('timeout-after-write' as const) },
  { weight: 2, arbitrary: fc.constant('crash-after-call' as const) },
);
const messageFault: fc.Arbitrary<MessageFault> = fc.oneof(
  { weight: 70, arbitrary: fc.constant('ok' as const) },
  { weight: 10, arbitrary: fc.constant('duplicate' as const) },
  { weight: 10, arbitrary: fc.constant('delay' as const) },
  { weight: 10, arbitrary: fc.constant('drop' as const) },
);
const pollFault: fc.Arbitrary<PollFault> = fc.oneof(
  { weight: 95, arbitrary: fc.constant('ok' as const) },
  { weight: 5, arbitrary: fc.constant('lose-response' as const) },
);

export function scheduleArbitrary(size: number): fc.Arbitrary<FaultSchedule> {
  return fc.record({
    aws: fc.array(awsFault, { maxLength: size * 4 }),
    messages: fc.array(messageFault, { maxLength: size }),
    polls: fc.array(pollFault, { maxLength: size }),
    newResourceInvisibleMs: fc.constantFrom(0, 5_000, 60_000),
  });
}

/** Sizes of the generated cases. */
export interface PropertySize {
  maxSteps: number;
  /** Length of the message and poll tapes; the AWS call tape is four times as long. */
  faults: number;
}

export const DEFAULT_SIZE: PropertySize = { maxSteps: 12, faults: 60 };

/** Shows what differs between two projections, key by key. */
function difference(calm: Projection, faulted: Projection): string[] {
  const out: string[] = [];
  for (const key of Object.keys(calm) as (keyof Projection)[]) {
    if (isDeepStrictEqual(calm[key], faulted[key])) continue;
    out.push(`${key}:\n  calm:    ${JSON.stringify(calm[key])}\n  faulted: ${JSON.stringify(faulted[key])}`);
  }
  return out;
}

export function engineProperty(size: PropertySize = DEFAULT_SIZE) {
  return fc.asyncProperty(
    historyArbitrary(size.maxSteps),
    scheduleArbitrary(size.faults),
    async (history, schedule) => {
      const calm = await runHistory(history, NO_FAULTS);
      if (calm.violations.length > 0) throw new Error(`calm run:\n- ${calm.violations.join('\n- ')}`);
      const faulted = await runHistory(history, schedule);
      const problems = [...faulted.violations, ...difference(calm.final, faulted.final)];
      if (problems.length > 0) {
        throw new Error(
          `faulted run:\n- ${problems.join('\n- ')}\nfaults played:\n  ${faulted.played.join('\n  ') || '(none)'}`,
        );
      }
    },
  );
}
