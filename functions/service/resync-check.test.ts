import { beforeEach, describe, expect, it } from 'vitest';
import type { KeyHint } from '../../shared/queue/message.ts';
import { createServiceWorld, type ServiceWorld, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { FULL_PASS_ROUNDS, fullPassDue, fullPassSlot, quickCheckAllowed, RESYNC_ROUND_MS } from './resync-check.ts';

/**
 * A resync pass over a Service looks quickly first (the load balancer and its tags, read for the whole batch,
 * and the target groups its listeners forward to) and does the full pass only when that differs from the
 * model, or in the Service's hourly slot. Event-driven passes are always full.
 */

let w: ServiceWorld;
let round = 0;
const KEY = 'default/web';
const deps = () => ({ ...w.serviceDeps, resyncQuickCheck: true });
const resyncRound = () =>
  w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `round-${++round}` })], deps());
const onlyLb = () => [...w.elbv2.loadBalancers.values()][0]!.lb;
const callsBy = () =>
  Object.fromEntries([...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(([, n]) => n > 0));

/** Moves the clock a round at a time until the Service's full pass is (or is not) due. */
function toRoundWhereFullPass(due: boolean) {
  for (let i = 0; i <= FULL_PASS_ROUNDS && fullPassDue(KEY, w.clock.now()) !== due; i++) {
    w.clock.advance(RESYNC_ROUND_MS);
  }
  expect(fullPassDue(KEY, w.clock.now())).toBe(due);
}

beforeEach(async () => {
  w = createServiceWorld();
  w.addNode(1);
  w.addNode(2);
  w.putService('web', {
    ports: WEB_PORTS,
  });
  await w.converge([w.serviceKey('web')]);
  expect(w.elbv2.loadBalancers.size).toBe(1);
  w.resetCounters();
});

describe('a resync pass outside the Service slot', () => {
  it('over an unchanged Service makes only the quick reads, and no write', async () => {
    toRoundWhereFullPass(false);
    await resyncRound();
    expect(callsBy()).toEqual({ DescribeLoadBalancers: 1, DescribeTags: 1, DescribeTargetGroups: 1 });
  });

  it('puts back a listener deleted out of band in the same round', async () => {
    toRoundWhereFullPass(false);
    const http = w.elbv2.listenersOf(onlyLb().arn).find((l) => l.port === 80)!;
    await w.elbv2Port.deleteListener(http.arn);
    await resyncRound();
    expect(
      w.elbv2
        .listenersOf(onlyLb().arn)
        .map((l) => l.port)
        .sort(),
    ).toEqual([443, 80]);
  });

  it('makes again a load balancer deleted out of band in the same round', async () => {
    toRoundWhereFullPass(false);
    await w.elbv2Port.deleteLoadBalancer(onlyLb().arn);
    expect(w.elbv2.loadBalancers.size).toBe(0);
    await resyncRound();
    expect(w.elbv2.loadBalancers.size).toBe(1);
    expect(w.elbv2.listenersOf(onlyLb().arn)).toHaveLength(2);
  });

  it('puts back a changed health check in the same round', async () => {
    toRoundWhereFullPass(false);
    const group = [...w.elbv2.targetGroups.values()][0]!.tg;
    await w.elbv2Port.modifyTargetGroupHealthCheck(group.arn, { ...group.healthCheck, intervalSeconds: 30 });
    await resyncRound();
    expect(w.elbv2.targetGroupNamed(group.name)!.healthCheck).toEqual(group.healthCheck);
  });
});

describe('what only the full pass sees', () => {
  it('a changed attribute is put back in the Service slot, not before', async () => {
    toRoundWhereFullPass(false);
    const lb = onlyLb();
    await w.elbv2Port.modifyLoadBalancerAttributes(lb.arn, { 'deletion_protection.enabled': 'true' });
    await resyncRound();
    expect(w.elbv2.attributesOf(lb.arn)?.['deletion_protection.enabled']).toBe('true');

    toRoundWhereFullPass(true);
    await resyncRound();
    expect(w.elbv2.attributesOf(lb.arn)?.['deletion_protection.enabled']).toBe('false');
  });

  it('an event-driven pass is always the full pass', async () => {
    toRoundWhereFullPass(false);
    const lb = onlyLb();
    await w.elbv2Port.modifyLoadBalancerAttributes(lb.arn, { 'deletion_protection.enabled': 'true' });
    w.resetCounters();
    await w.converge([w.serviceKey('web', 'default', { eventType: 'MODIFIED', resourceVersion: '99' })], deps());
    expect(w.elbv2.attributesOf(lb.arn)?.['deletion_protection.enabled']).toBe('false');
    expect(w.elbv2.callCount('DescribeTargetHealth')).toBe(2);
  });
});

describe('cadence', () => {
  const resync: KeyHint[] = [{ eventType: 'RESYNC', eventId: 'r' }];
  const notDue = (key: string) => (fullPassSlot(key) + 6) * RESYNC_ROUND_MS;

  it.each([
    ['a resync alone, first delivery', resync, 1, true],
    ['a retry or requeue', resync, 2, false],
    ['a Service event besides the resync', [...resync, { eventType: 'MODIFIED' as const }], 1, false],
    ['no hint', [], 1, false],
  ])('%s', (_, hints, receiveCount, expected) => {
    expect(quickCheckAllowed(hints, receiveCount, KEY, notDue(KEY))).toBe(expected);
  });

  it('every Service is due in its slot of each hour, the slots spread over the hour', () => {
    const keys = Array.from({ length: 240 }, (_, i) => `default/web-${i}`);
    for (const key of keys.slice(0, 20)) {
      const due = Array.from({ length: 3 * FULL_PASS_ROUNDS }, (_, r) =>
        fullPassDue(key, r * RESYNC_ROUND_MS + 90_000),
      );
      expect(due.filter(Boolean)).toHaveLength(3);
    }
    const perSlot = new Map<number, number>();
    for (const key of keys) perSlot.set(fullPassSlot(key), (perSlot.get(fullPassSlot(key)) ?? 0) + 1);
    expect(perSlot.size).toBe(FULL_PASS_ROUNDS);
    for (const n of perSlot.values()) expect(n).toBeGreaterThan(5);
  });

  it('a round delivered up to a minute late still finds the Service due', () => {
    const start = fullPassSlot(KEY) * RESYNC_ROUND_MS;
    expect(fullPassDue(KEY, start + RESYNC_ROUND_MS + 50_000)).toBe(true);
    expect(fullPassDue(KEY, start + RESYNC_ROUND_MS + 70_000)).toBe(false);
  });
});
