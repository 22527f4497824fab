import { beforeEach, describe, expect, it } from 'vitest';
import { type GroupId, groupKey } from '../../shared/ingress/membership.ts';
import { createIngressWorld, type IngressWorld } from '../../test/helpers/ingress-world.ts';
import { backend, makeIngress, makeService, path, rule } from './model/testing/builders.ts';
import { ingressReconciler } from './reconciler.ts';

/**
 * A group's load balancer replaced (its scheme changed, so its name): checked at every AWS state the passes go
 * through, the load balancer the members' status names routes every path to a backend; the old one goes only
 * after the status moved and the grace passed; nothing of it is left.
 */

let w: IngressWorld;
const SHOP: GroupId = { explicit: true, name: 'shop' };
const HOST = 'shop.example.com';

beforeEach(() => {
  w = createIngressWorld();
  w.addNode(1);
  w.addNode(2);
  w.kube.putService(makeService({ name: 'web' }));
});

function put(scheme: string) {
  w.ingresses.putIngress(
    makeIngress({
      name: 'web',
      annotations: { 'group.name': 'shop', scheme },
      rules: [rule(HOST, path('/', 'Prefix', backend('web', 80)))],
    }),
  );
}

/** What the load balancer the status names does with a request: `forward` or the fixed response's code. */
function servedByStatus(): string {
  const host = w.hostname('web');
  const lb = w.loadBalancers().find((l) => l.dnsName.toLowerCase() === host);
  if (!lb) return 'no load balancer';
  const listener = w.elbv2.listenersOf(lb.arn).find((l) => l.port === 80);
  if (!listener) return 'no listener';
  const action = w.elbv2.route(listener.arn, { host: HOST, path: '/x' }).actions[0]!;
  if (action.type !== 'forward') return action.type;
  const healthy = action.targetGroups.some((g) => w.elbv2.targetsOf(g.arn).some((t) => t.state === 'healthy'));
  return healthy ? 'forward' : 'no healthy target';
}

describe('a scheme change', () => {
  it('builds the successor beside the old load balancer, moves the status once it serves, deletes the old one after the grace', async () => {
    put('internet-facing');
    await w.converge([SHOP]);
    // Let the targets turn healthy.
    for (const { tg } of w.elbv2.targetGroups.values()) await w.elbv2Port.describeTargetHealth(tg.arn);
    const old = w.loadBalancers()[0]!;
    expect(servedByStatus()).toBe('forward');

    const seen: string[] = [];
    w.elbv2.beforeCall = () => seen.push(servedByStatus());
    put('internal');
    await w.converge([SHOP]);
    w.elbv2.beforeCall = undefined;

    expect(seen.length).toBeGreaterThan(5);
    expect([...new Set(seen)]).toEqual(['forward']);
    const [successor] = w.loadBalancers().filter((l) => l.arn !== old.arn);
    expect(successor?.scheme).toBe('internal');
    expect(w.hostname('web')).toBe(successor!.dnsName.toLowerCase());
    // The old one is gone, with its target groups: only the successor's are left.
    expect(w.loadBalancers().map((l) => l.arn)).toEqual([successor!.arn]);
    const groups = [...w.elbv2.targetGroups.values()].map(({ tg }) => w.elbv2.targetGroupNamed(tg.name)!);
    expect(groups.length).toBeGreaterThan(0);
    expect(groups.every((g) => g.loadBalancerArns.includes(successor!.arn))).toBe(true);
    expect(w.eventsOf('web', 'ReplacingLoadBalancer').length).toBeGreaterThan(0);
    expect(w.elbv2.loadBalancers.get(successor!.arn)!.tags['serverless-ccm/replaces']).toBeUndefined();
  });

  it('keeps the old load balancer through the grace after the status moved', async () => {
    put('internet-facing');
    await w.converge([SHOP]);
    const old = w.loadBalancers()[0]!;
    put('internal');
    // One pass at a time, straight to the reconciler, the clock moving as the requeues ask.
    const pass = async () => {
      const result = await ingressReconciler.reconcile(groupKey(SHOP), w.ingressDeps, undefined, {
        hints: [],
        payloads: [],
        receiveCount: 1,
      });
      for (const { tg } of w.elbv2.targetGroups.values()) await w.elbv2Port.describeTargetHealth(tg.arn);
      return result?.requeueAfterSeconds;
    };
    let moved = false;
    for (let i = 0; i < 20 && !moved; i++) {
      w.clock.advance(((await pass()) ?? 30) * 1000);
      moved = w.hostname('web') !== old.dnsName.toLowerCase();
    }
    expect(moved).toBe(true);
    const graceMs = w.ingressDeps.replacementGraceSeconds * 1000;
    const movedAt = Date.parse(w.elbv2.loadBalancers.get(old.arn)!.tags['serverless-ccm/replaced-at']!);
    // Passes during the grace keep it.
    w.clock.set(movedAt + graceMs - 1000);
    await pass();
    expect(w.loadBalancers().some((l) => l.arn === old.arn)).toBe(true);
    expect(w.hostname('web')).not.toBe(old.dnsName.toLowerCase());
    // The first pass after it deletes it.
    w.clock.set(movedAt + graceMs + 1000);
    await pass();
    expect(w.loadBalancers().some((l) => l.arn === old.arn)).toBe(false);
  });
});
