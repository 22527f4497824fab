import { beforeEach, describe, expect, it } from 'vitest';
import type { GroupId } from '../../shared/ingress/membership.ts';
import { ALB_CLASS, createIngressWorld, type IngressWorld } from '../../test/helpers/ingress-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { backend, makeIngress, makeService, path, rule } from './model/testing/builders.ts';

let w: IngressWorld;
const SHOP: GroupId = { explicit: true, name: 'shop' };

beforeEach(() => {
  w = createIngressWorld();
  w.addNode(1);
  w.addNode(2);
  w.kube.putService(makeService({ name: 'web' }));
  w.kube.putService(
    makeService({
      name: 'api',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 9090, nodePort: 30090 }],
    }),
  );
});

const member = (name: string, service: string, p: string, extra: Record<string, string> = {}) =>
  w.ingresses.putIngress(
    makeIngress({
      name,
      annotations: { 'group.name': 'shop', scheme: 'internet-facing', ...extra },
      rules: [rule('shop.example.com', path(p, 'Prefix', backend(service, 80)))],
    }),
  );

/** Where a request to the group's one HTTP listener goes: the target group's name, or the fixed response. */
function routeOf(host: string, p: string): string {
  const lb = w.loadBalancers()[0]!;
  const listener = w.elbv2.listenersOf(lb.arn).find((l) => l.port === 80)!;
  const action = w.elbv2.route(listener.arn, { host, path: p }).actions[0]!;
  if (action.type !== 'forward') return action.type === 'fixed-response' ? action.statusCode : action.type;
  const arn = action.targetGroups[0]!.arn;
  return [...w.elbv2.targetGroups.values()].find((g) => g.tg.arn === arn)!.tg.name;
}

describe('an IngressGroup of two Ingresses', () => {
  it('gets one Application Load Balancer: rules in group order, a target group per backend, every member served', async () => {
    member('web', 'web', '/');
    member('api', 'api', '/api');
    await w.converge([SHOP]);

    const lbs = w.loadBalancers();
    expect(lbs).toHaveLength(1);
    expect(lbs[0]!.type).toBe('application');
    expect(lbs[0]!.name).toMatch(/^k8s-shop-[0-9a-f]{10}$/);
    const tags = w.elbv2.loadBalancers.get(lbs[0]!.arn)!.tags;
    expect(tags).toMatchObject({
      'elbv2.k8s.aws/cluster': CLUSTER,
      'ingress.k8s.aws/stack': 'shop',
      'ingress.k8s.aws/resource': 'LoadBalancer',
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
    });
    // api sorts before web: its /api rule comes first, so /api goes to api and everything else to web.
    expect(routeOf('shop.example.com', '/api/v1')).toMatch(/^k8s-default-api-/);
    expect(routeOf('shop.example.com', '/')).toMatch(/^k8s-default-web-/);
    expect(routeOf('other.example.com', '/')).toBe('404');
    // Every target group has every Node on its node port.
    for (const { tg } of w.elbv2.targetGroups.values()) {
      expect(w.elbv2.targetsOf(tg.arn).map((t) => t.target.port)).toEqual([tg.port, tg.port]);
    }
    // Both members name the load balancer, carry the group's finalizer, and were told.
    for (const name of ['web', 'api']) {
      expect(w.hostname(name)).toBe(lbs[0]!.dnsName.toLowerCase());
      expect(w.ingress(name)!.metadata.finalizers).toEqual(['group.ingress.k8s.aws/shop']);
      expect(w.eventsOf(name, 'SuccessfullyReconciled').length).toBeGreaterThan(0);
      expect(w.kube.eventsFor('Ingress', name).filter((e) => e.type === 'Warning')).toEqual([]);
    }
  });

  it('survives a member deletion: its rule and target group go, the other member keeps serving, its finalizer goes last', async () => {
    member('web', 'web', '/');
    member('api', 'api', '/api');
    await w.converge([SHOP]);
    const arn = w.loadBalancers()[0]!.arn;

    w.ingresses.deleteIngress('default', 'api');
    expect(w.ingress('api')?.metadata.deletionTimestamp).toBeDefined();
    await w.converge([SHOP]);

    expect(w.ingress('api')).toBeUndefined();
    expect(w.loadBalancers().map((l) => l.arn)).toEqual([arn]);
    expect(routeOf('shop.example.com', '/api/v1')).toMatch(/^k8s-default-web-/);
    expect([...w.elbv2.targetGroups.values()].map((g) => g.tg.name)).toEqual([
      expect.stringMatching(/^k8s-default-web-/),
    ]);
    expect(w.hostname('web')).toBe(w.loadBalancers()[0]!.dnsName.toLowerCase());
  });

  it('with no member left, everything its stack owns is deleted, then the last finalizer', async () => {
    member('web', 'web', '/');
    await w.converge([SHOP]);
    const frontend = [...w.ec2.securityGroups.values()].find((g) => g.tags['ingress.k8s.aws/stack'] === 'shop');
    expect(frontend?.groupName).toMatch(/^k8s-shop-[0-9a-f]{10}$/);

    w.ingresses.deleteIngress('default', 'web');
    await w.converge([SHOP]);

    expect(w.ingress('web')).toBeUndefined();
    expect(w.loadBalancers()).toEqual([]);
    expect(w.elbv2.targetGroups.size).toBe(0);
    expect(w.ec2.securityGroups.has(frontend!.groupId)).toBe(false);
  });

  it('a no-op pass writes nothing', async () => {
    member('web', 'web', '/');
    member('api', 'api', '/api');
    await w.converge([SHOP]);
    w.resetCounters();
    w.ingresses.resetCalls();
    await w.converge([SHOP]);
    expect(w.awsWrites()).toBe(0);
    expect(w.ingresses.writeCount()).toBe(0);
  });
});

describe('a pass with nothing to do', () => {
  it('stops at the load balancer and its tags; a Node joining, or the hour passing, makes the full pass', async () => {
    member('web', 'web', '/');
    await w.converge([SHOP]);
    w.resetCounters();
    await w.converge([SHOP]);
    expect(w.elbv2.callCount('DescribeTargetHealth')).toBe(0);
    expect(w.awsCalls()).toBeLessThanOrEqual(5);
    // Nothing changed, so nothing is said: no Event on every member every resync round.
    expect(w.kube.eventsFor('Ingress', 'web')).toEqual([]);

    // A Node joins: the targets differ from what was applied, so the full pass registers it.
    w.addNode(3);
    await w.converge([SHOP]);
    const [group] = [...w.elbv2.targetGroups.values()];
    expect(w.elbv2.targetsOf(group!.tg.arn)).toHaveLength(3);

    // Someone deletes the rule behind the controller's back: the quick look cannot see it, the hourly full pass does.
    const lb = w.loadBalancers()[0]!;
    const listener = w.elbv2.listenersOf(lb.arn)[0]!;
    const [rule] = (await w.elbv2Port.describeRules(listener.arn)).filter((r) => !r.isDefault);
    await w.elbv2Port.deleteRule(rule!.arn);
    await w.converge([SHOP]);
    expect(routeOf('shop.example.com', '/')).toBe('404');
    w.clock.advance(61 * 60 * 1000);
    await w.converge([SHOP]);
    expect(routeOf('shop.example.com', '/')).toMatch(/^k8s-default-web-/);
  });
});

describe('a member that cannot be built', () => {
  it('keeps the rules it had and gets a Warning; the other members still change', async () => {
    member('web', 'web', '/');
    member('api', 'api', '/api');
    await w.converge([SHOP]);
    // api now names a Service that does not exist; web adds a path.
    member('api', 'missing', '/api');
    w.ingresses.putIngress(
      makeIngress({
        name: 'web',
        annotations: { 'group.name': 'shop', scheme: 'internet-facing' },
        rules: [
          rule('shop.example.com', path('/web', 'Prefix', backend('web', 80)), path('/', 'Prefix', backend('web', 80))),
        ],
      }),
    );
    await w.converge([SHOP]);

    expect(routeOf('shop.example.com', '/api/v1')).toMatch(/^k8s-default-api-/);
    expect(routeOf('shop.example.com', '/web/x')).toMatch(/^k8s-default-web-/);
    expect(w.eventsOf('api', 'FailedBuildModel').join('\n')).toMatch(/missing/);
  });
});

describe('a kept member alone on its port', () => {
  it('keeps its listener and the rules on it', async () => {
    member('web', 'web', '/');
    member('api', 'api', '/api', { 'listen-ports': '[{"HTTP": 8080}]' });
    await w.converge([SHOP]);
    const lb = w.loadBalancers()[0]!;
    expect(
      w.elbv2
        .listenersOf(lb.arn)
        .map((l) => l.port)
        .sort(),
    ).toEqual([80, 8080]);
    member('api', 'missing', '/api', { 'listen-ports': '[{"HTTP": 8080}]' });
    await w.converge([SHOP]);
    const listener = w.elbv2.listenersOf(lb.arn).find((l) => l.port === 8080);
    expect(listener).toBeDefined();
    const action = w.elbv2.route(listener!.arn, { host: 'shop.example.com', path: '/api/x' }).actions[0]!;
    expect(action.type).toBe('forward');
    expect(w.eventsOf('api', 'FailedBuildModel').join('\n')).toMatch(/missing/);
  });
});

describe('taking over from the AWS Load Balancer Controller', () => {
  it('adopts the load balancer it made for the group in place: same ARN, same DNS name', async () => {
    member('web', 'web', '/');
    await w.converge([SHOP]);
    const before = w.loadBalancers()[0]!;
    // As the reference left it: its tracking tags only.
    const stored = w.elbv2.loadBalancers.get(before.arn)!;
    for (const key of Object.keys(stored.tags)) {
      if (!/^(elbv2\.k8s\.aws|ingress\.k8s\.aws)\//.test(key)) delete stored.tags[key];
    }
    w.ingresses.putIngressClass(ALB_CLASS);

    await w.converge([SHOP]);

    expect(w.loadBalancers().map((l) => [l.arn, l.dnsName])).toEqual([[before.arn, before.dnsName]]);
    expect(w.elbv2.loadBalancers.get(before.arn)!.tags[`kubernetes.io/cluster/${CLUSTER}`]).toBe('owned');
  });
});
