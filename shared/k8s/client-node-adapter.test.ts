import type { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { ClientNodeKubernetes, EVENT_COMPONENT, EVENT_WRITE_ATTEMPTS, eventName } from './client-node-adapter.ts';
import { KubernetesApiError } from './errors.ts';
import {
  FAKE_API_SERVER_CA_DATA,
  type FakeApiServer,
  type FakeResponse,
  type RecordedRequest,
  startFakeApiServer,
  status,
} from './fake-api-server.ts';
import { tokenKubeConfig } from './lambda-access.ts';
import { applyMergePatch } from './merge-patch.ts';
import type { EventRecord, Node } from './types.ts';

/**
 * The adapter against a local HTTPS server that answers like the API server for Nodes and Events.
 * These tests pin the exact requests (method, path, Content-Type, body) and the error translation.
 */

/** The kubeconfig the Lambdas build (tokenKubeConfig), pointed at the fake API server. */
function kubeConfigFor(server: FakeApiServer, token = 'test-token'): KubeConfig {
  return tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, token);
}

function node(name: string, resourceVersion = '100'): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion,
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

interface StoredEvent {
  metadata: { name: string; namespace: string; resourceVersion: string };
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  message: string;
  [field: string]: unknown;
}

/** Routes the Node and Event paths of the core API over an in-memory store. */
class NodeApi {
  readonly nodes = new Map<string, Node>();
  /** By `namespace/name`. */
  readonly events = new Map<string, StoredEvent>();
  private eventRevision = 500;

  respond = (req: RecordedRequest): FakeResponse => {
    const nodePath = req.path.match(/^\/api\/v1\/nodes\/([^/]+)(\/status)?$/);
    if (req.method === 'GET' && req.path === '/api/v1/nodes') return this.list(req.query);
    const eventsPath = req.path.match(/^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/);
    if (eventsPath) return this.event(req, decodeURIComponent(eventsPath[1]!), eventsPath[2]);
    if (!nodePath)
      return { status: 404, body: status(404, 'NotFound', 'the server could not find the requested resource') };
    const name = decodeURIComponent(nodePath[1]!);
    const stored = this.nodes.get(name);
    if (!stored) return { status: 404, body: status(404, 'NotFound', `nodes "${name}" not found`) };
    if (req.method === 'GET') return { status: 200, body: stored };
    if (req.method === 'PATCH') {
      if (req.headers['content-type'] !== 'application/merge-patch+json') {
        return { status: 415, body: status(415, 'UnsupportedMediaType', 'merge patch expected') };
      }
      const patch = JSON.parse(req.body) as Node;
      if (patch.metadata?.resourceVersion !== stored.metadata.resourceVersion) {
        return {
          status: 409,
          body: status(
            409,
            'Conflict',
            `Operation cannot be fulfilled on nodes "${name}": the object has been modified; please apply your changes to the latest version and try again`,
          ),
        };
      }
      const next: Node = {
        ...stored,
        metadata: { ...stored.metadata, labels: { ...stored.metadata.labels, ...patch.metadata.labels } },
        spec: patch.spec ? { ...stored.spec, ...patch.spec } : stored.spec,
        status: patch.status ? { ...stored.status, ...patch.status } : stored.status,
      };
      next.metadata.resourceVersion = String(Number(stored.metadata.resourceVersion) + 1);
      this.nodes.set(name, next);
      return { status: 200, body: next };
    }
    if (req.method === 'DELETE') {
      const { preconditions } = JSON.parse(req.body) as { preconditions?: { uid?: string; resourceVersion?: string } };
      if (preconditions?.uid && preconditions.uid !== stored.metadata.uid) {
        return {
          status: 409,
          body: status(
            409,
            'Conflict',
            `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${stored.metadata.uid}`,
          ),
        };
      }
      this.nodes.delete(name);
      return { status: 200, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' } };
    }
    return { status: 405, body: status(405, 'MethodNotAllowed', req.method) };
  };

  /** Stores an Event as another writer would (resourceVersion bumped). */
  putEvent(event: StoredEvent): StoredEvent {
    const stored = structuredClone(event);
    stored.metadata.resourceVersion = String(++this.eventRevision);
    this.events.set(`${stored.metadata.namespace}/${stored.metadata.name}`, stored);
    return stored;
  }

  /** Create (409 AlreadyExists on a taken name), read, and merge patch guarded by resourceVersion. */
  private event(req: RecordedRequest, namespace: string, encodedName: string | undefined): FakeResponse {
    if (encodedName === undefined) {
      if (req.method !== 'POST') return { status: 405, body: status(405, 'MethodNotAllowed', req.method) };
      const body = JSON.parse(req.body) as StoredEvent;
      if (this.events.has(`${namespace}/${body.metadata.name}`)) {
        return {
          status: 409,
          body: status(409, 'AlreadyExists', `events "${body.metadata.name}" already exists`),
        };
      }
      return { status: 201, body: this.putEvent({ ...body, metadata: { ...body.metadata, namespace } }) };
    }
    const name = decodeURIComponent(encodedName);
    const stored = this.events.get(`${namespace}/${name}`);
    if (!stored) return { status: 404, body: status(404, 'NotFound', `events "${name}" not found`) };
    if (req.method === 'GET') return { status: 200, body: stored };
    if (req.method !== 'PATCH') return { status: 405, body: status(405, 'MethodNotAllowed', req.method) };
    if (req.headers['content-type'] !== 'application/merge-patch+json') {
      return { status: 415, body: status(415, 'UnsupportedMediaType', 'merge patch expected') };
    }
    const patch = JSON.parse(req.body) as { metadata?: { resourceVersion?: string } };
    const guard = patch.metadata?.resourceVersion;
    if (guard !== undefined && guard !== stored.metadata.resourceVersion) {
      return {
        status: 409,
        body: status(
          409,
          'Conflict',
          `Operation cannot be fulfilled on events "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        ),
      };
    }
    return { status: 200, body: this.putEvent(applyMergePatch(stored, patch)) };
  }

  /** Pages by position, with the position as the continue token. */
  private list(query: URLSearchParams): FakeResponse {
    const all = [...this.nodes.values()];
    const start = Number(query.get('continue') ?? '0');
    const limit = Number(query.get('limit') ?? all.length);
    const items = all.slice(start, start + limit);
    const next = start + limit < all.length ? String(start + limit) : undefined;
    return {
      status: 200,
      body: { kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '999', continue: next }, items },
    };
  }
}

/** An Event as the API server would store it after a create by another container. */
function storedShape(event: EventRecord): StoredEvent {
  const namespace = event.involvedObject.namespace ?? 'default';
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: eventName(event), namespace, resourceVersion: '1' },
    involvedObject: event.involvedObject,
    type: event.type,
    reason: event.reason,
    message: event.message,
    source: { component: EVENT_COMPONENT },
    count: 1,
    firstTimestamp: '2026-11-02T07:00:00Z',
    lastTimestamp: '2026-11-02T07:00:00Z',
  };
}

describe('ClientNodeKubernetes', () => {
  let api: NodeApi;
  let server: FakeApiServer;
  let kubernetes: ClientNodeKubernetes;
  let clock: FakeClock;

  beforeEach(async () => {
    api = new NodeApi();
    server = await startFakeApiServer((req) => api.respond(req));
    clock = new FakeClock(Date.parse('2026-11-02T08:00:00Z'));
    kubernetes = new ClientNodeKubernetes(kubeConfigFor(server), { clock });
  });

  afterEach(async () => {
    await server.close();
  });

  describe('getNode', () => {
    it('reads the Node and returns it as the API sent it, timestamps included', async () => {
      api.nodes.set('n1', node('n1'));

      const got = await kubernetes.getNode('n1');

      expect(got).toEqual(node('n1'));
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
    it('pages with limit=500 and continue until the list ends', async () => {
      for (let i = 0; i < 1001; i++) api.nodes.set(`n${i}`, node(`n${i}`));

      const nodes = await kubernetes.listNodes();

      expect(nodes).toHaveLength(1001);
      expect(nodes[1000]).toEqual(node('n1000'));
      expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
        'GET /api/v1/nodes?limit=500',
        'GET /api/v1/nodes?continue=500&limit=500',
        'GET /api/v1/nodes?continue=1000&limit=500',
      ]);
    });

    it('returns an empty list for no Nodes', async () => {
      await expect(kubernetes.listNodes()).resolves.toEqual([]);
      expect(server.requests).toHaveLength(1);
    });

    it('starts again once when a continue token has expired (410)', async () => {
      for (let i = 0; i < 600; i++) api.nodes.set(`n${i}`, node(`n${i}`));
      let expired = false;
      const respond = api.respond;
      api.respond = (req) => {
        if (req.query.get('continue') && !expired) {
          expired = true;
          return { status: 410, body: status(410, 'Expired', 'The provided continue parameter is too old') };
        }
        return respond(req);
      };

      const nodes = await kubernetes.listNodes();

      expect(nodes).toHaveLength(600);
      expect(server.requests.map((r) => r.url)).toEqual([
        '/api/v1/nodes?limit=500',
        '/api/v1/nodes?continue=500&limit=500',
        '/api/v1/nodes?limit=500',
        '/api/v1/nodes?continue=500&limit=500',
      ]);
    });
  });

  describe('patchNode', () => {
    it('sends a JSON merge patch carrying the guard resourceVersion', async () => {
      api.nodes.set('n1', node('n1', '100'));

      const patched = await kubernetes.patchNode(
        'n1',
        { metadata: { labels: { 'topology.kubernetes.io/zone': 'eu-west-1a' } }, spec: { taints: [] } },
        { resourceVersion: '100' },
      );

      expect(server.requests).toHaveLength(1);
      const req = server.requests[0]!;
      expect(req.method).toBe('PATCH');
      expect(req.url).toBe('/api/v1/nodes/n1');
      expect(req.headers['content-type']).toBe('application/merge-patch+json');
      expect(JSON.parse(req.body)).toEqual({
        metadata: { labels: { 'topology.kubernetes.io/zone': 'eu-west-1a' }, resourceVersion: '100' },
        spec: { taints: [] },
      });
      expect(patched.metadata.resourceVersion).toBe('101');
      expect(patched.metadata.labels).toEqual({
        'kubernetes.io/hostname': 'n1',
        'topology.kubernetes.io/zone': 'eu-west-1a',
      });
      expect(patched.metadata.creationTimestamp).toBe('2026-11-02T07:00:00Z');
    });

    it('adds metadata.resourceVersion to a patch without metadata', async () => {
      api.nodes.set('n1', node('n1', '100'));

      await kubernetes.patchNode('n1', { spec: { unschedulable: true } }, { resourceVersion: '100' });

      expect(JSON.parse(server.requests[0]!.body)).toEqual({
        spec: { unschedulable: true },
        metadata: { resourceVersion: '100' },
      });
    });

    it('keeps null (delete this field) in the body', async () => {
      api.nodes.set('n1', node('n1', '100'));

      await kubernetes.patchNode('n1', { metadata: { annotations: null } }, { resourceVersion: '100' });

      expect(JSON.parse(server.requests[0]!.body)).toEqual({
        metadata: { annotations: null, resourceVersion: '100' },
      });
    });

    it('translates 409 on a stale resourceVersion to KubernetesApiError 409 Conflict', async () => {
      api.nodes.set('n1', node('n1', '105'));

      const err = await kubernetes
        .patchNode('n1', { metadata: { labels: { a: 'b' } } }, { resourceVersion: '100' })
        .catch((e: unknown) => e);

      expect(err).toBeInstanceOf(KubernetesApiError);
      expect(err).toMatchObject({ statusCode: 409, reason: 'Conflict' });
      expect((err as KubernetesApiError).message).toContain('the object has been modified');
      expect((err as KubernetesApiError).cause).toBeDefined();
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
    it('patches the status subresource with a guarded merge patch', async () => {
      api.nodes.set('n1', node('n1', '7'));
      const addresses = [{ type: 'InternalIP' as const, address: '10.0.0.9' }];

      const patched = await kubernetes.patchNodeStatus('n1', { status: { addresses } }, { resourceVersion: '7' });

      const req = server.requests[0]!;
      expect(req.method).toBe('PATCH');
      expect(req.url).toBe('/api/v1/nodes/n1/status');
      expect(req.headers['content-type']).toBe('application/merge-patch+json');
      expect(JSON.parse(req.body)).toEqual({ status: { addresses }, metadata: { resourceVersion: '7' } });
      expect(patched.status?.addresses).toEqual(addresses);
      expect(patched.status?.conditions?.[0]?.lastHeartbeatTime).toBe('2026-11-02T07:59:30Z');
    });
  });

  describe('deleteNode', () => {
    it('sends the preconditions in the DeleteOptions body', async () => {
      api.nodes.set('n1', node('n1', '100'));

      await kubernetes.deleteNode('n1', { uid: 'uid-n1', resourceVersion: '100' });

      const req = server.requests[0]!;
      expect(req.method).toBe('DELETE');
      expect(req.url).toBe('/api/v1/nodes/n1');
      expect(req.headers['content-type']).toBe('application/json');
      expect(JSON.parse(req.body)).toEqual({ preconditions: { uid: 'uid-n1', resourceVersion: '100' } });
      expect(api.nodes.has('n1')).toBe(false);
    });

    it('leaves out an absent precondition', async () => {
      api.nodes.set('n1', node('n1'));

      await kubernetes.deleteNode('n1', { uid: 'uid-n1' });

      expect(JSON.parse(server.requests[0]!.body)).toEqual({ preconditions: { uid: 'uid-n1' } });
    });

    it('translates a failed precondition to 409 Conflict and keeps the Node', async () => {
      api.nodes.set('n1', node('n1'));

      await expect(kubernetes.deleteNode('n1', { uid: 'uid-old' })).rejects.toMatchObject({
        statusCode: 409,
        reason: 'Conflict',
      });
      expect(api.nodes.has('n1')).toBe(true);
    });

    it('translates 404 to KubernetesApiError 404', async () => {
      await expect(kubernetes.deleteNode('gone', {})).rejects.toMatchObject({ statusCode: 404, reason: 'NotFound' });
    });
  });

  describe('recordEvent', () => {
    const failing: EventRecord = {
      involvedObject: { apiVersion: 'v1', kind: 'Service', name: 'web', namespace: 'shop', uid: 'uid-web' },
      type: 'Warning',
      reason: 'SyncLoadBalancerFailed',
      message: 'Error syncing load balancer: AccessDenied',
    };
    const requestLines = () => server.requests.map((r) => `${r.method} ${r.url}`);
    const eventPath = (event = failing) => `/api/v1/namespaces/shop/events/${eventName(event)}`;
    const storedEvents = () => [...api.events.values()];

    it('creates a core/v1 Event for a cluster-scoped object in namespace default', async () => {
      await kubernetes.recordEvent({
        involvedObject: { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'uid-n1' },
        type: 'Warning',
        reason: 'InstanceNotFound',
        message: 'instance i-123 no longer exists',
      });

      expect(server.requests).toHaveLength(1);
      const req = server.requests[0]!;
      expect(req.method).toBe('POST');
      expect(req.url).toBe('/api/v1/namespaces/default/events');
      expect(req.headers['content-type']).toBe('application/json');
      const body = JSON.parse(req.body);
      expect(body.metadata.name).toMatch(/^n1\.[0-9a-f]{16}$/);
      expect(body).toEqual({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: body.metadata.name, namespace: 'default' },
        involvedObject: { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'uid-n1' },
        type: 'Warning',
        reason: 'InstanceNotFound',
        message: 'instance i-123 no longer exists',
        source: { component: EVENT_COMPONENT },
        firstTimestamp: '2026-11-02T08:00:00.000Z',
        lastTimestamp: '2026-11-02T08:00:00.000Z',
        count: 1,
        reportingComponent: EVENT_COMPONENT,
      });
    });

    it("uses the object's namespace for a namespaced object", async () => {
      await kubernetes.recordEvent({
        involvedObject: { apiVersion: 'v1', kind: 'Service', name: 'web', namespace: 'shop', uid: 'uid-web' },
        type: 'Normal',
        reason: 'EnsuredLoadBalancer',
        message: 'Ensured load balancer',
      });

      expect(server.requests[0]!.url).toBe('/api/v1/namespaces/shop/events');
      expect(JSON.parse(server.requests[0]!.body).metadata.namespace).toBe('shop');
    });

    it('names an Event after its object and a hash of what makes Events identical', () => {
      // Pinned: a new name after an upgrade would start a second Event instead of counting the first.
      expect(eventName(failing)).toBe('web.e16e2fd8d79f27cd');
      const variants: EventRecord[] = [
        { ...failing, message: 'Error syncing load balancer: Throttling' },
        { ...failing, reason: 'EnsuringLoadBalancer' },
        { ...failing, type: 'Normal' },
        { ...failing, involvedObject: { ...failing.involvedObject, uid: 'uid-web-2' } },
        { ...failing, involvedObject: { ...failing.involvedObject, namespace: 'other' } },
        { ...failing, involvedObject: { ...failing.involvedObject, kind: 'Pod' } },
      ];
      const names = new Set([eventName(failing), ...variants.map(eventName)]);
      expect(names.size).toBe(variants.length + 1);
      // The object's resourceVersion changes on every write: it must not split the count.
      expect(eventName({ ...failing, involvedObject: { ...failing.involvedObject, resourceVersion: '9' } })).toBe(
        eventName(failing),
      );
    });

    it('cuts a long object name so the Event name stays a valid name of at most 253 characters', () => {
      const long = `${'a'.repeat(235)}-${'b'.repeat(17)}`; // 253 characters, a '-' where the cut falls
      const name = eventName({ ...failing, involvedObject: { kind: 'Node', name: long } });

      expect(name.length).toBeLessThanOrEqual(253);
      expect(name).toMatch(/^a{235}\.[0-9a-f]{16}$/);
      expect(eventName({ ...failing, involvedObject: { kind: 'Node', name: 'a'.repeat(253) } })).toHaveLength(253);
    });

    it('counts an identical Event on the existing one: count 2 and a later lastTimestamp', async () => {
      await kubernetes.recordEvent(failing);
      clock.advance(30_000);
      await kubernetes.recordEvent(failing);

      expect(storedEvents()).toHaveLength(1);
      expect(storedEvents()[0]).toMatchObject({
        metadata: { name: eventName(failing) },
        count: 2,
        firstTimestamp: '2026-11-02T08:00:00.000Z',
        lastTimestamp: '2026-11-02T08:00:30.000Z',
        message: failing.message,
      });
      // This container wrote the Event last, so the repeat goes straight to a guarded merge patch.
      expect(requestLines()).toEqual([`POST /api/v1/namespaces/shop/events`, `PATCH ${eventPath()}`]);
      const patch = server.requests[1]!;
      expect(patch.headers['content-type']).toBe('application/merge-patch+json');
      expect(JSON.parse(patch.body)).toEqual({
        metadata: { resourceVersion: '501' },
        count: 2,
        lastTimestamp: '2026-11-02T08:00:30.000Z',
      });
    });

    it('counts an Event another container created: create answers 409 AlreadyExists, then read and patch', async () => {
      await new ClientNodeKubernetes(kubeConfigFor(server), { clock }).recordEvent(failing);
      clock.advance(60_000);
      await kubernetes.recordEvent(failing);
      clock.advance(60_000);
      await kubernetes.recordEvent(failing);

      expect(storedEvents()).toHaveLength(1);
      expect(storedEvents()[0]).toMatchObject({ count: 3, lastTimestamp: '2026-11-02T08:02:00.000Z' });
      expect(requestLines()).toEqual([
        'POST /api/v1/namespaces/shop/events',
        'POST /api/v1/namespaces/shop/events',
        `GET ${eventPath()}`,
        `PATCH ${eventPath()}`,
        `PATCH ${eventPath()}`,
      ]);
    });

    it('creates a separate Event for a different message', async () => {
      await kubernetes.recordEvent(failing);
      await kubernetes.recordEvent({ ...failing, message: 'Error syncing load balancer: Throttling' });

      expect(storedEvents()).toHaveLength(2);
      expect(storedEvents().map((e) => e.count)).toEqual([1, 1]);
      expect(requestLines()).toEqual(['POST /api/v1/namespaces/shop/events', 'POST /api/v1/namespaces/shop/events']);
    });

    it('re-reads and retries when someone else counted the Event meanwhile (409 Conflict)', async () => {
      await kubernetes.recordEvent(failing);
      const respond = api.respond;
      let raced = false;
      api.respond = (req) => {
        if (req.method === 'PATCH' && !raced) {
          raced = true;
          const [stored] = storedEvents();
          api.putEvent({ ...stored!, count: stored!.count + 1 });
        }
        return respond(req);
      };

      await kubernetes.recordEvent(failing);

      expect(storedEvents()).toHaveLength(1);
      expect(storedEvents()[0]!.count).toBe(3);
      expect(requestLines().slice(1)).toEqual([`PATCH ${eventPath()}`, `GET ${eventPath()}`, `PATCH ${eventPath()}`]);
      expect(server.requests.slice(1).map((r) => (r.method === 'PATCH' ? JSON.parse(r.body).count : null))).toEqual([
        2,
        null,
        3,
      ]);
    });

    it('gives up quietly after a bounded number of lost races', async () => {
      await kubernetes.recordEvent(failing);
      const respond = api.respond;
      api.respond = (req) => {
        if (req.method === 'PATCH') {
          const [stored] = storedEvents();
          api.putEvent({ ...stored!, count: stored!.count + 1 });
        }
        return respond(req);
      };

      await expect(kubernetes.recordEvent(failing)).resolves.toBeUndefined();

      const patches = server.requests.filter((r) => r.method === 'PATCH');
      expect(patches).toHaveLength(EVENT_WRITE_ATTEMPTS);
      expect(server.requests.slice(1)).toHaveLength(2 * EVENT_WRITE_ATTEMPTS - 1); // a read between patches
      expect(storedEvents()[0]!.count).toBe(1 + EVENT_WRITE_ATTEMPTS); // only the others' increments
    });

    it('creates the Event again when it expired between the 409 AlreadyExists and the read', async () => {
      api.putEvent({ ...storedShape(failing), count: 4 });
      const respond = api.respond;
      api.respond = (req) => {
        if (req.method === 'GET') api.events.clear(); // --event-ttl passed
        return respond(req);
      };

      await kubernetes.recordEvent(failing);

      expect(requestLines()).toEqual([
        'POST /api/v1/namespaces/shop/events',
        `GET ${eventPath()}`,
        'POST /api/v1/namespaces/shop/events',
      ]);
      expect(storedEvents()).toHaveLength(1);
      expect(storedEvents()[0]!.count).toBe(1);
    });

    it('creates the Event again when the one this container counted has expired', async () => {
      await kubernetes.recordEvent(failing);
      api.events.clear();
      clock.advance(3_600_000);

      await kubernetes.recordEvent(failing);

      expect(requestLines()).toEqual([
        'POST /api/v1/namespaces/shop/events',
        `PATCH ${eventPath()}`,
        'POST /api/v1/namespaces/shop/events',
      ]);
      expect(storedEvents()[0]).toMatchObject({ count: 1, firstTimestamp: '2026-11-02T09:00:00.000Z' });
    });

    it('rejects with the translated API error, as before, when the Event cannot be written', async () => {
      // Callers (recordNodeEvent, recordServiceEvent) catch this and log a warning: an Event is best effort.
      const respond = api.respond;
      api.respond = () => ({
        status: 403,
        body: status(403, 'Forbidden', 'events is forbidden: User "x" cannot create resource "events"'),
      });
      const err = await kubernetes.recordEvent(failing).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KubernetesApiError);
      expect(err).toMatchObject({ statusCode: 403, reason: 'Forbidden' });

      api.respond = respond;
      await kubernetes.recordEvent(failing);
      api.respond = (req) =>
        req.method === 'PATCH' ? { status: 500, body: status(500, 'InternalError', 'etcd timeout') } : respond(req);
      await expect(kubernetes.recordEvent(failing)).rejects.toMatchObject({ statusCode: 500, reason: 'InternalError' });

      // The failed patch dropped what this container knew: the next repeat starts from the create.
      api.respond = respond;
      server.requests.length = 0;
      await kubernetes.recordEvent(failing);
      expect(requestLines()).toEqual([
        'POST /api/v1/namespaces/shop/events',
        `GET ${eventPath()}`,
        `PATCH ${eventPath()}`,
      ]);
      expect(storedEvents()[0]!.count).toBe(2);
    });
  });

  describe('errors', () => {
    it.each([
      [403, status(403, 'Forbidden', 'nodes "n1" is forbidden: User "x" cannot get resource "nodes"'), 'Forbidden'],
      [429, status(429, 'TooManyRequests', 'storage is (re)initializing'), 'TooManyRequests'],
      [500, 'upstream connect error', 'InternalError'],
      [503, '', 'ServiceUnavailable'],
    ])('translates %i to KubernetesApiError with the Status reason', async (code, body, reason) => {
      api.respond = () => ({ status: code, body });

      const err = await kubernetes.getNode('n1').catch((e: unknown) => e);

      expect(err).toBeInstanceOf(KubernetesApiError);
      expect(err).toMatchObject({ statusCode: code, reason });
      const expectedMessage = typeof body === 'string' ? body || `HTTP ${code} ${reason}` : body.message;
      expect((err as Error).message).toBe(expectedMessage);
    });

    it('translates 401 (which client-node reports without a body) to 401 Unauthorized', async () => {
      api.respond = () => ({ status: 401, body: status(401, 'Unauthorized', 'Unauthorized') });

      await expect(kubernetes.listNodes()).rejects.toMatchObject({ statusCode: 401, reason: 'Unauthorized' });
    });

    it('passes a connection failure through untranslated', async () => {
      await server.close();

      const err = await kubernetes.getNode('n1').catch((e: unknown) => e);

      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(KubernetesApiError);
      server = await startFakeApiServer((req) => api.respond(req));
    });
  });

  it('reuses its connections instead of opening one per request', async () => {
    // Stock client-node opens a new TLS connection for every request when a CA is configured. undici
    // may open a second one when a request follows the previous response within the same tick.
    api.nodes.set('n1', node('n1', '1'));

    for (let i = 0; i < 3; i++) await kubernetes.getNode('n1');
    await kubernetes.listNodes();
    await kubernetes.patchNode('n1', { metadata: { labels: { a: 'b' } } }, { resourceVersion: '1' });
    await kubernetes.getNode('n1');

    expect(server.requests).toHaveLength(6);
    expect(server.connections()).toBeLessThanOrEqual(2);
  });
});
