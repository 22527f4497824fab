import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.ts';
import { KubernetesApiError } from '../errors.ts';
import { IMPLICIT_GROUP_FINALIZER, type Ingress } from '../ingress-types.ts';
import { FakeKubernetes } from './fake-kubernetes.ts';
import { FakeIngresses, fakeIngressControllerKube, type IngressChange } from './ingresses.ts';

/** FakeIngresses: the API server's semantics the Ingress controller's tests rely on. */

function ingress(name: string, namespace = 'shop', extra: Partial<Ingress['metadata']> = {}): Ingress {
  return {
    metadata: { name, namespace, ...extra },
    spec: {
      ingressClassName: 'alb',
      rules: [
        {
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
          },
        },
      ],
    },
  };
}

function setup() {
  const clock = new FakeClock(Date.parse('2026-11-02T08:00:00Z'));
  const fake = new FakeIngresses(clock);
  const changes: IngressChange[] = [];
  fake.watch((change) => changes.push(change));
  return { clock, fake, changes };
}

describe('FakeIngresses', () => {
  it('stores an Ingress as the API server does: typed, versioned, generation 1, empty status, its namespace made', async () => {
    const { fake } = setup();
    const stored = fake.putIngress(ingress('web'));
    expect(stored).toMatchObject({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', namespace: 'shop', generation: 1, creationTimestamp: '2026-11-02T08:00:00Z' },
      status: { loadBalancer: {} },
    });
    expect(stored.metadata.uid).toEqual(expect.any(String));
    expect(await fake.getIngress('shop', 'web')).toEqual(stored);
    expect(await fake.getNamespace('shop')).toMatchObject({
      metadata: { name: 'shop', labels: { 'kubernetes.io/metadata.name': 'shop' } },
    });
    expect(await fake.getIngress('shop', 'absent')).toBeUndefined();
  });

  it('moves the generation on a change of the spec only, and keeps uid and creation time', () => {
    const { fake, clock } = setup();
    const first = fake.putIngress(ingress('web'));
    clock.advance(60_000);
    const labelled = fake.mutateIngress('shop', 'web', (i) => {
      i.metadata.labels = { a: 'b' };
    });
    expect(labelled.metadata).toMatchObject({ generation: 1, uid: first.metadata.uid });
    expect(labelled.metadata.creationTimestamp).toBe(first.metadata.creationTimestamp);
    expect(Number(labelled.metadata.resourceVersion)).toBeGreaterThan(Number(first.metadata.resourceVersion));
    const changed = fake.mutateIngress('shop', 'web', (i) => {
      i.spec!.ingressClassName = 'other';
    });
    expect(changed.metadata.generation).toBe(2);
  });

  it('lists Ingresses of every namespace and IngressClasses without kind and apiVersion, as list items come', async () => {
    const { fake } = setup();
    fake.putIngress(ingress('a', 'one'));
    fake.putIngress(ingress('b', 'two'));
    fake.putIngressClass({ metadata: { name: 'alb' }, spec: { controller: 'ingress.k8s.aws/alb' } });
    const listed = await fake.listIngresses();
    expect(listed.map((i) => `${i.metadata.namespace}/${i.metadata.name}`)).toEqual(['one/a', 'two/b']);
    expect(listed[0]).not.toHaveProperty('kind');
    expect(await fake.listIngressClasses()).toEqual([
      expect.objectContaining({ metadata: expect.objectContaining({ name: 'alb' }), spec: expect.any(Object) }),
    ]);
    expect((await fake.listIngressClasses())[0]).not.toHaveProperty('apiVersion');
  });

  it('answers IngressClassParams by name, and undefined when missing or when the CRD is not installed', async () => {
    const { fake } = setup();
    fake.putIngressClassParams({ metadata: { name: 'cfg' }, spec: { scheme: 'internal' } });
    expect(await fake.getIngressClassParams('cfg')).toMatchObject({
      apiVersion: 'elbv2.k8s.aws/v1beta1',
      kind: 'IngressClassParams',
      spec: { scheme: 'internal' },
    });
    expect(await fake.getIngressClassParams('other')).toBeUndefined();
    fake.paramsCrdInstalled = false;
    expect(await fake.getIngressClassParams('cfg')).toBeUndefined();
    expect(() => fake.putIngressClassParams({ metadata: { name: 'x' } })).toThrow(/CRD is not installed/);
  });

  it('replaces the finalizers under a resourceVersion guard: a stale one is 409 and changes nothing', async () => {
    const { fake } = setup();
    const created = fake.putIngress(ingress('web', 'shop', { finalizers: ['example.com/other'] }));
    const guard = { resourceVersion: created.metadata.resourceVersion! };
    const written = await fake.setIngressFinalizers(
      'shop',
      'web',
      ['example.com/other', IMPLICIT_GROUP_FINALIZER],
      guard,
    );
    expect(written.metadata.finalizers).toEqual(['example.com/other', IMPLICIT_GROUP_FINALIZER]);
    const stale = await fake.setIngressFinalizers('shop', 'web', [], guard).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(KubernetesApiError);
    expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(fake.ingresses.get('shop/web')!.metadata.finalizers).toHaveLength(2);
    const cleared = await fake.setIngressFinalizers('shop', 'web', [], {
      resourceVersion: written.metadata.resourceVersion!,
    });
    expect(cleared.metadata).not.toHaveProperty('finalizers');
    await expect(fake.setIngressFinalizers('shop', 'gone', [], guard)).rejects.toMatchObject({ statusCode: 404 });
    expect(fake.callCount('setIngressFinalizers')).toBe(4);
  });

  it('keeps a deleted Ingress with finalizers, terminating, until the last goes; none can be added meanwhile', async () => {
    const { fake, changes } = setup();
    fake.putIngress(ingress('web', 'shop', { finalizers: [IMPLICIT_GROUP_FINALIZER] }));
    fake.deleteIngress('shop', 'web');
    const terminating = (await fake.getIngress('shop', 'web'))!;
    expect(terminating.metadata).toMatchObject({
      deletionTimestamp: '2026-11-02T08:00:00Z',
      deletionGracePeriodSeconds: 0,
      generation: 2,
    });
    const guard = { resourceVersion: terminating.metadata.resourceVersion! };
    await expect(
      fake.setIngressFinalizers('shop', 'web', [IMPLICIT_GROUP_FINALIZER, 'example.com/late'], guard),
    ).rejects.toMatchObject({ statusCode: 422 });
    await fake.setIngressFinalizers('shop', 'web', [], guard);
    expect(await fake.getIngress('shop', 'web')).toBeUndefined();
    expect(changes.map((c) => `${c.kind} ${c.type}`)).toEqual([
      'Namespace ADDED',
      'Ingress ADDED',
      'Ingress MODIFIED',
      'Ingress DELETED',
    ]);
  });

  it('deletes an Ingress without finalizers at once', () => {
    const { fake } = setup();
    fake.putIngress(ingress('web'));
    fake.deleteIngress('shop', 'web');
    expect(fake.ingresses.size).toBe(0);
  });

  it('writes status through the status subresource only; an empty list is stored as absent; bad addresses are 422', async () => {
    const { fake } = setup();
    fake.putIngress(ingress('web'));
    const hostname = 'k8s-shop-web-0123456789.eu-west-1.elb.amazonaws.com';
    const written = await fake.setIngressStatus('shop', 'web', [{ hostname }]);
    expect(written.status).toEqual({ loadBalancer: { ingress: [{ hostname }] } });
    expect(written.metadata.generation).toBe(1);
    const cleared = await fake.setIngressStatus('shop', 'web', []);
    expect(cleared.status).toEqual({ loadBalancer: {} });
    for (const bad of [{ ip: 'not-an-ip' }, { hostname: 'Not_A_Host' }, { hostname: '10.0.0.1' }]) {
      await expect(fake.setIngressStatus('shop', 'web', [bad]), JSON.stringify(bad)).rejects.toMatchObject({
        statusCode: 422,
      });
    }
    const unchecked = await fake.setIngressStatus('shop', 'web', [{ hostname, ports: [{ port: 80 } as never] }]);
    expect(unchecked.status?.loadBalancer?.ingress).toEqual([{ hostname, ports: [{ port: 80, protocol: '' }] }]);
    await expect(fake.setIngressStatus('shop', 'absent', [{ hostname }])).rejects.toMatchObject({ statusCode: 404 });
    const viaMain = fake.patchIngress(
      'shop',
      'web',
      { status: { loadBalancer: { ingress: [{ hostname: 'ignored' }] } } },
      { resourceVersion: fake.ingresses.get('shop/web')!.metadata.resourceVersion! },
      false,
    );
    expect(viaMain.status).toEqual(unchecked.status);
  });

  it('fails the next call with a queued error, once, counting it', async () => {
    const { fake } = setup();
    fake.queueError('listIngresses', new KubernetesApiError(500, 'InternalError', 'etcd timeout'));
    await expect(fake.listIngresses()).rejects.toMatchObject({ statusCode: 500 });
    expect(await fake.listIngresses()).toEqual([]);
    expect(fake.callCount('listIngresses')).toBe(2);
  });

  it('joins FakeKubernetes into the Ingress controller port', async () => {
    const { fake } = setup();
    const kube = new FakeKubernetes(new FakeClock());
    kube.putService({ metadata: { name: 'web', namespace: 'shop' }, spec: { type: 'NodePort' } });
    fake.putIngress(ingress('web'));
    const port = fakeIngressControllerKube(fake, kube);
    expect((await port.listIngresses()).map((i) => i.metadata.name)).toEqual(['web']);
    expect(await port.getService('shop', 'web')).toMatchObject({ spec: { type: 'NodePort' } });
  });
});
