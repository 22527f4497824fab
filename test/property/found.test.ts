import { describe, expect, it } from 'vitest';
import { NO_FAULTS } from './faults.ts';
import type { Step } from './history.ts';
import { runHistory } from './property.ts';

/**
 * Histories the engine property found, kept as fixed cases. `it.fails` marks one that still fails: a known bug, left
 * for its own fix (the test then flips, and `.fails` comes off).
 */

const step = (op: Step['op'], gapMs: number, pumps: number): Step => ({ op, gapMs, pumps });

describe('histories the engine property found', () => {
  // Found on 2026-12-04 (seed 1533289566): with new resources invisible for 60 s, the Service's target group lacked
  // the one instance (its Node joined without a provider ID, never Ready, stopped last), which the calm run had.
  // Not a controller bug: the history pumps the queue only at its steps, the Service's pass that finally saw its
  // target group came after the stop, and AWS refuses to register a stopped instance (one registered before it
  // stopped stays). So a stopped instance's registration is not compared (observe.ts); everything else still is.
  // (On the way, a target group still unknown after the quick attempts became a retry with backoff instead of an
  // acknowledged failure: functions/service/nlb/backend.ts.)
  it('a Node stopped before the Service’s pass could see its new target group: the same end as the calm run otherwise', async () => {
    const history: Step[] = [
      step({ op: 'launch', slot: 1, invisibleCalls: 0 }, 0, 0),
      step({ op: 'join', slot: 1, providerId: false, ready: false }, 0, 0),
      step({ op: 'bindingEndpoints', endpoints: [] }, 8416, 0),
      step({ op: 'service', svc: 0, variant: 0 }, 11791, 0),
      step({ op: 'cni', on: false }, 13906, 1),
      step({ op: 'spot', slot: 0 }, 19455, 0),
      step({ op: 'bindingEndpoints', endpoints: [] }, 16992, 1),
      step({ op: 'ingress', ing: 0, group: 0, variant: 0 }, 16960, 0),
      step({ op: 'finishPod', pod: 0 }, 5786, 1),
      step({ op: 'ready', slot: 0 }, 16707, 0),
      step({ op: 'scaleDown', slot: 0 }, 13464, 0),
      step({ op: 'ingress', ing: 0, group: 0, variant: 0 }, 10557, 3),
      step({ op: 'deletePod', pod: 0 }, 884, 0),
      step({ op: 'stop', slot: 1 }, 15082, 0),
    ];
    const calm = await runHistory(history, NO_FAULTS);
    const faulted = await runHistory(history, { ...NO_FAULTS, newResourceInvisibleMs: 60_000 });
    const targets = (run: typeof calm) => JSON.stringify(run.final.targetGroups);
    expect(calm.violations).toEqual([]);
    expect(faulted.violations).toEqual([]);
    expect(targets(faulted)).toBe(targets(calm));
  }, 120_000);
});
