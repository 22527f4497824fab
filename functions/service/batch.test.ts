import { beforeEach, describe, expect, it } from 'vitest';
import { createServiceWorld, type ServiceWorld, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { ServiceBatch } from './batch.ts';

/** What the Services of one batch read together: here, the target groups each load balancer forwards to. */

let w: ServiceWorld;
const names = Array.from({ length: 10 }, (_, i) => `web-${i}`);
const keys = (of: readonly string[]) => of.map((name) => ({ namespace: 'default', name }));

beforeEach(async () => {
  w = createServiceWorld();
  w.addNode(1);
  for (const name of names) w.putService(name, { ports: WEB_PORTS });
  await w.converge(names.map((name) => w.serviceKey(name)));
  expect(w.elbv2.loadBalancers.size).toBe(10);
  w.resetCounters();
});

async function groupsByLoadBalancer(batch: ServiceBatch) {
  const lbs = [...(await batch.loadBalancers()).values()];
  const out = new Map<string, string[]>();
  for (const lb of lbs) out.set(lb.name, (await batch.targetGroupsOf(lb.arn)).map((g) => g.name).sort());
  return out;
}

describe('ServiceBatch.targetGroupsOf', () => {
  it('a full batch lists the target groups once, and finds for each load balancer what asking for it finds', async () => {
    const shared = await groupsByLoadBalancer(new ServiceBatch(w.serviceDeps, keys(names)));
    expect(w.elbv2.calls.get('DescribeTargetGroups')).toBe(1);

    const alone = new Map<string, string[]>();
    for (const lb of w.elbv2.loadBalancers.values()) {
      const groups = await w.serviceDeps.elbv2.describeTargetGroupsOfLoadBalancer(lb.lb.arn);
      alone.set(lb.lb.name, groups.map((g) => g.name).sort());
    }
    expect(shared).toEqual(alone);
    expect([...shared.values()].every((groups) => groups.length === 2)).toBe(true);
  });

  it('a batch of one Service asks for its load balancer alone', async () => {
    const batch = new ServiceBatch(w.serviceDeps, keys(['web-0']));
    const lb = [...(await batch.loadBalancers()).values()][0]!;
    expect(await batch.targetGroupsOf(lb.arn)).toHaveLength(2);
    await batch.targetGroupsOf(lb.arn);
    expect(w.elbv2.calls.get('DescribeTargetGroups')).toBe(2);
  });

  it('a load balancer no target group serves has none', async () => {
    const batch = new ServiceBatch(w.serviceDeps, keys(names));
    expect(
      await batch.targetGroupsOf('arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/x/1'),
    ).toEqual([]);
  });
});
