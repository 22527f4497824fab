import { beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../shared/clock.ts';
import { GROUP_NAME_ANNOTATION } from '../../shared/ingress/membership.ts';
import { FakeIngresses } from '../../shared/k8s/fakes/ingresses.ts';
import {
  DEFAULT_INGRESS_CLASS_ANNOTATION,
  IMPLICIT_GROUP_FINALIZER,
  INGRESS_CLASS_ANNOTATION,
  INGRESS_CONTROLLER_NAME,
  type Ingress,
} from '../../shared/k8s/ingress-types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createWorld, type World } from '../../test/helpers/world.ts';
import { ingressGroupKeys } from './ingress-groups.ts';
import { type ResyncDeps, resync } from './resync.ts';

/** The resync's IngressGroup keys: every group of the cluster, each once, resolved as the controller resolves it. */

let w: World;
let fake: FakeIngresses;
const hint = { eventType: 'RESYNC' as const, eventId: 'round-1' };
const names = (keys: { kind: string; namespace?: string; name: string }[]) =>
  keys.map((k) => `${k.kind}/${k.namespace ?? ''}/${k.name}`);

function ingress(namespace: string, name: string, options: Partial<Ingress['metadata']> & { className?: string } = {}) {
  const { className, ...metadata } = options;
  fake.putIngress({
    metadata: { namespace, name, ...metadata },
    spec: className === undefined ? {} : { ingressClassName: className },
  });
}

beforeEach(() => {
  w = createWorld();
  w.sqs.createQueue('ingress.fifo', { maxReceiveCount: 5 });
  fake = new FakeIngresses(systemClock);
  fake.putIngressClass({ metadata: { name: 'alb' }, spec: { controller: INGRESS_CONTROLLER_NAME } });
  fake.putIngressClass({ metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } });
});

describe('the resync: IngressGroups', () => {
  it('one key per group of ours: implicit, explicit (members counted once), legacy annotation, default class', async () => {
    ingress('shop', 'web', { className: 'alb' });
    ingress('shop', 'a', { className: 'alb', annotations: { [GROUP_NAME_ANNOTATION]: 'public' } });
    ingress('blog', 'b', { className: 'alb', annotations: { [GROUP_NAME_ANNOTATION]: 'public' } });
    ingress('shop', 'old', { annotations: { [INGRESS_CLASS_ANNOTATION]: 'alb' } });
    ingress('shop', 'plain');
    ingress('shop', 'nginx', { className: 'nginx' });
    ingress('shop', 'other-legacy', { className: 'alb', annotations: { [INGRESS_CLASS_ANNOTATION]: 'nginx' } });
    expect(names(await ingressGroupKeys(fake, hint)).sort()).toEqual([
      'IngressGroup//public',
      'IngressGroup/shop/old',
      'IngressGroup/shop/web',
    ]);

    // A default class of ours takes the Ingresses without a class.
    fake.putIngressClass({
      metadata: { name: 'alb', annotations: { [DEFAULT_INGRESS_CLASS_ANNOTATION]: 'true' } },
      spec: { controller: INGRESS_CONTROLLER_NAME },
    });
    const keys = await ingressGroupKeys(fake, hint);
    expect(names(keys)).toContain('IngressGroup/shop/plain');
    expect(keys.every((k) => k.hint === hint)).toBe(true);
  });

  it('the groups finalizers name, even of Ingresses no longer ours or whose class cannot be used', async () => {
    ingress('shop', 'left', { className: 'nginx', finalizers: ['group.ingress.k8s.aws/old', 'example.com/keep'] });
    ingress('shop', 'lost', { className: 'deleted-class', finalizers: [IMPLICIT_GROUP_FINALIZER] });
    ingress('shop', 'bad-name', { className: 'alb', annotations: { [GROUP_NAME_ANNOTATION]: 'Not_Valid' } });
    // An invalid group name: the Ingress's own group, whose pass tells it (FailedLoadGroupID).
    expect(names(await ingressGroupKeys(fake, hint)).sort()).toEqual([
      'IngressGroup//old',
      'IngressGroup/shop/bad-name',
      'IngressGroup/shop/lost',
    ]);
  });

  it("IngressClassParams decide the group of their class's Ingresses; missing params or CRD: none", async () => {
    fake.putIngressClass({
      metadata: { name: 'shared' },
      spec: {
        controller: INGRESS_CONTROLLER_NAME,
        parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: 'shared' },
      },
    });
    ingress('a', 'one', { className: 'shared' });
    ingress('b', 'two', { className: 'shared', annotations: { [GROUP_NAME_ANNOTATION]: 'ignored' } });
    expect(await ingressGroupKeys(fake, hint)).toEqual([]);

    fake.putIngressClassParams({ metadata: { name: 'shared' }, spec: { group: { name: 'everyone' } } });
    expect(names(await ingressGroupKeys(fake, hint))).toEqual(['IngressGroup//everyone']);
    expect(fake.callCount('getIngressClassParams')).toBe(2);

    fake.paramsCrdInstalled = false;
    expect(await ingressGroupKeys(fake, hint)).toEqual([]);
  });

  it('resync sends them to the ingress queue, beside the other controllers', async () => {
    ingress('shop', 'web', { className: 'alb' });
    ingress('shop', 'a', { className: 'alb', annotations: { [GROUP_NAME_ANNOTATION]: 'public' } });
    const deps: ResyncDeps = {
      kube: w.kube,
      ingresses: fake,
      sqs: w.sqs,
      queues: { ingress: w.sqs.urlOf('ingress.fifo'), route: w.sqs.urlOf('route.fifo') },
      log: w.runner.log,
      metrics: w.metrics,
    };
    expect(await resync('round-1', deps)).toEqual({ sent: 4 });
    const bodies = w.sqs.bodies('ingress.fifo').map((b) => JSON.parse(b));
    // Every group, then the Ingress controller's garbage collection key (shared/queue/ingress-gc-key.ts).
    expect(bodies).toEqual([
      { kind: 'IngressGroup', namespace: 'shop', name: 'web', hint },
      { kind: 'IngressGroup', name: 'public', hint },
      { kind: 'IngressStacks', name: 'garbage-collection', hint },
    ]);
    expect(w.metrics.total(MetricName.KeysSent, { source: 'resync' })).toBe(4);

    // Without the Ingress port (the controller off), the queue gets nothing.
    expect(await resync('round-2', { ...deps, ingresses: undefined })).toEqual({ sent: 1 });
  });
});
