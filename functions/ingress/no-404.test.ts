import { beforeEach, describe, expect, it } from 'vitest';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { createIngressWorld, type IngressWorld } from '../../test/helpers/ingress-world.ts';
import { backend, makeIngress, makeService, path, rule } from './model/testing/builders.ts';

/**
 * No request sees a 404 while a group changes: at every AWS state between the first and the last write of a pass,
 * every probe request that reached a backend before the change and reaches one after it reaches one. The fake ELBv2
 * is asked where each probe goes before each call of the pass (so after each write) and at the end.
 */

let w: IngressWorld;
const SHOP: GroupId = { explicit: true, name: 'shop' };
const HOST = 'shop.example.com';
const PROBES = ['/', '/api', '/api/v1', '/cart', '/cart/x', '/admin', '/web', '/static/a.css', '/b', '/c/d'];

beforeEach(() => {
  w = createIngressWorld();
  w.addNode(1);
  for (const name of ['web', 'api', 'cart', 'admin', 'static']) w.kube.putService(makeService({ name }));
});

function put(name: string, paths: [string, string][], extra: Record<string, string> = {}) {
  w.ingresses.putIngress(
    makeIngress({
      name,
      annotations: { 'group.name': 'shop', ...extra },
      rules: [rule(HOST, ...paths.map(([p, svc]) => path(p, 'Prefix', backend(svc, 80))))],
    }),
  );
}

/** Where each probe goes: a target group's name, or `none` for a fixed response. */
function routes(): Map<string, string> {
  const out = new Map<string, string>();
  const lb = w.loadBalancers()[0];
  const listener = lb ? w.elbv2.listenersOf(lb.arn).find((l) => l.port === 80) : undefined;
  for (const probe of PROBES) {
    if (!listener) {
      out.set(probe, 'none');
      continue;
    }
    const action = w.elbv2.route(listener.arn, { host: HOST, path: probe }).actions[0]!;
    out.set(probe, action.type === 'forward' ? action.targetGroups.map((g) => g.arn).join(',') : 'none');
  }
  return out;
}

/** Runs the change, recording where every probe goes at every state the pass goes through. */
async function during(
  change: () => void,
): Promise<{ states: Map<string, string>[]; before: Map<string, string>; after: Map<string, string> }> {
  const before = routes();
  const states: Map<string, string>[] = [];
  w.elbv2.beforeCall = () => {
    if (w.loadBalancers().length > 0) states.push(routes());
  };
  change();
  await w.converge([SHOP]);
  w.elbv2.beforeCall = undefined;
  const after = routes();
  return { states, before, after };
}

function expectNo404(result: Awaited<ReturnType<typeof during>>) {
  const served = PROBES.filter((p) => result.before.get(p) !== 'none' && result.after.get(p) !== 'none');
  expect(served.length).toBeGreaterThan(0);
  // The pass went through states of its own (writes), each one looked at.
  expect(result.states.length).toBeGreaterThan(1);
  for (const [i, state] of result.states.entries()) {
    for (const probe of served)
      expect({ state: i, probe, to: state.get(probe) }).not.toEqual({ state: i, probe, to: 'none' });
  }
}

describe('no request sees a 404 during a change', () => {
  beforeEach(async () => {
    put('z-web', [['/web', 'web']]);
    put('b-api', [['/api', 'api']]);
    put('c-cart', [['/cart', 'cart']]);
    await w.converge([SHOP]);
  });

  it('adding a path in the middle of the group', async () => {
    const result = await during(() =>
      put('b-api', [
        ['/api', 'api'],
        ['/admin', 'admin'],
      ]),
    );
    expect(result.after.get('/admin')).not.toBe(result.before.get('/admin'));
    expectNo404(result);
  });

  it('removing a path', async () => {
    const result = await during(() => put('b-api', [['/admin', 'admin']]));
    expectNo404(result);
  });

  it('reordering members (group.order)', async () => {
    const result = await during(() => put('c-cart', [['/cart', 'cart']], { 'group.order': '-5' }));
    expectNo404(result);
  });

  it('switching a backend to another Service', async () => {
    const result = await during(() => put('b-api', [['/api', 'static']]));
    expect(result.after.get('/api/v1')).not.toBe(result.before.get('/api/v1'));
    expectNo404(result);
  });

  it('a path moving from one member to another', async () => {
    const result = await during(() => {
      put('b-api', [['/admin', 'admin']]);
      put('c-cart', [
        ['/cart', 'cart'],
        ['/api', 'static'],
      ]);
    });
    expect(result.after.get('/api/v1')).not.toBe(result.before.get('/api/v1'));
    expectNo404(result);
  });

  it('a member leaving the group while the others stay', async () => {
    const result = await during(() => w.ingresses.deleteIngress('default', 'c-cart'));
    expectNo404(result);
  });
});
