import { albHealthCheckDefaults } from '../../aws/elbv2-defaults.ts';
import type { Elbv2Port, Listener, RuleAction, RuleCondition } from '../../aws/elbv2-port.ts';
import type { RequestToRoute } from '../../aws/fakes/elbv2/matching.ts';
import { elbv2World, lbInput, tgInput } from '../../aws/fakes/elbv2/testing.ts';
import type { DesiredRule } from '../rules.ts';

/**
 * What the listener rule tests share: an Application Load Balancer with an HTTP listener answering 404 by default and
 * target groups to forward to, in a FakeElbv2 behind the real adapter; a port that records each write and lets the
 * test look at the account after it; requests made from rules' conditions; and a check that no request which had a
 * target group before a change and has one after it is ever left without one in between.
 */

export const NOT_FOUND: RuleAction = { type: 'fixed-response', statusCode: '404', contentType: 'text/plain' };

export const forwardTo = (arn: string, weight = 1): RuleAction => ({
  type: 'forward',
  targetGroups: [{ arn, weight }],
  stickiness: { enabled: false },
});
export const path = (...values: string[]): RuleCondition => ({ field: 'path-pattern', values });
export const host = (...values: string[]): RuleCondition => ({ field: 'host-header', values });
export const desiredRule = (
  conditions: RuleCondition[],
  action: RuleAction,
  tags: Record<string, string> = { owner: 'test' },
): DesiredRule => ({
  conditions,
  actions: [action],
  tags,
});

/** An ALB, `groups` HTTP target groups (`g0`, `g1`...) and an HTTP listener on port 80 answering 404. */
export async function rulesWorld(groups = 4) {
  const world = elbv2World();
  const lb = await world.elb.createLoadBalancer(lbInput({ name: 'alb', type: 'application' }));
  if (lb === 'name-taken') throw new Error('alb is taken');
  const arns: string[] = [];
  for (let i = 0; i < groups; i++) {
    const created = await world.elb.createTargetGroup(
      tgInput({ name: `g${i}`, protocol: 'HTTP', port: 8080, healthCheck: albHealthCheckDefaults() }),
    );
    if (created === 'name-taken') throw new Error(`g${i} is taken`);
    arns.push(created.arn);
  }
  const listener: Listener = await world.elb.createApplicationListener(
    lb.arn,
    { port: 80, protocol: 'HTTP', defaultActions: [NOT_FOUND] },
    {},
  );
  return { ...world, lb, listener, groups: arns };
}

const WRITES = new Set<keyof Elbv2Port>([
  'createRule',
  'modifyRule',
  'deleteRule',
  'setRulePriorities',
  'addTags',
  'removeTags',
  'createApplicationListener',
  'modifyApplicationListener',
  'deleteListener',
  'addListenerCertificates',
  'removeListenerCertificates',
  'modifyListenerAttributes',
]);

/** The port, each write of which is counted by method and followed by `after(method)` once it has answered. */
export function watchWrites(port: Elbv2Port, after: (method: string) => void = () => {}) {
  const writes: string[] = [];
  const watched = new Proxy(port, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (!WRITES.has(key as keyof Elbv2Port)) return value.bind(target);
      return async (...args: unknown[]) => {
        const answer = await value.apply(target, args);
        writes.push(String(key));
        after(String(key));
        return answer;
      };
    },
  });
  return { port: watched, writes };
}

/** A concrete string a `*` / `?` pattern matches. */
function instance(pattern: string, filler: string): string {
  return pattern.replaceAll('*', filler).replaceAll('?', 'q');
}

/**
 * Requests that exercise the rules' conditions: every host value (and a host none names) with every path value
 * (and a path none names), each wildcard filled two ways.
 */
export function probesOf(rules: readonly { conditions: readonly RuleCondition[] }[]): RequestToRoute[] {
  const hosts = new Set(['other.example.net']);
  const paths = new Set(['/', '/elsewhere']);
  for (const rule of rules) {
    for (const c of rule.conditions) {
      if (c.field === 'host-header') for (const v of c.values) for (const f of ['a', 'b.c']) hosts.add(instance(v, f));
      if (c.field === 'path-pattern') for (const v of c.values) for (const f of ['', 'x/y']) paths.add(instance(v, f));
    }
  }
  return [...hosts].flatMap((h) => [...paths].map((p) => ({ host: h, path: p })));
}

/** What each request gets from the listener now: the actions of the rule it matches. */
export type Routes = RuleAction[][];

export function routeAll(
  fake: { route(listenerArn: string, request: RequestToRoute): { actions: RuleAction[] } },
  listenerArn: string,
  probes: readonly RequestToRoute[],
): Routes {
  return probes.map((p) => fake.route(listenerArn, p).actions);
}

/**
 * The requests that a forward rule took before and after a change but that found no forward rule (404 or any other
 * fixed answer) in one of the states between (`steps`: the routes after each write): `[step, request]` for each,
 * empty when none was lost.
 */
export function lostRequests(
  probes: readonly RequestToRoute[],
  before: Routes,
  steps: readonly Routes[],
): [number, RequestToRoute][] {
  const forwarded = (actions: RuleAction[]) => actions.some((a) => a.type === 'forward');
  const after = steps.at(-1) ?? before;
  const kept = probes.flatMap((_, k) => (forwarded(before[k]!) && forwarded(after[k]!) ? [k] : []));
  return steps.flatMap((step, n) =>
    kept.filter((k) => !forwarded(step[k]!)).map((k): [number, RequestToRoute] => [n, probes[k]!]),
  );
}

/**
 * Stricter: the requests that got, in some state between, an answer they got neither before nor after the change
 * (another target group, a fixed answer): `[step, request]` for each.
 */
export function strayRequests(
  probes: readonly RequestToRoute[],
  before: Routes,
  steps: readonly Routes[],
): [number, RequestToRoute][] {
  const after = steps.at(-1) ?? before;
  const same = (a: RuleAction[], b: RuleAction[]) => JSON.stringify(a) === JSON.stringify(b);
  return steps.flatMap((step, n) =>
    probes.flatMap((p, k): [number, RequestToRoute][] =>
      same(step[k]!, before[k]!) || same(step[k]!, after[k]!) ? [] : [[n, p]],
    ),
  );
}

/**
 * A change followed write by write: the port to make it through, and the routes of `probes` before it and after
 * each write.
 */
export function followChange(world: Awaited<ReturnType<typeof rulesWorld>>, probes: readonly RequestToRoute[]) {
  const before = routeAll(world.fake, world.listener.arn, probes);
  const steps: Routes[] = [];
  const { port, writes } = watchWrites(world.elb, () => steps.push(routeAll(world.fake, world.listener.arn, probes)));
  return {
    port,
    writes,
    before,
    steps,
    lost: () => lostRequests(probes, before, steps),
    strays: () => strayRequests(probes, before, steps),
  };
}
