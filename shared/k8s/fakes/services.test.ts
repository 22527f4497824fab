import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.ts';
import { FakeKubernetes } from './fake-kubernetes.ts';

let kube: FakeKubernetes;
beforeEach(() => {
  kube = new FakeKubernetes(new FakeClock());
});

const FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';
const put = () =>
  kube.putService({
    metadata: { name: 'web', namespace: 'shop' },
    spec: { type: 'LoadBalancer', ports: [{ port: 80 }] },
  });

describe('FakeKubernetes Services', () => {
  // The status subresource takes metadata too, but never the spec, as the API server's does (test/k8s-contract/).
  it('guards patches by resourceVersion and keeps spec and status apart', async () => {
    const created = put();
    const rv = created.metadata.resourceVersion!;
    const patched = await kube.patchService(
      'shop',
      'web',
      { metadata: { finalizers: [FINALIZER] }, status: { loadBalancer: { ingress: [{ hostname: 'x' }] } } },
      { resourceVersion: rv },
    );
    expect(patched.metadata.finalizers).toEqual([FINALIZER]);
    expect(patched.status).toBeUndefined();
    await expect(
      kube.patchService('shop', 'web', { metadata: { finalizers: [] } }, { resourceVersion: rv }),
    ).rejects.toMatchObject({ statusCode: 409 });
    const withStatus = await kube.patchServiceStatus(
      'shop',
      'web',
      { status: { loadBalancer: { ingress: [{ hostname: 'h' }] } }, spec: { type: 'ClusterIP' } },
      { resourceVersion: patched.metadata.resourceVersion! },
    );
    expect(withStatus.status?.loadBalancer?.ingress).toEqual([{ hostname: 'h' }]);
    expect(withStatus.metadata.finalizers).toEqual([FINALIZER]);
    expect(withStatus.spec?.type).toBe('LoadBalancer');
    expect(kube.writeCount()).toBe(3);
  });

  it('a Service with finalizers only terminates on delete, refuses new finalizers, and goes when the last is removed', async () => {
    put();
    const rv = (await kube.getService('shop', 'web'))!.metadata.resourceVersion!;
    await kube.patchService('shop', 'web', { metadata: { finalizers: [FINALIZER] } }, { resourceVersion: rv });
    kube.deleteService('shop', 'web');
    const terminating = (await kube.getService('shop', 'web'))!;
    expect(terminating.metadata.deletionTimestamp).toBeDefined();
    await expect(
      kube.patchService(
        'shop',
        'web',
        { metadata: { finalizers: [FINALIZER, 'other'] } },
        { resourceVersion: terminating.metadata.resourceVersion! },
      ),
    ).rejects.toMatchObject({ statusCode: 422, reason: 'Invalid' });
    await kube.patchService(
      'shop',
      'web',
      { metadata: { finalizers: [] } },
      { resourceVersion: terminating.metadata.resourceVersion! },
    );
    expect(await kube.getService('shop', 'web')).toBeUndefined();
    await expect(kube.patchService('shop', 'web', {}, { resourceVersion: '1' })).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it('without finalizers a delete removes the Service at once', () => {
    put();
    kube.deleteService('shop', 'web');
    expect(kube.services.size).toBe(0);
  });

  it('lists EndpointSlices by the service-name label within the namespace', async () => {
    const slice = (name: string, namespace: string, service: string) =>
      kube.putEndpointSlice({
        metadata: { name, namespace, labels: { 'kubernetes.io/service-name': service } },
        addressType: 'IPv4',
        endpoints: [],
      });
    slice('a', 'shop', 'web');
    slice('b', 'shop', 'api');
    slice('c', 'other', 'web');
    expect((await kube.listEndpointSlices('shop', 'web')).map((s) => s.metadata.name)).toEqual(['a']);
    kube.deleteEndpointSlice('shop', 'a');
    expect(await kube.listEndpointSlices('shop', 'web')).toEqual([]);
  });
});
