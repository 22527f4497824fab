import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { KubernetesApiError } from './errors.ts';
import { ADAPTER_CLIENTS } from './fakes/adapter-clients.ts';
import { status } from './fakes/api-server.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { type FakeKubernetesServer, startFakeKubernetesServer } from './fakes/server.ts';
import type { KubernetesPort } from './port.ts';
import type { Node } from './types.ts';

/**
 * The adapter's Node requests against FakeKubernetes served over HTTPS: the same API-server semantics
 * (resourceVersion conflicts, status and main resource, finalizers, 410 on expired continue tokens) the
 * reconcilers' tests run on. These tests pin the exact requests (method, path, Content-Type, body) and
 * the error translation. Events: client-node-events.test.ts.
 */

function node(name: string): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: `uid-${name}`,
      creationTimestamp: '2026-11-02T07:00:00Z',
      labels: { 'kubernetes.io/hostname': name },
    },
    spec: {
      providerID: `aws:///eu-west-1a/i-${name}`,
      taints: [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' }],
    },
    status: {
      addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          lastHeartbeatTime: '2026-11-02T07:59:30Z',
          lastTransitionTime: '2026-11-02T07:01:00Z',
        },
      ],
    },
  };
}

describe.each(ADAPTER_CLIENTS)('KubernetesPort over $name', (client) => {
  let fake: FakeKubernetes;
  let server: FakeKubernetesServer;
  let kubernetes: KubernetesPort;
  let clock: FakeClock;

  beforeEach(async () => {
    clock = new FakeClock(Date.parse('2026-11-02T08:00:00Z'));
    fake = new FakeKubernetes(clock);
    server = await startFakeKubernetesServer(fake);
    kubernetes = client.kubernetes(server, { clock });
  });

  afterEach(async () => {
    await server.close();
  });

  describe('getNode', () => {
    it('reads the Node and returns it as the API sent it, timestamps included', async () => {
      const stored = fake.putNode(node('n1'));

      const got = await kubernetes.getNode('n1');

      expect(got).toEqual(stored);
      expect(got?.status?.conditions?.[0]?.lastHeartbeatTime).toBe('2026-11-02T07:59:30Z');
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]).toMatchObject({ method: 'GET', url: '/api/v1/nodes/n1' });
      expect(server.requests[0]!.headers.authorization).toBe('Bearer test-token');
      expect(server.requests[0]!.headers['user-agent']).toBe('serverless-ccm');
    });

    it('answers undefined for 404', async () => {
      await expect(kubernetes.getNode('missing')).resolves.toBeUndefined();
    });

    it('escapes the name in the path', async () => {
      await kubernetes.getNode('a b');
      expect(server.requests[0]!.url).toBe('/api/v1/nodes/a%20b');
    });
  });

  describe('listNodes', () => {
    const CONTINUED = /^\/api\/v1\/nodes\?continue=[A-Za-z0-9_-]+&limit=500$/;

    it('pages with limit=500 and continue until the list ends', async () => {
      for (let i = 0; i < 1001; i++) fake.putNode(node(`n${i}`));

      const nodes = await kubernetes.listNodes();

      expect(nodes).toHaveLength(1001);
      expect(new Set(nodes.map((n) => n.metadata.name)).size).toBe(1001);
      expect(nodes.find((n) => n.metadata.name === 'n1000')).toEqual(fake.nodes.get('n1000'));
      const urls = server.requests.map((r) => `${r.method} ${r.url}`);
      expect(urls[0]).toBe('GET /api/v1/nodes?limit=500');
      expect(urls.slice(1).map((u) => u.replace(/^GET /, ''))).toEqual([
        expect.stringMatching(CONTINUED),
        expect.stringMatching(CONTINUED),
      ]);
    });

    it('returns an empty list for no Nodes', async () => {
      await expect(kubernetes.listNodes()).resolves.toEqual([]);
      expect(server.requests).toHaveLength(1);
    });

    it('starts again once when a continue token has expired (410)', async () => {
      for (let i = 0; i < 600; i++) fake.putNode(node(`n${i}`));
      let compacted = false;
      // Between the first and second page the cluster changes and etcd compacts the first page's revision.
      server.intercept = (req) => {
        if (req.query.get('continue') && !compacted) {
          compacted = true;
          fake.mutateNode('n0', (n) => {
            n.metadata.labels = { changed: 'yes' };
          });
          server.compact();
        }
        return undefined;
      };

      const nodes = await kubernetes.listNodes();

      expect(nodes).toHaveLength(600);
      expect(nodes.find((n) => n.metadata.name === 'n0')?.metadata.labels).toEqual({ changed: 'yes' });
      expect(server.requests.map((r) => r.url)).toEqual([
        '/api/v1/nodes?limit=500',
        expect.stringMatching(CONTINUED),
        '/api/v1/nodes?limit=500',
        expect.stringMatching(CONTINUED),
      ]);
    });
  });

  describe('patchNode', () => {
    it('sends a JSON merge patch carrying the guard resourceVersion', async () => {
      const rv = fake.putNode(node('n1')).metadata.resourceVersion!;

      const patched = await kubernetes.patchNode(
        'n1',
        { metadata: { labels: { 'topology.kubernetes.io/zone': 'eu-west-1a' } }, spec: { taints: [] } },
        { resourceVersion: rv },
      );

      expect(server.requests).toHaveLength(1);
      const req = server.requests[0]!;
      expect(req.method).toBe('PATCH');
      expect(req.url).toBe('/api/v1/nodes/n1');
      expect(req.headers['content-type']).toBe('application/merge-patch+json');
      expect(JSON.parse(req.body)).toEqual({
        metadata: { labels: { 'topology.kubernetes.io/zone': 'eu-west-1a' }, resourceVersion: rv },
        spec: { taints: [] },
      });
      expect(Number(patched.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
      expect(patched.metadata.labels).toEqual({
        'kubernetes.io/hostname': 'n1',
        'topology.kubernetes.io/zone': 'eu-west-1a',
      });
      expect(patched.metadata.creationTimestamp).toBe('2026-11-02T07:00:00Z');
      expect(patched).toEqual(fake.nodes.get('n1'));
    });

    it('adds metadata.resourceVersion to a patch without metadata', async () => {
      const rv = fake.putNode(node('n1')).metadata.resourceVersion!;

      await kubernetes.patchNode('n1', { spec: { unschedulable: true } }, { resourceVersion: rv });

      expect(JSON.parse(server.requests[0]!.body)).toEqual({
        spec: { unschedulable: true },
        metadata: { resourceVersion: rv },
      });
      expect(fake.nodes.get('n1')!.spec?.unschedulable).toBe(true);
    });

    it('keeps null (delete this field) in the body', async () => {
      const rv = fake.putNode({ ...node('n1'), metadata: { ...node('n1').metadata, annotations: { a: 'b' } } }).metadata
        .resourceVersion!;

      await kubernetes.patchNode('n1', { metadata: { annotations: null } }, { resourceVersion: rv });

      expect(JSON.parse(server.requests[0]!.body)).toEqual({
        metadata: { annotations: null, resourceVersion: rv },
      });
      expect(fake.nodes.get('n1')!.metadata.annotations).toBeUndefined();
    });

    it('leaves status alone: the main resource ignores it', async () => {
      const stored = fake.putNode(node('n1'));

      const patched = await kubernetes.patchNode(
        'n1',
        { status: { addresses: [{ type: 'InternalIP', address: '10.9.9.9' }] } },
        { resourceVersion: stored.metadata.resourceVersion! },
      );

      expect(patched.status).toEqual(stored.status);
    });

    it('translates 409 on a stale resourceVersion to KubernetesApiError 409 Conflict', async () => {
      const rv = fake.putNode(node('n1')).metadata.resourceVersion!;
      fake.mutateNode('n1', (n) => {
        n.metadata.labels = { ...n.metadata.labels, kubelet: 'wrote' };
      });

      const err = await kubernetes
        .patchNode('n1', { metadata: { labels: { a: 'b' } } }, { resourceVersion: rv })
        .catch((e: unknown) => e);

      expect(err).toBeInstanceOf(KubernetesApiError);
      expect(err).toMatchObject({ statusCode: 409, reason: 'Conflict' });
      expect((err as KubernetesApiError).message).toContain('the object has been modified');
      expect((err as KubernetesApiError).cause).toBeDefined();
      expect(fake.nodes.get('n1')!.metadata.labels).not.toHaveProperty('a');
    });

    it('translates 404 to KubernetesApiError 404 NotFound', async () => {
      await expect(kubernetes.patchNode('gone', {}, { resourceVersion: '1' })).rejects.toMatchObject({
        statusCode: 404,
        reason: 'NotFound',
        message: 'nodes "gone" not found',
      });
    });
  });

  describe('patchNodeStatus', () => {
    // The API server's status subresource of a Node keeps the spec but takes labels (test/k8s-contract/).
    it('patches the status subresource with a guarded merge patch, which leaves the spec alone', async () => {
      const rv = fake.putNode(node('n1')).metadata.resourceVersion!;
      const addresses = [{ type: 'InternalIP' as const, address: '10.0.0.9' }];

      const patched = await kubernetes.patchNodeStatus(
        'n1',
        { status: { addresses }, spec: { unschedulable: true } },
        { resourceVersion: rv },
      );

      const req = server.requests[0]!;
      expect(req.method).toBe('PATCH');
      expect(req.url).toBe('/api/v1/nodes/n1/status');
      expect(req.headers['content-type']).toBe('application/merge-patch+json');
      expect(JSON.parse(req.body)).toEqual({
        status: { addresses },
        spec: { unschedulable: true },
        metadata: { resourceVersion: rv },
      });
      expect(patched.status?.addresses).toEqual(addresses);
      expect(patched.status?.conditions?.[0]?.lastHeartbeatTime).toBe('2026-11-02T07:59:30Z');
      expect(patched.spec?.unschedulable).toBeUndefined();
    });
  });

  describe('deleteNode', () => {
    it('sends the preconditions in the DeleteOptions body', async () => {
      const rv = fake.putNode(node('n1')).metadata.resourceVersion!;

      await kubernetes.deleteNode('n1', { uid: 'uid-n1', resourceVersion: rv });

      const req = server.requests[0]!;
      expect(req.method).toBe('DELETE');
      expect(req.url).toBe('/api/v1/nodes/n1');
      expect(req.headers['content-type']).toBe('application/json');
      expect(JSON.parse(req.body)).toEqual({ preconditions: { uid: 'uid-n1', resourceVersion: rv } });
      expect(fake.nodes.has('n1')).toBe(false);
    });

    it('leaves out an absent precondition', async () => {
      fake.putNode(node('n1'));

      await kubernetes.deleteNode('n1', { uid: 'uid-n1' });

      expect(JSON.parse(server.requests[0]!.body)).toEqual({ preconditions: { uid: 'uid-n1' } });
    });

    it('translates a failed precondition to 409 Conflict and keeps the Node', async () => {
      fake.putNode(node('n1'));

      await expect(kubernetes.deleteNode('n1', { uid: 'uid-old' })).rejects.toMatchObject({
        statusCode: 409,
        reason: 'Conflict',
      });
      expect(fake.nodes.has('n1')).toBe(true);
    });

    it('leaves a Node with finalizers in place, marked for deletion, until they are removed', async () => {
      fake.putNode({ ...node('n1'), metadata: { ...node('n1').metadata, finalizers: ['example.com/hold'] } });

      await kubernetes.deleteNode('n1', { uid: 'uid-n1' });

      const terminating = await kubernetes.getNode('n1');
      expect(terminating?.metadata.deletionTimestamp).toBe('2026-11-02T08:00:00Z');
      await kubernetes.patchNode(
        'n1',
        { metadata: { finalizers: null } },
        { resourceVersion: terminating!.metadata.resourceVersion! },
      );
      expect(fake.nodes.has('n1')).toBe(false);
    });

    it('translates 404 to KubernetesApiError 404', async () => {
      await expect(kubernetes.deleteNode('gone', {})).rejects.toMatchObject({ statusCode: 404, reason: 'NotFound' });
    });
  });

  describe('errors', () => {
    it.each([
      [403, status(403, 'Forbidden', 'nodes "n1" is forbidden: User "x" cannot get resource "nodes"'), 'Forbidden'],
      [429, status(429, 'TooManyRequests', 'storage is (re)initializing'), 'TooManyRequests'],
      [500, 'upstream connect error', 'InternalError'],
      [503, '', 'ServiceUnavailable'],
    ])('translates %i to KubernetesApiError with the Status reason', async (code, body, reason) => {
      server.intercept = () => ({ status: code, body });

      const err = await kubernetes.getNode('n1').catch((e: unknown) => e);

      expect(err).toBeInstanceOf(KubernetesApiError);
      expect(err).toMatchObject({ statusCode: code, reason });
      const expectedMessage = typeof body === 'string' ? body || `HTTP ${code} ${reason}` : body.message;
      expect((err as Error).message).toBe(expectedMessage);
    });

    it('translates 401 (which client-node reports without a body) to 401 Unauthorized', async () => {
      await server.close();
      server = await startFakeKubernetesServer(fake, { authenticate: (token) => token === 'another-token' });
      kubernetes = client.kubernetes(server, { clock });

      await expect(kubernetes.listNodes()).rejects.toMatchObject({ statusCode: 401, reason: 'Unauthorized' });
    });

    it('passes a connection failure through untranslated', async () => {
      await server.close();

      const err = await kubernetes.getNode('n1').catch((e: unknown) => e);

      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(KubernetesApiError);
      server = await startFakeKubernetesServer(fake);
    });
  });

  it('reuses its connections instead of opening one per request', async () => {
    // Stock client-node opens a new TLS connection for every request when a CA is configured. undici
    // may open a second one when a request follows the previous response within the same tick.
    const rv = fake.putNode(node('n1')).metadata.resourceVersion!;

    for (let i = 0; i < 3; i++) await kubernetes.getNode('n1');
    await kubernetes.listNodes();
    await kubernetes.patchNode('n1', { metadata: { labels: { a: 'b' } } }, { resourceVersion: rv });
    await kubernetes.getNode('n1');

    expect(server.requests).toHaveLength(6);
    expect(server.connections()).toBeLessThanOrEqual(2);
  });
});
