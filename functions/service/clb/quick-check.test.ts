import { beforeEach, describe, expect, it } from 'vitest';
import { FULL_PASS_ROUNDS, fullPassDue, RESYNC_ROUND_MS } from '../resync-check.ts';
import { type ClassicWorld, createClassicWorld, REFERENCE_NAME, referenceClassic } from '../testing/clb.ts';

/**
 * A resync pass over a Service on a Classic ELB looks at the batch's one DescribeLoadBalancers listing (and
 * the batch's Nodes and instances) first; the full pass only when that differs, or in the Service's hourly slot.
 */

let w: ClassicWorld;
let node1: string;
let round = 0;
const deps = () => ({ ...w.serviceDeps, resyncQuickCheck: true });
const resyncRound = () =>
  w.converge([w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `round-${++round}` })], deps());
const callsBy = () =>
  Object.fromEntries(
    [...w.elbFake.calls.entries(), ...w.elbv2.calls.entries(), ...w.ec2.calls.entries()].filter(([, n]) => n > 0),
  );

function toRoundWhereFullPass(due: boolean) {
  for (let i = 0; i <= FULL_PASS_ROUNDS && fullPassDue('default/web', w.clock.now()) !== due; i++) {
    w.clock.advance(RESYNC_ROUND_MS);
  }
  expect(fullPassDue('default/web', w.clock.now())).toBe(due);
}

beforeEach(async () => {
  w = createClassicWorld();
  node1 = w.addNode(1).instance.instanceId;
  w.addNode(2);
  await referenceClassic(w);
  await w.converge([w.serviceKey('web')]);
  w.resetCounters();
});

describe('a resync pass outside the Service slot', () => {
  it('over an unchanged Service reads the listing and the instances, and writes nothing', async () => {
    toRoundWhereFullPass(false);
    await resyncRound();
    expect(callsBy()).toEqual({ DescribeLoadBalancers: 1, DescribeInstances: 1 });
  });

  it('registers again an instance deregistered out of band in the same round', async () => {
    toRoundWhereFullPass(false);
    await w.elb.deregisterInstances(REFERENCE_NAME, [node1]);
    await resyncRound();
    expect(w.elbFake.describeNamed(REFERENCE_NAME)!.Instances?.map((i) => i.InstanceId)).toContain(node1);
  });
});

it('a changed attribute is put back in the Service slot, not before', async () => {
  toRoundWhereFullPass(false);
  const before = await w.elb.describeAttributes(REFERENCE_NAME);
  await w.elb.modifyAttributes(REFERENCE_NAME, { ...before, idleTimeoutSeconds: before.idleTimeoutSeconds + 7 });
  await resyncRound();
  expect((await w.elb.describeAttributes(REFERENCE_NAME)).idleTimeoutSeconds).toBe(before.idleTimeoutSeconds + 7);
  toRoundWhereFullPass(true);
  await resyncRound();
  expect((await w.elb.describeAttributes(REFERENCE_NAME)).idleTimeoutSeconds).toBe(before.idleTimeoutSeconds);
});
