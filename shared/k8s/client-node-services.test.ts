import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { ClientNodeServices } from './client-node-services.ts';
import { KubernetesApiError } from './errors.ts';
import {
  FAKE_API_SERVER_CA_DATA,
  type FakeApiServer,
  type FakeResponse,
  type RecordedRequest,
  startFakeApiServer,
  status,
} from './fake-api-server.ts';
import { refreshingPort, tokenKubeConfig } from './lambda-access.ts';
import type { ServicesPort } from './service-port.ts';
import type { EndpointSlice, Service } from './types.ts';

/** The kubeconfig the Lambdas build (tokenKubeConfig), pointed at the fake API server. */
function kubeConfigFor(server: FakeApiServer, token = 'test-token'): KubeConfig {
  return tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, token);
}

function service(name: string, resourceVersion = '100'): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: 'shop',
      uid: `uid-${name}`,
      resourceVersion,
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

const slice: EndpointSlice = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'web-abc', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: [{ addresses: ['10.0.1.5'], conditions: { ready: true }, nodeName: 'n1', zone: 'eu-west-1a' }],
  ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
};

/** Services and EndpointSlices of namespace `shop`, with merge patches guarded by resourceVersion. */
class ServiceApi {
  readonly services = new Map<string, Service>();
  status = (req: RecordedRequest): FakeResponse => {
    if (req.method === 'GET' && req.path === '/api/v1/services') {
      const all = [...this.services.values()];
      const start = Number(req.query.get('continue') ?? '0');
      const limit = Number(req.query.get('limit') ?? all.length);
      const next = start + limit < all.length ? String(start + limit) : undefined;
      return {
        status: 200,
        body: {
          kind: 'ServiceList',
          apiVersion: 'v1',
          metadata: { continue: next },
          items: all.slice(start, start + limit),
        },
      };
    }
    if (req.method === 'GET' && req.path === '/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices') {
      return {
        status: 200,
        body: { kind: 'EndpointSliceList', apiVersion: 'discovery.k8s.io/v1', metadata: {}, items: [slice] },
      };
    }
    const match = req.path.match(/^\/api\/v1\/namespaces\/shop\/services\/([^/]+)(\/status)?$/);
    if (!match) return { status: 404, body: status(404, 'NotFound', 'no route') };
    const stored = this.services.get(match[1]!);
    if (!stored) return { status: 404, body: status(404, 'NotFound', `services "${match[1]}" not found`) };
    if (req.method === 'GET') return { status: 200, body: stored };
    if (req.method === 'PATCH') {
      if (req.headers['content-type'] !== 'application/merge-patch+json')
        return { status: 415, body: status(415, 'UnsupportedMediaType', 'x') };
      const patch = JSON.parse(req.body) as Service;
      if (patch.metadata.resourceVersion !== stored.metadata.resourceVersion) {
        return {
          status: 409,
          body: status(409, 'Conflict', `Operation cannot be fulfilled on services "${stored.metadata.name}"`),
        };
      }
      const next: Service = {
        ...stored,
        metadata: {
          ...stored.metadata,
          ...(match[2] ? {} : { finalizers: patch.metadata.finalizers }),
          resourceVersion: String(Number(stored.metadata.resourceVersion) + 1),
        },
        status: match[2] ? { ...stored.status, ...patch.status } : stored.status,
      };
      this.services.set(stored.metadata.name, next);
      return { status: 200, body: next };
    }
    return { status: 405, body: status(405, 'MethodNotAllowed', req.method) };
  };
}

describe('ClientNodeServices', () => {
  let api: ServiceApi;
  let server: FakeApiServer;
  let services: ClientNodeServices;

  beforeEach(async () => {
    api = new ServiceApi();
    server = await startFakeApiServer((req) => api.status(req));
    services = new ClientNodeServices(kubeConfigFor(server));
  });

  afterEach(async () => {
    await server.close();
  });

  it('reads a Service as the API sent it; 404 is undefined', async () => {
    api.services.set('web', service('web'));
    expect(await services.getService('shop', 'web')).toEqual(service('web'));
    expect(await services.getService('shop', 'gone')).toBeUndefined();
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/api/v1/namespaces/shop/services/web' });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer test-token');
  });

  it('lists Services of every namespace, 500 at a time', async () => {
    for (let i = 0; i < 501; i++) api.services.set(`s${i}`, service(`s${i}`));
    expect(await services.listServices()).toHaveLength(501);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v1/services?limit=500',
      '/api/v1/services?continue=500&limit=500',
    ]);
  });

  it('patches metadata and status as merge patches guarded by resourceVersion; a stale one is 409', async () => {
    api.services.set('web', service('web', '7'));
    const patched = await services.patchService(
      'shop',
      'web',
      { metadata: { finalizers: ['service.kubernetes.io/load-balancer-cleanup'] } },
      { resourceVersion: '7' },
    );
    expect(patched.metadata).toMatchObject({
      finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
      resourceVersion: '8',
    });
    expect(JSON.parse(server.requests[0]!.body)).toEqual({
      metadata: { finalizers: ['service.kubernetes.io/load-balancer-cleanup'], resourceVersion: '7' },
    });
    await services.patchServiceStatus(
      'shop',
      'web',
      { status: { loadBalancer: { ingress: [{ hostname: 'h' }] } } },
      { resourceVersion: '8' },
    );
    expect(server.requests[1]).toMatchObject({ method: 'PATCH', url: '/api/v1/namespaces/shop/services/web/status' });
    expect(api.services.get('web')!.status?.loadBalancer?.ingress).toEqual([{ hostname: 'h' }]);
    const stale = await services
      .patchService('shop', 'web', { metadata: { finalizers: [] } }, { resourceVersion: '7' })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(KubernetesApiError);
    expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
  });

  it('lists the EndpointSlices of a Service by the kubernetes.io/service-name label', async () => {
    expect(await services.listEndpointSlices('shop', 'web')).toEqual([slice]);
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
