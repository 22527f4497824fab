import { afterEach, describe, expect, it } from 'vitest';
import { GROUP_NAME_ANNOTATION } from '../../shared/ingress/membership.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import type { KubeObject } from './kinds.ts';
import { ALB, makeIngress, makeIngressClass, makeIngressClassParams } from './testing/ingress-objects.ts';
import { keysOn, makeService, reconcilerQueues, until } from './testing/objects.ts';
import { cluster, relayFor, serve, settled, start, stopStarted } from './testing/relay.ts';

/**
 * The relay end to end for the Ingress controller: Ingresses, IngressClasses and IngressClassParams listed and
 * watched over the REST clients of a relay in a Pod, IngressGroup keys on the ingress queue; a cluster without the
 * IngressClassParams CustomResourceDefinition still gets its keys, and the relay is ready.
 */

afterEach(stopStarted);

const names = (keys: KeyMessage[]) => [...new Set(keys.map((k) => `${k.kind}/${k.namespace ?? ''}/${k.name}`))].sort();

function ingressCluster() {
  const c = cluster();
  c.apply('IngressClass', makeIngressClass(ALB));
  c.apply('Service', makeService('shop', 'web', 'NodePort'));
  c.apply('Ingress', makeIngress('shop', 'web', { className: ALB }));
  for (const name of ['a', 'b']) {
    c.apply(
      'Ingress',
      makeIngress('shop', name, { className: ALB, annotations: { [GROUP_NAME_ANNOTATION]: 'public' } }),
    );
  }
  c.apply('Ingress', makeIngress('shop', 'nginx', { className: 'nginx' }));
  return c;
}

describe('relay: IngressGroup keys', () => {
  it('lists and watches the Ingress kinds and sends each group once; changes send their groups', async () => {
    const c = ingressCluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(relayFor(api, sqs, urls));
    await settled(relay, c);

    expect(relay.kinds).toEqual(expect.arrayContaining(['Ingress', 'IngressClass', 'IngressClassParams']));
    expect(names(keysOn(sqs, 'ingress'))).toEqual(['IngressGroup//public', 'IngressGroup/shop/web']);
    // No other queue hears of Ingresses.
    expect(names(keysOn(sqs, 'service'))).not.toContain('IngressGroup//public');

    // Moving a member to another group: the group joined and the group it still holds the finalizer of.
    const before = keysOn(sqs, 'ingress').length;
    c.mutate<KubeObject>('Ingress', 'shop/b', (i) => {
      i.metadata!.annotations = { [GROUP_NAME_ANNOTATION]: 'private' };
      i.metadata!.finalizers = ['group.ingress.k8s.aws/public'];
    });
    await settled(relay, c);
    expect(names(keysOn(sqs, 'ingress').slice(before))).toEqual(['IngressGroup//private', 'IngressGroup//public']);

    // The backend Service changes: the group that forwards to it.
    const afterMove = keysOn(sqs, 'ingress').length;
    c.mutate<KubeObject>('Service', 'shop/web', (s) => {
      s.metadata!.annotations = { 'alb.ingress.kubernetes.io/healthcheck-path': '/healthz' };
    });
    await settled(relay, c);
    expect(names(keysOn(sqs, 'ingress').slice(afterMove))).toEqual([
      'IngressGroup//private',
      'IngressGroup//public',
      'IngressGroup/shop/web',
    ]);
  });

  it('without the IngressClassParams definition the relay is ready and sends keys; once installed, params count', async () => {
    const c = ingressCluster();
    c.apply('IngressClass', makeIngressClass('shared', { params: 'shared' }));
    c.apply('Ingress', makeIngress('blog', 'one', { className: 'shared' }));
    const api = await serve(c);
    api.failNext((r) => r.kind === 'IngressClassParams', 404, 3);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(
      relayFor(api, sqs, { ingress: urls.ingress }, { listWatch: { ...listWatch(), absentRelistMs: 50 } }),
    );
    await until(
      () => relay.status().ready && relay.status().pending === 0 && keysOn(sqs, 'ingress').length > 0,
      'ready',
    );
    expect(relay.kinds).toEqual(['Node', 'Service', 'EndpointSlice', 'Ingress', 'IngressClass', 'IngressClassParams']);
    // The class naming missing params cannot be used: its Ingress is nobody's yet.
    expect(names(keysOn(sqs, 'ingress'))).toEqual(['IngressGroup//public', 'IngressGroup/shop/web']);

    // The definition installed and the params created: the next list finds them, the class's Ingress is ours.
    c.apply('IngressClassParams', makeIngressClassParams('shared', { group: { name: 'blog' } }));
    await until(() => names(keysOn(sqs, 'ingress')).includes('IngressGroup//blog'), 'the params listed', 3_000);
    expect(api.requests.filter((r) => r.kind === 'IngressClassParams' && !r.watch).length).toBeGreaterThanOrEqual(4);
  });
});

function listWatch() {
  return {
    pageSize: 500,
    watchTimeoutSeconds: 60,
    inactivityMs: 5_000,
    relistIntervalMs: 0,
    backoffBaseMs: 20,
    backoffMaxMs: 200,
  };
}
