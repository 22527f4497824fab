import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { KubernetesApiError } from './errors.ts';
import { ADAPTER_CLIENTS } from './fakes/adapter-clients.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { type FakeKubernetesServer, startFakeKubernetesServer } from './fakes/server.ts';
import { refreshingPort } from './refreshing-port.ts';
import type { ServicesPort } from './service-port.ts';
import type { EndpointSlice, Service } from './types.ts';

/**
 * ClientNodeServices against FakeKubernetes served over HTTPS: the API-server semantics the service
 * controller's tests run on (guarded merge patches, status subresource, finalizers), seen through the
 * real client.
 */

const FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';

function service(name: string): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: 'shop',
      uid: `uid-${name}`,
      creationTimestamp: '2026-11-02T07:00:00Z',
      annotations: { 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb' },
    },
    spec: {
      type: 'LoadBalancer',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      externalTrafficPolicy: 'Cluster',
    },
    status: { loadBalancer: {} },
  };
}

function slice(name: string, serviceName: string, namespace = 'shop'): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: { 'kubernetes.io/service-name': serviceName } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.0.1.5'], conditions: { ready: true }, nodeName: 'n1', zone: 'eu-west-1a' }],
    ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
  };
}

describe.each(ADAPTER_CLIENTS)('ServicesPort over $name', (client) => {
  let fake: FakeKubernetes;
  let server: FakeKubernetesServer;
  let services: ServicesPort;

  beforeEach(async () => {
    fake = new FakeKubernetes(new FakeClock(Date.parse('2026-11-02T08:00:00Z')));
    server = await startFakeKubernetesServer(fake);
    services = client.services(server);
  });

  afterEach(async () => {
    await server.close();
  });

  it('reads a Service as the API sent it; 404 is undefined', async () => {
    const stored = fake.putService(service('web'));
    expect(await services.getService('shop', 'web')).toEqual(stored);
    expect(await services.getService('shop', 'gone')).toBeUndefined();
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/api/v1/namespaces/shop/services/web' });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer test-token');
  });

  it('lists Services of every namespace, 500 at a time', async () => {
    for (let i = 0; i < 501; i++)
      fake.putService({ ...service(`s${i}`), metadata: { ...service(`s${i}`).metadata, namespace: `ns${i % 3}` } });
    const listed = await services.listServices();
    expect(listed).toHaveLength(501);
    expect(new Set(listed.map((s) => s.metadata.namespace))).toEqual(new Set(['ns0', 'ns1', 'ns2']));
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v1/services?limit=500',
      expect.stringMatching(/^\/api\/v1\/services\?continue=[A-Za-z0-9_-]+&limit=500$/),
    ]);
  });

  it('starts the list again once when its continue token has expired (410)', async () => {
    for (let i = 0; i < 501; i++) fake.putService(service(`s${i}`));
    let compacted = false;
    server.intercept = (req) => {
      if (req.query.get('continue') && !compacted) {
        compacted = true;
        fake.putService(service('late'));
        server.compact();
      }
      return undefined;
    };
    expect(await services.listServices()).toHaveLength(502);
    expect(server.requests).toHaveLength(4);
  });

  it('patches metadata and status as merge patches guarded by resourceVersion; a stale one is 409', async () => {
    const rv = fake.putService(service('web')).metadata.resourceVersion!;
    const patched = await services.patchService(
      'shop',
      'web',
      { metadata: { finalizers: [FINALIZER] } },
      { resourceVersion: rv },
    );
    expect(patched.metadata.finalizers).toEqual([FINALIZER]);
    expect(Number(patched.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
    expect(JSON.parse(server.requests[0]!.body)).toEqual({
      metadata: { finalizers: [FINALIZER], resourceVersion: rv },
    });
    await services.patchServiceStatus(
      'shop',
      'web',
      { status: { loadBalancer: { ingress: [{ hostname: 'h' }] } } },
      { resourceVersion: patched.metadata.resourceVersion! },
    );
    expect(server.requests[1]).toMatchObject({ method: 'PATCH', url: '/api/v1/namespaces/shop/services/web/status' });
    expect(fake.services.get('shop/web')!.status?.loadBalancer?.ingress).toEqual([{ hostname: 'h' }]);
    const stale = await services
      .patchService('shop', 'web', { metadata: { finalizers: [] } }, { resourceVersion: rv })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(KubernetesApiError);
    expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(fake.services.get('shop/web')!.metadata.finalizers).toEqual([FINALIZER]);
  });

  // As the API server does (test/k8s-contract/): the status subresource takes metadata, not the spec.
  it('ignores status in a patch of the Service, and the spec in a patch of its status', async () => {
    const rv = fake.putService(service('web')).metadata.resourceVersion!;
    const main = await services.patchService(
      'shop',
      'web',
      { metadata: { labels: { a: 'b' } }, status: { loadBalancer: { ingress: [{ hostname: 'ignored' }] } } },
      { resourceVersion: rv },
    );
    expect(main.status).toEqual({ loadBalancer: {} });
    const viaStatus = await services.patchServiceStatus(
      'shop',
      'web',
      { spec: { type: 'ClusterIP' }, status: { loadBalancer: { ingress: [{ hostname: 'h' }] } } },
      { resourceVersion: main.metadata.resourceVersion! },
    );
    expect(viaStatus.metadata.labels).toEqual({ a: 'b' });
    expect(viaStatus.spec?.type).toBe('LoadBalancer');
    expect(viaStatus.status?.loadBalancer?.ingress).toEqual([{ hostname: 'h' }]);
  });

  it('keeps a deleted Service until the controller removes its finalizer', async () => {
    fake.putService({ ...service('web'), metadata: { ...service('web').metadata, finalizers: [FINALIZER] } });
    fake.deleteService('shop', 'web');
    const terminating = await services.getService('shop', 'web');
    expect(terminating?.metadata.deletionTimestamp).toBe('2026-11-02T08:00:00Z');

    await services.patchService(
      'shop',
      'web',
      { metadata: { finalizers: null } },
      { resourceVersion: terminating!.metadata.resourceVersion! },
    );
    expect(await services.getService('shop', 'web')).toBeUndefined();
  });

  it('lists the EndpointSlices of a Service by the kubernetes.io/service-name label', async () => {
    const wanted = fake.putEndpointSlice(slice('web-abc', 'web'));
    fake.putEndpointSlice(slice('api-abc', 'api'));
    fake.putEndpointSlice(slice('web-abc', 'web', 'other'));
    expect(await services.listEndpointSlices('shop', 'web')).toEqual([wanted]);
    expect(server.requests[0]!.path).toBe('/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices');
    expect(server.requests[0]!.query.get('labelSelector')).toBe('kubernetes.io/service-name=web');
    expect(server.requests[0]!.query.get('limit')).toBe('500');
  });
});

describe('refreshingPort over the ServicesPort', () => {
  it('fetches credentials once, again when due, and once more (retrying the call) on a 401', async () => {
    const clock = new FakeClock();
    let loads = 0;
    const answers: (Service | Error)[] = [];
    const port = refreshingPort<ServicesPort>(
      async () => {
        loads++;
        return { kubeConfig: new KubeConfig(), refreshAt: clock.now() + 1000 };
      },
      clock,
      () => ({
        getService: async () => {
          const next = answers.shift();
          if (next instanceof Error) throw next;
          return next;
        },
        listServices: async () => [],
        patchService: async () => service('x'),
        patchServiceStatus: async () => service('x'),
        listEndpointSlices: async () => [],
      }),
    );
    answers.push(service('a'));
    await port.getService('shop', 'a');
    await port.listServices();
    expect(loads).toBe(1);
    clock.advance(1000);
    await port.listServices();
    expect(loads).toBe(2);
    answers.push(new KubernetesApiError(401, 'Unauthorized', 'token expired'), service('b'));
    expect(await port.getService('shop', 'b')).toMatchObject({ metadata: { name: 'b' } });
    expect(loads).toBe(3);
    answers.push(new KubernetesApiError(403, 'Forbidden', 'no'));
    await expect(port.getService('shop', 'c')).rejects.toMatchObject({ statusCode: 403 });
    expect(loads).toBe(3);
  });
});
