import { describe, expect, it } from 'vitest';
import { TAG } from '../../functions/ingress/apply/tags.ts';
import { NO_FAULTS } from './faults.ts';
import type { Step } from './history.ts';
import { ingressViolations, No404Watch } from './ingress-observe.ts';
import { IngressTruth } from './ingress-ops.ts';
import { runHistory } from './property.ts';

/**
 * The Ingress part of the engine property on fixed histories: an Ingress created in one group, changed, moved to
 * another, a second member joining then deleted. Calm and under a schedule of every fault kind, each ends served,
 * with no stack of a group left empty, and no 404 window on the way; the checkers themselves catch a leak and a lost
 * path.
 */

const step = (op: Step['op'], pumps = 1): Step => ({ op, gapMs: 2_000, pumps });
const boot: Step[] = [
  step({ op: 'launch', slot: 0, invisibleCalls: 0 }),
  step({ op: 'join', slot: 0, providerId: true, ready: true }),
];
const HISTORY: Step[] = [
  ...boot,
  step({ op: 'ingress', ing: 0, group: 0, variant: 0 }, 3),
  step({ op: 'ingress', ing: 1, group: 0, variant: 2 }, 3),
  step({ op: 'ingress', ing: 0, group: 0, variant: 2 }, 3),
  step({ op: 'ingress', ing: 2, group: 2, variant: 1 }, 2),
  step({ op: 'ingress', ing: 0, group: 1, variant: 1 }, 3),
  step({ op: 'deleteIngress', ing: 1 }, 3),
  step({ op: 'ingress', ing: 2, group: 1, variant: 0 }, 2),
];

describe('Ingress groups in the engine property', () => {
  it('a calm history ends with every live Ingress served by its group, nothing leaked, the deleted one gone', async () => {
    const run = await runHistory(HISTORY, NO_FAULTS);
    expect(run.violations).toEqual([]);
    const c = run.cluster;
    // g-one lost its members (ia moved, ib deleted, ic moved): its stack is gone; g-two serves ia and ic.
    const stacks = [...c.elbv2.loadBalancers.values()].map((l) => l.tags[TAG.stack]).filter(Boolean);
    expect(stacks).toEqual(['g-two']);
    expect(c.ingresses.ingresses.has('front/ib')).toBe(false);
    const hostnames = ['ia', 'ic'].map((n) => c.ingresses.ingresses.get(`front/${n}`)?.status?.loadBalancer?.ingress);
    expect(hostnames[0]).toEqual(hostnames[1]);
    expect(hostnames[0]).toHaveLength(1);
  });

  it('under throttles, 5xx, writes that time out, crashes, lost and reordered keys, it ends where the calm run did', async () => {
    const aws = Array.from(
      { length: 240 },
      (_, i) =>
        (['ok', 'throttle', 'ok', 'timeout-after-write', 'ok', '5xx', 'ok', 'crash-after-call'] as const)[i % 8]!,
    );
    const messages = Array.from({ length: 40 }, (_, i) => (['ok', 'duplicate', 'delay', 'drop'] as const)[i % 4]!);
    // Without Nodes, so that the tape's faults fall on the Ingress controller's calls.
    const ingressOnly = HISTORY.slice(boot.length);
    const calm = await runHistory(ingressOnly, NO_FAULTS);
    const faulted = await runHistory(ingressOnly, {
      aws,
      messages,
      polls: ['ok', 'lose-response', 'ok'],
      newResourceInvisibleMs: 5_000,
    });
    expect(faulted.violations).toEqual([]);
    // The ALBs' own calls met faults, and some invocation died after a call took effect.
    expect(faulted.played.filter((p) => p.includes('elbv2:')).length).toBeGreaterThan(5);
    expect(faulted.played.some((p) => p.endsWith('crash-after-call'))).toBe(true);
    expect(faulted.final.loadBalancers).toEqual(calm.final.loadBalancers);
    expect(faulted.final.targetGroups).toEqual(calm.final.targetGroups);
  });

  it('the checkers see a leaked target group and a path no longer routed', async () => {
    const run = await runHistory(HISTORY.slice(0, 4), NO_FAULTS);
    expect(run.violations).toEqual([]);
    const c = run.cluster;
    const truth = new IngressTruth();
    truth.live.set(0, { group: 0, variant: 0 });
    truth.live.set(1, { group: 0, variant: 2 });
    expect(ingressViolations(c, truth)).toEqual([]);
    // A stack with no live member: its target groups are a leak.
    truth.live.clear();
    truth.deleted.add(2);
    const found = ingressViolations(c, truth);
    expect(found.some((v) => /^ALB k8s-gone-.* of g-one leaked$/.test(v))).toBe(true);
    expect(found.some((v) => /^target group .* of g-one leaked$/.test(v))).toBe(true);
    // A rule deleted behind the controller's back: the path now gets the 404.
    truth.live.set(0, { group: 0, variant: 0 });
    truth.deleted.clear();
    const rule = [...c.elbv2.rules.values()].find((r) => JSON.stringify(r).includes('/ia/x'))!;
    c.elbv2.rules.delete(rule.arn);
    expect(ingressViolations(c, truth)).toEqual([expect.stringMatching(/^Ingress ia: \/ia\/x on g-one goes to a 404/)]);
  });

  it('the no-404 watch sees a served path stop being served while wanted, and not once it is no longer wanted', async () => {
    const run = await runHistory(HISTORY.slice(0, 4), NO_FAULTS);
    const c = run.cluster;
    const truth = new IngressTruth();
    truth.live.set(0, { group: 0, variant: 0 });
    truth.live.set(1, { group: 0, variant: 2 });
    const watch = new No404Watch(c, truth);
    watch.look();
    const rule = (p: string) => [...c.elbv2.rules.values()].find((r) => JSON.stringify(r).includes(p))!;
    // /ib/y leaves the group's wants, then its rule goes: no window.
    truth.live.set(1, { group: 0, variant: 0 });
    watch.wantedChanged();
    c.elbv2.rules.delete(rule('/ib/y').arn);
    watch.look();
    expect(watch.violations).toEqual([]);
    // /ia/x is still wanted when its rule goes: a window, seen at the next ELBv2 call.
    c.elbv2.rules.delete(rule('/ia/x').arn);
    c.elbv2.beforeCall?.('DescribeLoadBalancers');
    expect(watch.violations).toEqual([expect.stringMatching(/^404 window: \/ia\/x on g-one served, then not/)]);
  });
});
