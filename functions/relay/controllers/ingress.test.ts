import { describe, expect, it } from 'vitest';
import { GROUP_NAME_ANNOTATION } from '../../../shared/ingress/membership.ts';
import { INGRESS_CLASS_ANNOTATION } from '../../../shared/k8s/ingress-types.ts';
import { messageDeduplicationId } from '../../../shared/queue/message.ts';
import type { RoutedKey } from '../change-router.ts';
import type { KubeObject } from '../kinds.ts';
import { ALB, makeIngress, makeIngressClass, makeIngressClassParams } from '../testing/ingress-objects.ts';
import { makeNode, makeService, makeSlice } from '../testing/objects.ts';
import { asObject, at, router } from '../testing/router.ts';
import { defaultTargetType } from './ingress.ts';
import { TARGET_TYPE_ANNOTATION } from './ingress-reads.ts';

/** The Ingress controller's keys, through the router: one IngressGroup key per group a change concerns. */

const groups = (keys: RoutedKey[]) =>
  keys.map((k) => `${k.reconciler}:${k.message.kind}/${k.message.namespace ?? ''}/${k.message.name}`);
const explicit = (name: string) => `ingress:IngressGroup//${name}`;
const implicit = (namespace: string, name: string) => `ingress:IngressGroup/${namespace}/${name}`;
const GROUP = GROUP_NAME_ANNOTATION;

function ingressRouter() {
  const harness = router({ reconcilers: ['ingress'] });
  const { r, keys } = harness;
  r.observe('IngressClass', at(makeIngressClass(ALB)));
  keys.length = 0;
  /** Observe and return the keys this observation sent. */
  const sent = (kind: Parameters<typeof r.observe>[0], object: KubeObject) => {
    const from = keys.length;
    r.observe(kind, object);
    return groups(keys.slice(from));
  };
  return { ...harness, sent };
}

describe("ChangeRouter: the Ingress controller's keys", () => {
  it('an Ingress of our class is its group key: implicit (namespace/name) or explicit (group.name)', () => {
    const { r, keys } = ingressRouter();
    const shop = at(makeIngress('shop', 'web', { className: ALB }), 'uid-web');
    expect(r.observe('Ingress', shop)).toBe('forwarded');
    r.observe('Ingress', at(makeIngress('shop', 'api', { className: ALB, annotations: { [GROUP]: 'public' } })));
    expect(groups(keys)).toEqual([implicit('shop', 'web'), explicit('public')]);
    // The group changed because the Ingress did: MODIFIED at its revision, never the Ingress's uid.
    expect(keys[0]!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: shop.metadata!.resourceVersion,
      source: 'relay/Ingress',
    });
  });

  it('an Ingress not ours sends nothing, unless its finalizers name one of our groups (it was ours)', () => {
    const { sent } = ingressRouter();
    sent('IngressClass', at(makeIngressClass('nginx', { controller: 'k8s.io/ingress-nginx' })));
    expect(sent('Ingress', at(makeIngress('shop', 'nginx', { className: 'nginx' })))).toEqual([]);
    expect(
      sent('Ingress', at(makeIngress('shop', 'legacy', { annotations: { [INGRESS_CLASS_ANNOTATION]: 'nginx' } }))),
    ).toEqual([]);
    expect(sent('Ingress', at(makeIngress('shop', 'no-class')))).toEqual([]);
    const moved = makeIngress('shop', 'moved', {
      className: 'nginx',
      finalizers: ['group.ingress.k8s.aws/public', 'example.com/other'],
    });
    expect(sent('Ingress', at(moved))).toEqual([explicit('public')]);
    const implicitMoved = makeIngress('shop', 'gone', {
      className: 'nginx',
      finalizers: ['ingress.k8s.aws/resources'],
    });
    expect(sent('Ingress', at(implicitMoved))).toEqual([implicit('shop', 'gone')]);
  });

  it('the legacy class annotation decides alone: `alb` is ours whatever the class says', () => {
    const { sent } = ingressRouter();
    const legacy = makeIngress('shop', 'old', { className: 'nginx', annotations: { [INGRESS_CLASS_ANNOTATION]: ALB } });
    expect(sent('Ingress', at(legacy))).toEqual([implicit('shop', 'old')]);
    // Classes no longer concern it.
    expect(sent('IngressClass', at(makeIngressClass('nginx')))).toEqual([]);
  });

  it('leaving a group sends the group left (named by the finalizer) and the group joined', () => {
    const { sent } = ingressRouter();
    const member = { className: ALB, annotations: { [GROUP]: 'a' }, finalizers: ['group.ingress.k8s.aws/a'] };
    expect(sent('Ingress', at(makeIngress('shop', 'web', member)))).toEqual([explicit('a')]);
    const moved = { ...member, annotations: { [GROUP]: 'b' } };
    expect(sent('Ingress', at(makeIngress('shop', 'web', moved)))).toEqual([explicit('a'), explicit('b')]);
    // Group a's pass drops its finalizer, b's adds its own: both hear of it (before and after, as the reference
    // does: a finalizer taken off by hand must reach its group too).
    const settled = { ...moved, finalizers: ['group.ingress.k8s.aws/b'] };
    expect(sent('Ingress', at(makeIngress('shop', 'web', settled)))).toEqual([explicit('a'), explicit('b')]);
    // Then a change of the member alone concerns b alone.
    const later = {
      ...settled,
      annotations: { ...settled.annotations, 'alb.ingress.kubernetes.io/scheme': 'internal' },
    };
    expect(sent('Ingress', at(makeIngress('shop', 'web', later)))).toEqual([explicit('b')]);
    // Out of every group (class no longer ours), before any finalizer was added: the group it was in.
    expect(sent('Ingress', at(makeIngress('shop', 'api', { className: ALB, annotations: { [GROUP]: 'c' } })))).toEqual([
      explicit('c'),
    ]);
    expect(
      sent('Ingress', at(makeIngress('shop', 'api', { className: 'other', annotations: { [GROUP]: 'c' } }))),
    ).toEqual([explicit('c')]);
  });

  it('a change the controller does not read (status, labels, other annotations) sends nothing', () => {
    const { r, keys } = ingressRouter();
    const ingress = makeIngress('shop', 'web', { className: ALB });
    r.observe('Ingress', at(ingress));
    keys.length = 0;
    const noisy = structuredClone(ingress) as KubeObject & Record<string, unknown>;
    noisy.status = { loadBalancer: { ingress: [{ hostname: 'k8s-shop-web.elb.amazonaws.com' }] } };
    noisy.metadata!.labels = { team: 'a' };
    noisy.metadata!.annotations = { 'kubectl.kubernetes.io/last-applied-configuration': '{}' };
    noisy.metadata!.finalizers = ['example.com/other'];
    expect(r.observe('Ingress', at(noisy))).toBe('unchanged');
    expect(keys).toEqual([]);
  });

  it('a class that appears, changes hands or goes sends the groups of its Ingresses', () => {
    const { r, keys, sent } = ingressRouter();
    // Listed before its class (lists run in parallel): not ours yet.
    expect(sent('Ingress', at(makeIngress('shop', 'web', { className: 'internal' })))).toEqual([]);
    sent('Ingress', at(makeIngress('shop', 'other', { className: ALB })));
    const internal = at(makeIngressClass('internal'));
    expect(sent('IngressClass', internal)).toEqual([implicit('shop', 'web')]);
    expect(keys.at(-1)!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: internal.metadata!.resourceVersion,
      source: 'relay/IngressClass',
    });
    // Handed to another controller: the group it was in hears of it (and loses it).
    expect(sent('IngressClass', at(makeIngressClass('internal', { controller: 'example.com/other' })))).toEqual([
      implicit('shop', 'web'),
    ]);
    expect(sent('Ingress', at(makeIngress('shop', 'web', { className: 'internal', generation: 2 })))).toEqual([]);
    // Ours again, then deleted.
    sent('IngressClass', at(makeIngressClass('internal')));
    const from = keys.length;
    expect(r.remove('IngressClass', at(makeIngressClass('internal')))).toBe('forwarded');
    expect(groups(keys.slice(from))).toEqual([implicit('shop', 'web')]);
  });

  it('a default class concerns the Ingresses without a class', () => {
    const { sent } = ingressRouter();
    expect(sent('Ingress', at(makeIngress('shop', 'plain')))).toEqual([]);
    expect(sent('IngressClass', at(makeIngressClass('default', { isDefault: true })))).toEqual([
      implicit('shop', 'plain'),
    ]);
    // A second default class (another controller's): no default any more, the group loses it.
    expect(
      sent('IngressClass', at(makeIngressClass('nginx', { controller: 'k8s.io/ingress-nginx', isDefault: true }))),
    ).toEqual([implicit('shop', 'plain')]);
  });

  it('IngressClassParams move the Ingresses of their classes between groups; missing params leave them out', () => {
    const { sent } = ingressRouter();
    sent('IngressClass', at(makeIngressClass('shared', { params: 'shared-params' })));
    // Params missing: the class cannot be used, and nothing is ours yet.
    expect(sent('Ingress', at(makeIngress('a', 'one', { className: 'shared' })))).toEqual([]);
    expect(sent('IngressClassParams', at(makeIngressClassParams('shared-params')))).toEqual([implicit('a', 'one')]);
    sent('Ingress', at(makeIngress('b', 'two', { className: 'shared' })));
    expect(sent('IngressClassParams', at(makeIngressClassParams('shared-params', { group: { name: 'all' } })))).toEqual(
      [implicit('a', 'one'), explicit('all'), implicit('b', 'two')],
    );
    // Params nobody's class names concern no group.
    expect(sent('IngressClassParams', at(makeIngressClassParams('unused', { group: { name: 'x' } })))).toEqual([]);
  });

  it('IngressClassParams found gone by a list (their definition deleted: an empty list) send their groups', () => {
    const { r, keys, sent } = ingressRouter();
    sent('IngressClass', at(makeIngressClass('shared', { params: 'shared-params' })));
    r.listed('IngressClassParams', [at(makeIngressClassParams('shared-params', { group: { name: 'all' } }))], '700');
    sent('Ingress', at(makeIngress('a', 'one', { className: 'shared' })));
    const from = keys.length;
    r.listed('IngressClassParams', [], '');
    // The class can no longer be used: the group it was in hears of it.
    expect(groups(keys.slice(from))).toEqual([explicit('all')]);
    expect(keys.at(-1)!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: '',
      source: 'relay/IngressClassParams',
    });
    expect(sent('Service', at(makeService('a', 'web', 'NodePort')))).toEqual([]);
  });

  it("a Service's change reaches the groups that forward to it, forward actions included", () => {
    const { sent } = ingressRouter();
    sent('Ingress', at(makeIngress('shop', 'web', { className: ALB, services: ['web', 'api'] })));
    const weighted = makeIngress('shop', 'canary', {
      className: ALB,
      annotations: {
        'alb.ingress.kubernetes.io/actions.split': JSON.stringify({
          Type: 'forward',
          ForwardConfig: { TargetGroups: [{ ServiceName: 'web', ServicePort: '80', Weight: 1 }] },
        }),
      },
      services: ['split:use-annotation'],
    });
    sent('Ingress', at(weighted));
    sent('Ingress', at(makeIngress('other', 'web', { className: ALB })));
    expect(sent('Service', at(makeService('shop', 'web', 'NodePort')))).toEqual([
      implicit('shop', 'canary'),
      implicit('shop', 'web'),
    ]);
    expect(sent('Service', at(makeService('shop', 'api', 'NodePort')))).toEqual([implicit('shop', 'web')]);
    // `split` is an action, no Service; a Service no Ingress names sends nothing.
    expect(sent('Service', at(makeService('shop', 'split', 'NodePort')))).toEqual([]);
    expect(sent('Service', at(makeService('shop', 'db', 'ClusterIP')))).toEqual([]);
    // The Ingress stops naming api: api's changes no longer concern its group.
    sent('Ingress', at(makeIngress('shop', 'web', { className: ALB, services: ['web'] })));
    expect(sent('Service', at(makeService('shop', 'api', 'ClusterIP')))).toEqual([]);
  });

  it('EndpointSlices reach only groups with IP targets for their Service (params > Service > Ingress)', () => {
    const { sent } = ingressRouter();
    const ip = { [TARGET_TYPE_ANNOTATION]: 'ip' };
    sent('Ingress', at(makeIngress('shop', 'ip', { className: ALB, annotations: ip, services: ['web', 'api'] })));
    sent('Ingress', at(makeIngress('shop', 'instance', { className: ALB, services: ['web', 'api'] })));
    expect(sent('EndpointSlice', at(makeSlice('shop', 'web', 'a', ['10.0.0.1'])))).toEqual([implicit('shop', 'ip')]);
    // The Service's own annotation overrides the Ingress's.
    sent('Service', at(makeService('shop', 'api', 'ClusterIP', ip)));
    expect(sent('EndpointSlice', at(makeSlice('shop', 'api', 'a', ['10.0.0.2'])))).toEqual([
      implicit('shop', 'instance'),
      implicit('shop', 'ip'),
    ]);
    sent('Service', at(makeService('shop', 'api', 'ClusterIP', { [TARGET_TYPE_ANNOTATION]: 'instance' })));
    expect(sent('EndpointSlice', at(makeSlice('shop', 'api', 'a', ['10.0.0.3'])))).toEqual([]);
    // The class params' target type overrides both.
    sent('IngressClassParams', at(makeIngressClassParams('ip-params', { targetType: 'ip' })));
    sent('IngressClass', at(makeIngressClass('ip-class', { params: 'ip-params' })));
    sent('Ingress', at(makeIngress('shop', 'by-class', { className: 'ip-class', services: ['api'] })));
    expect(sent('EndpointSlice', at(makeSlice('shop', 'api', 'a', ['10.0.0.4'])))).toEqual([
      implicit('shop', 'by-class'),
    ]);
  });

  it('a Node change is a round of the groups with instance targets', () => {
    const { r, keys, nodeSetSignals } = ingressRouter();
    const ip = { [TARGET_TYPE_ANNOTATION]: 'ip' };
    // No group yet: the change is noted, no round is due.
    expect(r.observe('Node', asObject(at(makeNode('n0'))))).toBe('unchanged');
    expect(nodeSetSignals()).toBe(0);
    r.observe('Ingress', at(makeIngress('shop', 'ip', { className: ALB, annotations: ip })));
    r.observe('Ingress', at(makeIngress('shop', 'web', { className: ALB, annotations: { [GROUP]: 'g' } })));
    r.observe('Ingress', at(makeIngress('shop', 'api', { className: ALB, annotations: { [GROUP]: 'g' } })));
    keys.length = 0;

    const node = asObject(at(makeNode('n1')));
    expect(r.observe('Node', node)).toBe('forwarded');
    expect(r.observe('Node', asObject(at(makeNode('n2'))))).toBe('forwarded');
    expect(keys).toEqual([]);
    expect(nodeSetSignals()).toBe(2);
    const round = r.takeNodeSetRound();
    expect(groups(round)).toEqual([explicit('g')]);
    expect(round[0]!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: String(Number(node.metadata!.resourceVersion) + 1),
      source: 'relay/Node',
    });
    expect(r.takeNodeSetRound()).toEqual([]);
    // A Node that is no target candidate (no instance) is nobody's business.
    expect(r.observe('Node', asObject(at(makeNode('n3', { providerID: '' }))))).toBe('not-relevant');
  });

  it("a Node's labels alone make no round, unless an Ingress or a Service picks Nodes by label", () => {
    const { r, nodeSetSignals } = ingressRouter();
    r.observe('Ingress', at(makeIngress('shop', 'web', { className: ALB })));
    const node = makeNode('n1');
    r.observe('Node', asObject(at(node)));
    r.takeNodeSetRound();
    const signals = nodeSetSignals();
    const relabel = (value: string) => {
      const copy = structuredClone(node);
      copy.metadata.labels = { ...copy.metadata.labels, team: value };
      return asObject(at(copy));
    };
    // Fingerprinted (the Node rule reads every label), but no group's targets change.
    expect(r.observe('Node', relabel('a'))).toBe('unchanged');
    expect(nodeSetSignals()).toBe(signals);
    expect(r.takeNodeSetRound()).toEqual([]);
    // Excluded by label: its instance leaves the targets, a round.
    const excluded = structuredClone(node);
    excluded.metadata.labels = {
      ...excluded.metadata.labels,
      'node.kubernetes.io/exclude-from-external-load-balancers': '',
    };
    expect(r.observe('Node', asObject(at(excluded)))).toBe('forwarded');
    expect(groups(r.takeNodeSetRound())).toEqual([implicit('shop', 'web')]);
    r.observe('Node', relabel('a'));
    r.takeNodeSetRound();

    // An Ingress picking Nodes by label: labels matter.
    const selecting = { 'alb.ingress.kubernetes.io/target-node-labels': 'team=b' };
    r.observe('Ingress', at(makeIngress('shop', 'pick', { className: ALB, annotations: selecting })));
    expect(r.observe('Node', relabel('b'))).toBe('forwarded');
    expect(groups(r.takeNodeSetRound())).toEqual([implicit('shop', 'pick'), implicit('shop', 'web')]);
    // No longer; then a Service that does.
    r.observe('Ingress', at(makeIngress('shop', 'pick', { className: ALB })));
    expect(r.observe('Node', relabel('c'))).toBe('unchanged');
    r.observe('Service', at(makeService('shop', 'web', 'NodePort', selecting)));
    expect(r.observe('Node', relabel('d'))).toBe('forwarded');
  });

  it('a deleted Ingress sends its groups, whether the watch or a relist finds it gone', () => {
    const { r, keys } = ingressRouter();
    const web = at(makeIngress('shop', 'web', { className: ALB, annotations: { [GROUP]: 'g' } }));
    const api = at(makeIngress('shop', 'api', { className: ALB }));
    r.listed('Ingress', [web, api], '500');
    keys.length = 0;
    expect(r.remove('Ingress', at(makeIngress('shop', 'web', { className: ALB, annotations: { [GROUP]: 'g' } })))).toBe(
      'forwarded',
    );
    expect(groups(keys)).toEqual([explicit('g')]);
    keys.length = 0;
    r.listed('Ingress', [], '600');
    expect(groups(keys)).toEqual([implicit('shop', 'api')]);
    expect(keys[0]!.message.hint).toEqual({ eventType: 'MODIFIED', resourceVersion: '600', source: 'relay/Ingress' });
    // Its Service no longer concerns any group.
    expect(r.observe('Service', at(makeService('shop', 'web', 'NodePort')))).toBe('unchanged');
  });

  it('a listed group is one key when the list finishes; a restarted relay sends the same messages again', () => {
    const ingresses = ['a', 'b', 'c'].map((name) =>
      at(makeIngress('shop', name, { className: ALB, annotations: { [GROUP]: 'g' } })),
    );
    const list = (r: ReturnType<typeof ingressRouter>['r'], keys: RoutedKey[]) => {
      r.listStarted('Ingress');
      for (const ingress of ingresses) r.observe('Ingress', ingress);
      expect(keys).toEqual([]);
      r.listFinished('Ingress', '900');
      return keys.map((k) => messageDeduplicationId(k.message));
    };
    const first = ingressRouter();
    const sent = list(first.r, first.keys);
    expect(groups(first.keys)).toEqual([explicit('g')]);
    // The newest revision of the list wins.
    expect(first.keys[0]!.message.hint?.resourceVersion).toBe(ingresses[2]!.metadata!.resourceVersion);
    const restarted = ingressRouter();
    expect(list(restarted.r, restarted.keys)).toEqual(sent);
  });

  it('after a migration lock, every group is sent again once, with the RESYNC hint', () => {
    const { r, keys } = ingressRouter();
    for (const name of ['a', 'b']) {
      r.observe('Ingress', at(makeIngress('shop', name, { className: ALB, annotations: { [GROUP]: 'g' } })));
    }
    r.observe('Ingress', at(makeIngress('shop', 'c', { className: ALB, finalizers: ['group.ingress.k8s.aws/old'] })));
    r.observe('Service', at(makeService('shop', 'web', 'NodePort')));
    keys.length = 0;
    const hint = { eventType: 'RESYNC' as const, eventId: 'migration', source: 'relay' };
    r.resendAll('ingress', hint);
    expect(groups(keys).sort()).toEqual([explicit('g'), explicit('g'), explicit('old'), implicit('shop', 'c')].sort());
    expect(keys.every((k) => k.message.hint === hint || JSON.stringify(k.message.hint) === JSON.stringify(hint))).toBe(
      true,
    );
  });

  it('takes the default target type from INGRESS_DEFAULT_TARGET_TYPE, instance otherwise', () => {
    expect(defaultTargetType({})).toBe('instance');
    expect(defaultTargetType({ INGRESS_DEFAULT_TARGET_TYPE: 'ip' })).toBe('ip');
    expect(defaultTargetType({ INGRESS_DEFAULT_TARGET_TYPE: 'instance' })).toBe('instance');
  });
});
