import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { loadConfig } from '../config/config.ts';
import { ClientNodeIngresses } from './client-node-ingresses.ts';
import { KubernetesApiError } from './errors.ts';
import { FakeAccessDeps } from './fakes/access.ts';
import { FAKE_API_SERVER_CA_DATA, status } from './fakes/api-server.ts';
import { FakeIngresses } from './fakes/ingresses.ts';
import { type FakeIngressesServer, startFakeIngressesServer } from './fakes/ingresses-server.ts';
import type { IngressesPort } from './ingress-port.ts';
import { IMPLICIT_GROUP_FINALIZER, type Ingress } from './ingress-types.ts';
import { createIngressesPort, tokenKubeConfig } from './lambda-access.ts';
import { RestIngresses } from './rest-ingresses.ts';

/**
 * The IngressesPort's two adapters, client-node (kubeconfig mode) and the Lambdas' REST client, against
 * FakeIngresses served over HTTPS: the exact requests each makes, and the answers and errors it hands back.
 * test/k8s-contract/ingress-port.test.ts runs them against a real API server.
 */

const TOKEN = 'test-token';
const CLIENTS: { name: string; port(server: { url: string }): IngressesPort }[] = [
  {
    name: 'client-node',
    port: (server) =>
      new ClientNodeIngresses(tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, TOKEN)),
  },
  {
    name: 'the REST client',
    port: (server) => new RestIngresses({ server: server.url, caData: FAKE_API_SERVER_CA_DATA, token: TOKEN }),
  },
];

function ingress(name: string, namespace = 'shop'): Ingress {
  return {
    metadata: { name, namespace, annotations: { 'alb.ingress.kubernetes.io/scheme': 'internet-facing' } },
    spec: {
      ingressClassName: 'alb',
      tls: [{ hosts: ['shop.example.com'] }],
      rules: [
        {
          host: 'shop.example.com',
          http: {
            paths: [
              { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
              { path: '/api', pathType: 'Exact', backend: { service: { name: 'api', port: { name: 'http' } } } },
            ],
          },
        },
      ],
    },
  };
}

describe.each(CLIENTS)('IngressesPort over $name', (client) => {
  let fake: FakeIngresses;
  let server: FakeIngressesServer;
  let port: IngressesPort;

  beforeEach(async () => {
    fake = new FakeIngresses(new FakeClock(Date.parse('2026-11-02T08:00:00Z')));
    server = await startFakeIngressesServer(fake);
    port = client.port(server);
  });

  afterEach(async () => {
    await server.close();
  });

  it('reads an Ingress as the API sent it; 404 is undefined', async () => {
    const stored = fake.putIngress(ingress('web'));
    expect(await port.getIngress('shop', 'web')).toEqual(stored);
    expect(await port.getIngress('shop', 'gone')).toBeUndefined();
    expect(server.requests[0]).toMatchObject({
      method: 'GET',
      url: '/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web',
    });
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('lists Ingresses of every namespace, 500 at a time', async () => {
    for (let i = 0; i < 501; i++) fake.putIngress(ingress(`i${i}`, `ns${i % 3}`));
    const listed = await port.listIngresses();
    expect(listed).toHaveLength(501);
    expect(new Set(listed.map((i) => i.metadata.namespace))).toEqual(new Set(['ns0', 'ns1', 'ns2']));
    expect(listed[0]).toEqual((await fake.listIngresses())[0]);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/apis/networking.k8s.io/v1/ingresses?limit=500',
      expect.stringMatching(/^\/apis\/networking\.k8s\.io\/v1\/ingresses\?continue=[A-Za-z0-9_-]+&limit=500$/),
    ]);
  });

  it('starts a list again, once, when its continue token has expired (410 Gone)', async () => {
    for (let i = 0; i < 501; i++) fake.putIngress(ingress(`i${i}`));
    let expired = false;
    server.intercept = (req) => {
      if (!req.query.get('continue') || expired) return undefined;
      expired = true;
      fake.putIngress(ingress('late'));
      return { status: 410, body: status(410, 'Expired', 'The provided continue parameter is too old') };
    };
    const listed = await port.listIngresses();
    expect(listed).toHaveLength(502);
    expect(server.requests.map((r) => r.query.has('continue'))).toEqual([false, true, false, true]);
    server.intercept = () => ({ status: 410, body: status(410, 'Expired', 'too old') });
    await expect(port.listIngressClasses()).rejects.toMatchObject({ statusCode: 410 });
    expect(server.requests).toHaveLength(6);
  });

  it('lists IngressClasses, with their parameters reference', async () => {
    fake.putIngressClass({
      metadata: { name: 'alb', annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
      spec: {
        controller: 'ingress.k8s.aws/alb',
        parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: 'alb-cfg' },
      },
    });
    expect(await port.listIngressClasses()).toEqual(await fake.listIngressClasses());
    expect(server.requests[0]!.url).toBe('/apis/networking.k8s.io/v1/ingressclasses?limit=500');
  });

  it('reads IngressClassParams as a cluster-scoped custom object; missing, or its CRD missing, is undefined', async () => {
    const stored = fake.putIngressClassParams({
      metadata: { name: 'alb-cfg' },
      spec: {
        scheme: 'internal',
        subnets: { tags: { 'kubernetes.io/role/internal-elb': ['1'] } },
        tags: [{ key: 'team', value: 'shop' }],
        listeners: [{ protocol: 'HTTPS', port: 443, listenerAttributes: [{ key: 'k', value: 'v' }] }],
      },
    });
    expect(await port.getIngressClassParams('alb-cfg')).toEqual(stored);
    expect(server.requests[0]!.url).toBe('/apis/elbv2.k8s.aws/v1beta1/ingressclassparams/alb-cfg');
    expect(await port.getIngressClassParams('other')).toBeUndefined();
    fake.paramsCrdInstalled = false;
    expect(await port.getIngressClassParams('alb-cfg')).toBeUndefined();
  });

  it('reads a Namespace with its labels; 404 is undefined', async () => {
    fake.putNamespace({ metadata: { name: 'shop', labels: { team: 'shop' } } });
    expect(await port.getNamespace('shop')).toMatchObject({ metadata: { labels: { team: 'shop' } } });
    expect(await port.getNamespace('none')).toBeUndefined();
    expect(server.requests[0]!.url).toBe('/api/v1/namespaces/shop');
  });

  it('replaces the finalizers with a merge patch guarded by resourceVersion; a stale one is 409', async () => {
    const rv = fake.putIngress(ingress('web')).metadata.resourceVersion!;
    const written = await port.setIngressFinalizers('shop', 'web', [IMPLICIT_GROUP_FINALIZER], { resourceVersion: rv });
    expect(written.metadata.finalizers).toEqual([IMPLICIT_GROUP_FINALIZER]);
    expect(server.requests[0]).toMatchObject({
      method: 'PATCH',
      url: '/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web',
    });
    expect(server.requests[0]!.headers['content-type']).toBe('application/merge-patch+json');
    expect(JSON.parse(server.requests[0]!.body)).toEqual({
      metadata: { finalizers: [IMPLICIT_GROUP_FINALIZER], resourceVersion: rv },
    });
    const stale = await port.setIngressFinalizers('shop', 'web', [], { resourceVersion: rv }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(KubernetesApiError);
    expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(fake.ingresses.get('shop/web')!.metadata.finalizers).toEqual([IMPLICIT_GROUP_FINALIZER]);
    await expect(port.setIngressFinalizers('shop', 'gone', [], { resourceVersion: rv })).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it('removes the last finalizer with null, and the Ingress being deleted goes', async () => {
    fake.putIngress({
      ...ingress('web'),
      metadata: { ...ingress('web').metadata, finalizers: [IMPLICIT_GROUP_FINALIZER] },
    });
    fake.deleteIngress('shop', 'web');
    const terminating = (await port.getIngress('shop', 'web'))!;
    expect(terminating.metadata.deletionTimestamp).toBe('2026-11-02T08:00:00Z');
    await port.setIngressFinalizers('shop', 'web', [], { resourceVersion: terminating.metadata.resourceVersion! });
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({
      metadata: { finalizers: null, resourceVersion: terminating.metadata.resourceVersion },
    });
    expect(await port.getIngress('shop', 'web')).toBeUndefined();
  });

  it('writes the load balancer entries to the status subresource, unguarded; an empty list as null', async () => {
    fake.putIngress(ingress('web'));
    const entries = [{ hostname: 'k8s-shop-web-0123456789.eu-west-1.elb.amazonaws.com' }];
    const written = await port.setIngressStatus('shop', 'web', entries);
    expect(written.status).toEqual({ loadBalancer: { ingress: entries } });
    expect(server.requests[0]).toMatchObject({
      method: 'PATCH',
      url: '/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web/status',
    });
    expect(JSON.parse(server.requests[0]!.body)).toEqual({ status: { loadBalancer: { ingress: entries } } });
    const cleared = await port.setIngressStatus('shop', 'web', []);
    expect(JSON.parse(server.requests[1]!.body)).toEqual({ status: { loadBalancer: { ingress: null } } });
    expect(cleared.status).toEqual({ loadBalancer: {} });
    expect(fake.callCount('setIngressStatus')).toBe(2);
  });

  it('hands back other API errors as KubernetesApiError, with status and reason', async () => {
    fake.queueError('listIngresses', new KubernetesApiError(403, 'Forbidden', 'ingresses is forbidden'));
    await expect(port.listIngresses()).rejects.toMatchObject({ statusCode: 403, reason: 'Forbidden' });
    fake.putIngress(ingress('web'));
    fake.queueError('getIngress', new KubernetesApiError(500, 'InternalError', 'etcd'));
    await expect(port.getIngress('shop', 'web')).rejects.toBeInstanceOf(KubernetesApiError);
  });
});

describe('createIngressesPort', () => {
  let server: FakeIngressesServer;

  beforeEach(async () => {
    const fake = new FakeIngresses(new FakeClock());
    fake.putIngress(ingress('web'));
    server = await startFakeIngressesServer(fake);
  });

  afterEach(async () => {
    await server.close();
  });

  it('goes over the REST client with the token of the Secrets Manager secret (token mode)', async () => {
    const deps = new FakeAccessDeps({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    deps.secretValues = [JSON.stringify({ token: 'sa-token', ca: FAKE_API_SERVER_CA_DATA })];
    const config = loadConfig({
      CLUSTER_NAME: 'prod',
      AWS_REGION: 'eu-west-1',
      KUBERNETES_AUTH_MODE: 'token',
      KUBERNETES_API_ENDPOINT: server.url,
      KUBERNETES_TOKEN_SECRET_ID: 'ccm/kubernetes',
    });
    const port = createIngressesPort(config, deps);
    expect((await port.listIngresses()).map((i) => i.metadata.name)).toEqual(['web']);
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sa-token');
  });

  it('goes over client-node with the default kubeconfig (kubeconfig mode)', async () => {
    const deps = new FakeAccessDeps({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    deps.loadDefaultKubeConfig = () =>
      tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, 'from-kubeconfig');
    const port = createIngressesPort(loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1' }), deps);
    expect(await port.getIngress('shop', 'web')).toMatchObject({ metadata: { name: 'web' } });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer from-kubeconfig');
  });
});
