import { describe, expect, it } from 'vitest';
import { NO_FAULTS } from './faults.ts';
import type { Step } from './history.ts';
import { instanceOf } from './history.ts';
import { runHistory } from './property.ts';
import { registeredTargets, tgbViolations } from './tgb-observe.ts';
import { endpointAddress, TGB_BINDINGS, TGB_NAMESPACE, TgbTruth } from './tgb-ops.ts';

/**
 * The TargetGroupBinding part of the engine property on fixed histories: an ip binding and an instance binding of
 * target groups Terraform made, the Service's endpoints scaled up and down, Nodes joining and leaving, a binding's
 * port changed, a binding deleted. Calm and under a schedule of every fault kind, each ends with exactly the wanted
 * targets, the deleted binding gone with its targets, the user's target groups kept; the checkers themselves catch
 * a leaked target and a missing one.
 */

const step = (op: Step['op'], pumps = 1): Step => ({ op, gapMs: 2_000, pumps });
const boot = (slot: number): Step[] => [
  step({ op: 'launch', slot, invisibleCalls: 0 }),
  step({ op: 'join', slot, providerId: true, ready: true }),
];
const HISTORY: Step[] = [
  ...boot(0),
  ...boot(1),
  step({ op: 'bindingEndpoints', endpoints: [0, 1] }, 1),
  step({ op: 'binding', b: 0, variant: 0 }, 3),
  step({ op: 'binding', b: 1, variant: 1 }, 3),
  step({ op: 'bindingEndpoints', endpoints: [0, 1, 2, 3] }, 2),
  ...boot(2),
  step({ op: 'leave', slot: 0 }, 2),
  step({ op: 'bindingEndpoints', endpoints: [3] }, 2),
  step({ op: 'binding', b: 0, variant: 2 }, 2),
  step({ op: 'terminate', slot: 1 }, 2),
  step({ op: 'deleteBinding', b: 1 }, 3),
  step({ op: 'bindingEndpoints', endpoints: [1, 3, 4] }, 2),
];

const ids = (slots: number[]) => slots.map((s) => instanceOf(s).instanceId);

describe('TargetGroupBindings in the engine property', () => {
  it('a calm history ends with exactly the wanted targets, the deleted binding gone, the target groups kept', async () => {
    const run = await runHistory(HISTORY, NO_FAULTS);
    expect(run.violations).toEqual([]);
    const c = run.cluster;
    const [ip, instance] = [0, 1].map((b) =>
      [...c.elbv2.targetGroups.values()].find((g) => g.tg.name === TGB_BINDINGS[b]!.group),
    );
    // The ip binding moved to `metrics` (9100) and follows the last scale; the instance binding's group is empty.
    expect(registeredTargets(c, ip!.tg.arn)).toEqual([1, 3, 4].map((k) => `${endpointAddress(k)}:9100`));
    expect(registeredTargets(c, instance!.tg.arn)).toEqual([]);
    expect(c.bindings.bindings.has(`${TGB_NAMESPACE}/web-inst`)).toBe(false);
    const live = c.bindings.bindings.get(`${TGB_NAMESPACE}/web-ip`)!;
    expect(live.status?.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'True' });
  });

  it('the instance binding follows the Nodes: joined ones in, a deleted Node and a terminated instance out', async () => {
    // Up to just before the binding is deleted: slot 0 left, slot 1 terminated, slot 2 joined.
    const run = await runHistory(HISTORY.slice(0, -2), NO_FAULTS);
    expect(run.violations).toEqual([]);
    const c = run.cluster;
    const instance = [...c.elbv2.targetGroups.values()].find((g) => g.tg.name === TGB_BINDINGS[1].group)!;
    expect(registeredTargets(c, instance.tg.arn)).toEqual(ids([2]).map((id) => `${id}:31500`));
  });

  it('under throttles, 5xx, writes that time out, crashes, lost and reordered keys, it ends where the calm run did', async () => {
    const aws = Array.from(
      { length: 300 },
      // Nine long (a pass makes two or three calls): each fault falls on each kind of call by turns.
      (_, i) =>
        (['ok', 'throttle', 'ok', 'ok', 'timeout-after-write', 'ok', '5xx', 'ok', 'crash-after-call'] as const)[i % 9]!,
    );
    const messages = Array.from({ length: 40 }, (_, i) => (['ok', 'duplicate', 'delay', 'drop'] as const)[i % 4]!);
    const calm = await runHistory(HISTORY, NO_FAULTS);
    const faulted = await runHistory(HISTORY, {
      aws,
      messages,
      polls: ['ok', 'lose-response', 'ok'],
      newResourceInvisibleMs: 5_000,
    });
    expect(faulted.violations).toEqual([]);
    // The binding controller's own calls met faults, and some invocation died after a call took effect.
    const targetCalls = faulted.played.filter((p) => /elbv2:(RegisterTargets|DeregisterTargets)/.test(p));
    expect(targetCalls.filter((p) => !p.endsWith(' ok')).length).toBeGreaterThan(0);
    expect(faulted.played.some((p) => p.endsWith('crash-after-call'))).toBe(true);
    expect(faulted.final.targetGroups).toEqual(calm.final.targetGroups);
    expect(faulted.final.bindings).toEqual(calm.final.bindings);
  });

  it('the checkers see a leaked target, a missing one, a deleted binding kept and a target group deleted', async () => {
    const run = await runHistory(HISTORY.slice(0, 8), NO_FAULTS);
    expect(run.violations).toEqual([]);
    const c = run.cluster;
    const truth = new TgbTruth();
    for (const [b, g] of [...c.elbv2.targetGroups.values()].entries()) truth.groups.set(b, g.tg);
    truth.live.set(0, 0);
    truth.live.set(1, 1);
    truth.endpoints = [0, 1, 2, 3];
    expect(tgbViolations(c, truth)).toEqual([]);
    // Endpoint 3 no longer wanted: its target is a leak. Endpoint 4 wanted: missing.
    truth.endpoints = [0, 1, 2, 4];
    expect(tgbViolations(c, truth)).toEqual([
      `binding web-ip: tf-bind-ip misses ${endpointAddress(4)}:8080`,
      `binding web-ip: tf-bind-ip leaks ${endpointAddress(3)}:8080`,
    ]);
    // A deleted binding still there, its targets kept.
    truth.endpoints = [0, 1, 2, 3];
    truth.live.delete(1);
    truth.deleted.add(1);
    const found = tgbViolations(c, truth);
    expect(found).toContainEqual(expect.stringMatching(/^binding web-inst deleted but still there/));
    expect(found).toContainEqual(expect.stringMatching(/^binding web-inst deleted but tf-bind-inst still holds i-/));
    // The user's target group gone.
    c.elbv2.targetGroups.delete(truth.groups.get(0)!.arn);
    expect(tgbViolations(c, truth)).toContainEqual(
      "target group tf-bind-ip of binding web-ip was deleted (it is the user's)",
    );
  });
});
