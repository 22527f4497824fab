import { request } from 'node:https';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.ts';
import { ClientNodeKubernetes } from '../client-node-adapter.ts';
import { ClientNodeServices } from '../client-node-services.ts';
import { KubernetesApiError } from '../errors.ts';
import { tokenKubeConfig } from '../lambda-access.ts';
import type { Node, Service } from '../types.ts';
import { FAKE_API_SERVER_CA_DATA } from './api-server.ts';
import { FakeKubernetes } from './fake-kubernetes.ts';
import { type FakeKubernetesServer, startFakeKubernetesServer } from './server.ts';

/**
 * The API-server semantics FakeKubernetes has, as the adapters see them over HTTPS: what a write to the main
 * resource and to `/status` may change, conflicts, finalizers, and 410 Gone for lists and watches from a
 * compacted resourceVersion.
 */

let fake: FakeKubernetes;
let server: FakeKubernetesServer;
let nodes: ClientNodeKubernetes;
let services: ClientNodeServices;

beforeEach(async () => {
  fake = new FakeKubernetes(new FakeClock());
  server = await startFakeKubernetesServer(fake, { authenticate: (token) => token === 'good' });
  const kubeConfig = tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, 'good');
  nodes = new ClientNodeKubernetes(kubeConfig);
  services = new ClientNodeServices(kubeConfig);
});

afterEach(async () => {
  await server.close();
});

const node = (name: string, extra: Partial<Node['metadata']> = {}): Node => ({
  metadata: { name, labels: { role: 'worker' }, ...extra },
  spec: { providerID: `aws:///eu-west-1a/i-${name}` },
  status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
});

const service = (name: string, extra: Partial<Service['metadata']> = {}): Service => ({
  metadata: { name, namespace: 'shop', ...extra },
  spec: { type: 'LoadBalancer', ports: [{ protocol: 'TCP', port: 80, nodePort: 30080 }] },
  status: { loadBalancer: {} },
});

/** A raw request with the server's CA and the accepted token: status and parsed body (or NDJSON lines). */
async function call(path: string, token = 'good'): Promise<{ status: number; body: unknown; lines: unknown[] }> {
  const ca = Buffer.from(FAKE_API_SERVER_CA_DATA, 'base64');
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}${path}`, { ca, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => {
        const lines = text.split('\n').filter(Boolean);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body, lines: lines.map((l) => JSON.parse(l)) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('writes', () => {
  // As kube-apiserver's status strategies do (test/k8s-contract/): /status takes metadata, never the spec.
  it('ignores status in a patch of the main resource, and the spec in a patch of /status', async () => {
    const stored = fake.putNode(node('n1'));
    const addresses = [{ type: 'InternalIP' as const, address: '10.9.9.9' }];

    const main = await nodes.patchNode(
      'n1',
      { metadata: { labels: { zone: 'a' } }, status: { addresses } },
      { resourceVersion: stored.metadata.resourceVersion! },
    );
    expect(main.metadata.labels).toEqual({ role: 'worker', zone: 'a' });
    expect(main.status?.addresses).toEqual(stored.status?.addresses);

    const viaStatus = await nodes.patchNodeStatus(
      'n1',
      { metadata: { labels: { zone: 'b' } }, spec: { unschedulable: true }, status: { addresses } },
      { resourceVersion: main.metadata.resourceVersion! },
    );
    expect(viaStatus.status?.addresses).toEqual(addresses);
    expect(viaStatus.metadata.labels).toEqual({ role: 'worker', zone: 'b' });
    expect(viaStatus.spec?.unschedulable).toBeUndefined();
    expect(fake.nodes.get('n1')).toEqual(viaStatus);
  });

  it('answers 409 Conflict to a write guarded by a resourceVersion another writer has moved past', async () => {
    const stored = fake.putService(service('web'));
    fake.mutateService('shop', 'web', (s) => {
      s.metadata.labels = { by: 'someone-else' };
    });
    const err = await services
      .patchService(
        'shop',
        'web',
        { metadata: { finalizers: ['x/y'] } },
        { resourceVersion: stored.metadata.resourceVersion! },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubernetesApiError);
    expect(err).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(fake.services.get('shop/web')!.metadata.finalizers).toBeUndefined();
  });

  it('keeps an object with finalizers, marked for deletion, until its last finalizer is removed', async () => {
    fake.putNode(node('n1', { finalizers: ['example.com/drain'] }));
    await nodes.deleteNode('n1', {});
    const terminating = await nodes.getNode('n1');
    expect(terminating?.metadata.deletionTimestamp).toBeDefined();

    const err = await nodes
      .patchNode(
        'n1',
        { metadata: { finalizers: ['example.com/drain', 'new/one'] } },
        { resourceVersion: terminating!.metadata.resourceVersion! },
      )
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ statusCode: 422, reason: 'Invalid' });

    await nodes.patchNode(
      'n1',
      { metadata: { finalizers: null } },
      { resourceVersion: terminating!.metadata.resourceVersion! },
    );
    expect(await nodes.getNode('n1')).toBeUndefined();
  });

  it('answers 401 to a token it does not accept, and a queued error as the API server would', async () => {
    expect((await call('/api/v1/nodes', 'bad')).status).toBe(401);
    fake.queueError('listNodes', new KubernetesApiError(429, 'TooManyRequests', 'slow down'));
    await expect(nodes.listNodes()).rejects.toMatchObject({
      statusCode: 429,
      reason: 'TooManyRequests',
      message: 'slow down',
    });
  });
});

describe('lists', () => {
  it('answers a list with the current resourceVersion and pages with an opaque continue token', async () => {
    for (const name of ['c', 'a', 'b']) fake.putNode(node(name));
    const first = await call('/api/v1/nodes?limit=2');
    const page = first.body as { metadata: { resourceVersion: string; continue: string }; items: Node[] };
    expect(page.metadata.resourceVersion).toBe(String(fake.currentRevision()));
    expect(page.items.map((n) => n.metadata.name)).toEqual(['a', 'b']);
    const second = await call(`/api/v1/nodes?limit=2&continue=${page.metadata.continue}`);
    expect((second.body as { items: Node[] }).items.map((n) => n.metadata.name)).toEqual(['c']);
  });

  it('answers 410 Gone to a continue token from before a compaction', async () => {
    for (const name of ['a', 'b']) fake.putNode(node(name));
    const page = (await call('/api/v1/nodes?limit=1')).body as { metadata: { continue: string } };
    fake.mutateNode('a', (n) => {
      n.metadata.labels = { changed: 'yes' };
    });
    server.compact();
    const expired = await call(`/api/v1/nodes?limit=1&continue=${page.metadata.continue}`);
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });

  it('answers 410 Gone to an Exact list older than a compaction, and 504 to a resourceVersion from the future', async () => {
    const old = fake.putNode(node('a')).metadata.resourceVersion;
    fake.putNode(node('b'));
    server.compact();
    expect((await call(`/api/v1/nodes?resourceVersion=${old}&resourceVersionMatch=Exact`)).status).toBe(410);
    // NotOlderThan: anything at least that new will do, so the current state is the answer.
    expect((await call(`/api/v1/nodes?resourceVersion=${old}`)).status).toBe(200);
    expect((await call(`/api/v1/nodes?resourceVersion=${fake.currentRevision() + 10}`)).status).toBe(504);
  });

  it('selects EndpointSlices by label and namespace', async () => {
    const slice = (name: string, namespace: string, svc: string) =>
      fake.putEndpointSlice({
        metadata: { name, namespace, labels: { 'kubernetes.io/service-name': svc } },
        addressType: 'IPv4',
        endpoints: [],
      });
    const wanted = slice('web-1', 'shop', 'web');
    slice('api-1', 'shop', 'api');
    slice('web-1', 'other', 'web');
    expect(await services.listEndpointSlices('shop', 'web')).toEqual([wanted]);
    const all = await call('/apis/discovery.k8s.io/v1/endpointslices?labelSelector=kubernetes.io/service-name!=api');
    expect((all.body as { items: unknown[] }).items).toHaveLength(2);
  });
});

describe('watches', () => {
  it('replays the changes after a resourceVersion, deletions included, with their new resourceVersions', async () => {
    const from = fake.putService(service('web')).metadata.resourceVersion;
    fake.mutateService('shop', 'web', (s) => {
      s.metadata.labels = { v: '2' };
    });
    fake.putService(service('api'));
    fake.deleteService('shop', 'web');
    const watch = await call(`/api/v1/namespaces/shop/services?watch=true&resourceVersion=${from}`);
    const events = watch.lines as { type: string; object: Service }[];
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
      'MODIFIED web',
      'ADDED api',
      'DELETED web',
    ]);
    expect(Number(events[2]!.object.metadata.resourceVersion)).toBe(fake.currentRevision());
  });

  it('answers a watch from before a compaction with an ERROR event carrying 410 Gone', async () => {
    const from = fake.putNode(node('a')).metadata.resourceVersion;
    fake.putNode(node('b'));
    server.compact();
    const watch = await call(`/api/v1/nodes?watch=true&resourceVersion=${from}`);
    expect(watch.status).toBe(200);
    expect(watch.lines).toEqual([
      { type: 'ERROR', object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired' }) },
    ]);
  });

  it('starts a watch without resourceVersion with every object as ADDED', async () => {
    fake.putNode(node('a'));
    const watch = await call('/api/v1/nodes?watch=true');
    expect(watch.lines).toEqual([{ type: 'ADDED', object: fake.nodes.get('a') }]);
  });
});
