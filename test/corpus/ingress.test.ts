import { describe, expect, it } from 'vitest';
import { TAG } from '../../functions/ingress/apply/tags.ts';
import {
  backend,
  makeIngress,
  makeParams,
  makeService,
  path,
  rule,
} from '../../functions/ingress/model/testing/builders.ts';
import { clusterTagKey } from '../../shared/aws/ownership.ts';
import type { GroupId } from '../../shared/ingress/membership.ts';
import type { IngressClassParams } from '../../shared/k8s/ingress-types.ts';
import { createIngressWorld, INGRESS_QUEUE, type IngressWorld } from '../helpers/ingress-world.ts';
import { CLUSTER } from '../helpers/world.ts';
import {
  BAD_INGRESS_ANNOTATIONS,
  BAD_INGRESS_CLASS_PARAMS,
  type BadIngress,
  REFUSED_INGRESS_CLASS_PARAMS,
  TOLERATED_INGRESS_ANNOTATIONS,
} from './inputs.ts';

/**
 * Ingresses with bad annotations and IngressClassParams with bad fields, each as one member of a group whose other
 * member is good: the bad one gets a Warning Event naming the annotation or field, nothing crashes or dead-letters,
 * everything made carries the ownership tags, and the good member is applied and served.
 */

const SHOP: GroupId = { explicit: true, name: 'shop' };
const HOST = 'shop.example.com';
const WARNINGS = ['FailedBuildModel', 'UnsupportedAnnotation', 'FailedLoadGroupID'];

function world(): IngressWorld & { seededGroups: Set<string> } {
  const w = createIngressWorld();
  w.addNode(1);
  w.kube.putService(makeService({ name: 'web' }));
  w.ingresses.putIngress(
    makeIngress({ name: 'good', annotations: { 'group.name': 'shop' }, rules: [rule(HOST, path('/good', 'Prefix'))] }),
  );
  return Object.assign(w, { seededGroups: new Set(w.ec2.securityGroups.keys()) });
}

function putBad(w: IngressWorld, bad: BadIngress, extra: { className?: string } = {}) {
  const to = bad.backend ?? { service: 'web', port: 80 };
  w.ingresses.putIngress(
    makeIngress({
      name: 'bad',
      ...extra,
      annotations: { 'group.name': 'shop', ...bad.annotations },
      rules: [rule(HOST, path('/bad', 'Prefix', backend(to.service, to.port)))],
    }),
  );
}

/** Where a request to the group's ALB goes: a target group's resource tag, or the fixed response's status. */
function routeOf(w: IngressWorld, p: string, headers: Record<string, string> = {}): string | undefined {
  const lb = w.loadBalancers()[0];
  const listener = lb && w.elbv2.listenersOf(lb.arn).find((l) => l.port === 80);
  if (!listener) return undefined;
  const action = w.elbv2.route(listener.arn, { host: HOST, path: p, headers }).actions[0]!;
  if (action.type !== 'forward') return action.type === 'fixed-response' ? action.statusCode : action.type;
  const arn = action.targetGroups[0]!.arn;
  return [...w.elbv2.targetGroups.values()].find((g) => g.tg.arn === arn)?.tags[TAG.resource];
}

function expectSurvivedAndGoodServed(w: IngressWorld & { seededGroups: Set<string> }) {
  expect(w.sqs.depth(INGRESS_QUEUE) + w.sqs.depth('ingress-dlq.fifo')).toBe(0);
  expect(w.hostname('good')).toBe(w.loadBalancers()[0]?.dnsName.toLowerCase());
  expect(routeOf(w, '/good')).toBe('default/good-web:80');
  const owned = { [TAG.cluster]: CLUSTER, [TAG.stack]: 'shop' };
  for (const { tags } of w.elbv2.loadBalancers.values()) expect(tags).toMatchObject(owned);
  for (const { tags } of w.elbv2.targetGroups.values()) expect(tags).toMatchObject(owned);
  for (const g of w.ec2.securityGroups.values()) {
    if (!w.seededGroups.has(g.groupId)) expect(g.tags[clusterTagKey(CLUSTER)]).toBe('owned');
  }
}

/** The IngressClass `alb-broken`, naming the IngressClassParams `broken`. */
function useBrokenClass(w: IngressWorld) {
  w.ingresses.putIngressClass({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: 'alb-broken' },
    spec: {
      controller: 'ingress.k8s.aws/alb',
      parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: 'broken' },
    },
  });
}

const warningsOf = (w: IngressWorld, name: string) =>
  w.kube.eventsFor('Ingress', name).filter((e) => e.type === 'Warning');

describe('an Ingress with bad annotations in a group with a good one', () => {
  it.each(BAD_INGRESS_ANNOTATIONS)('%s: a Warning Event naming it, the good member served', async (_label, bad) => {
    const w = world();
    putBad(w, bad);
    await w.converge([SHOP]);

    expectSurvivedAndGoodServed(w);
    const warnings = warningsOf(w, 'bad');
    expect(warnings.map((e) => e.reason).filter((r) => !WARNINGS.includes(r))).toEqual([]);
    expect(warnings.map((e) => e.message).join('\n')).toContain(bad.names);
    expect(warningsOf(w, 'good')).toEqual([]);
  });

  it.each(TOLERATED_INGRESS_ANNOTATIONS)('%s: accepted, no warning, served', async (_label, odd) => {
    const w = world();
    putBad(w, odd);
    await w.converge([SHOP]);

    expectSurvivedAndGoodServed(w);
    expect(warningsOf(w, 'bad').map((e) => `${e.reason}: ${e.message}`)).toEqual([]);
    // The PascalCase condition is the header X-Shop: yes, and it holds.
    expect(routeOf(w, '/bad', { 'X-Shop': 'yes' })).toBe('default/bad-web:80');
    if (!odd.backend) expect(routeOf(w, '/bad')).toBe('404');
  });

  // BUG (functions/ingress, relay): an Ingress whose group.name is invalid gets no Warning Event at all. The relay's
  // IngressRouting.resolve sets no group and sends no key, the resync's ingressGroupKeys skips it, and the pass of
  // its implicit group finds no member; so EVENT.failedGroup ('FailedLoadGroupID', functions/ingress/kube.ts) is
  // never recorded, where the reference records it on the Ingress.
  it('group.name that is not a valid name: the Ingress is told; the group it named is untouched', async () => {
    const w = world();
    putBad(w, { annotations: { 'group.name': 'Not_Valid!' }, names: 'group.name' });
    await w.converge([SHOP, { explicit: false, namespace: 'default', name: 'bad' }]);

    expectSurvivedAndGoodServed(w);
    const warnings = warningsOf(w, 'bad');
    expect(warnings.map((e) => e.message).join('\n')).toContain('group.name');
    expect(w.ingress('bad')?.metadata.finalizers ?? []).toEqual([]);
  });
});

describe('an Ingress whose class names bad IngressClassParams, in a group with a good one', () => {
  it.each(BAD_INGRESS_CLASS_PARAMS)('%s: a Warning Event naming the field, the good member served', async (_l, bad) => {
    const w = world();
    // Stored as an older CRD (or none) let it be: the controller must not trust the schema.
    w.ingresses.params.set('broken', {
      ...makeParams('broken'),
      spec: bad.spec as IngressClassParams['spec'],
    });
    useBrokenClass(w);
    putBad(w, { annotations: {}, names: bad.names }, { className: 'alb-broken' });
    await w.converge([SHOP]);

    expectSurvivedAndGoodServed(w);
    const warnings = warningsOf(w, 'bad');
    expect(warnings.map((e) => e.reason).filter((r) => !WARNINGS.includes(r))).toEqual([]);
    expect(warnings.map((e) => e.message).join('\n')).toContain(bad.names);
  });
});

describe('IngressClassParams the API server refuses or prunes', () => {
  it.each(REFUSED_INGRESS_CLASS_PARAMS)('%s: refused with 422 naming the field', (_label, bad) => {
    const w = world();
    expect(() => w.ingresses.putIngressClassParams({ ...makeParams('broken'), spec: bad.spec as never })).toThrow(
      bad.names,
    );
    expect(w.ingresses.params.has('broken')).toBe(false);
  });

  // GAP (functions/ingress/model/annotations.ts parseMemberSettings): spec.scheme of IngressClassParams is taken
  // as it is, unchecked, where the annotation's value is checked; a value the CRD's schema did not refuse (an object
  // stored under an older CRD) is then used silently instead of being reported naming spec.scheme.
  it('scheme: public stored despite the schema: a Warning Event naming spec.scheme', async () => {
    const w = world();
    w.ingresses.params.set('broken', { ...makeParams('broken'), spec: { scheme: 'public' as never } });
    useBrokenClass(w);
    putBad(w, { annotations: {}, names: 'scheme' }, { className: 'alb-broken' });
    await w.converge([SHOP]);
    expectSurvivedAndGoodServed(w);
    expect(
      warningsOf(w, 'bad')
        .map((e) => e.message)
        .join('\n'),
    ).toContain('scheme');
  });

  it('an unknown field (a real API server prunes it; were it kept) is ignored: both members served, no warning', async () => {
    const w = world();
    w.ingresses.params.set('broken', { ...makeParams('broken'), spec: { frobnicate: true } as never });
    useBrokenClass(w);
    putBad(w, { annotations: {}, names: '' }, { className: 'alb-broken' });
    await w.converge([SHOP]);
    expectSurvivedAndGoodServed(w);
    expect(warningsOf(w, 'bad')).toEqual([]);
    expect(routeOf(w, '/bad')).toBe('default/bad-web:80');
  });
});
