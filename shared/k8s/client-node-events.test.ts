import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { EVENT_COMPONENT, EVENT_WRITE_ATTEMPTS, eventName } from './client-node-adapter.ts';
import { KubernetesApiError } from './errors.ts';
import { ADAPTER_CLIENTS } from './fakes/adapter-clients.ts';
import { status } from './fakes/api-server.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { type FakeKubernetesServer, type StoredEvent, startFakeKubernetesServer } from './fakes/server.ts';
import type { KubernetesPort } from './port.ts';
import type { EventRecord } from './types.ts';

/**
 * recordEvent against FakeKubernetes served over HTTPS, which stores core Events as the API server does
 * (409 AlreadyExists on a taken name, merge patches guarded by resourceVersion). The exact requests are
 * pinned: Events are aggregated by a name derived from their content, across Lambda containers.
 */

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

describe.each(ADAPTER_CLIENTS)('recordEvent over $name', (client) => {
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

  const failing: EventRecord = {
    involvedObject: { apiVersion: 'v1', kind: 'Service', name: 'web', namespace: 'shop', uid: 'uid-web' },
    type: 'Warning',
    reason: 'SyncLoadBalancerFailed',
    message: 'Error syncing load balancer: AccessDenied',
  };
  const requestLines = () => server.requests.map((r) => `${r.method} ${r.url}`);
  const eventPath = (event = failing) => `/api/v1/namespaces/shop/events/${eventName(event)}`;
  const storedEvents = () => [...server.events.values()];

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
    const created = storedEvents()[0]!.metadata.resourceVersion;
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
      metadata: { resourceVersion: created },
      count: 2,
      lastTimestamp: '2026-11-02T08:00:30.000Z',
    });
  });

  it('counts an Event another container created: create answers 409 AlreadyExists, then read and patch', async () => {
    await client.kubernetes(server, { clock }).recordEvent(failing);
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

  it("leaves one record per occurrence in the fake's events, as FakeKubernetes.recordEvent does", async () => {
    await kubernetes.recordEvent(failing);
    await kubernetes.recordEvent(failing);

    expect(fake.eventsFor('Service', 'web', 'SyncLoadBalancerFailed')).toHaveLength(2);
    expect(fake.aggregatedEvents()).toMatchObject([{ count: 2, message: failing.message }]);
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
    let raced = false;
    server.intercept = (req) => {
      if (req.method === 'PATCH' && !raced) {
        raced = true;
        const [stored] = storedEvents();
        server.putEvent({ ...stored!, count: stored!.count! + 1 });
      }
      return undefined;
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
    server.intercept = (req) => {
      if (req.method === 'PATCH') {
        const [stored] = storedEvents();
        server.putEvent({ ...stored!, count: stored!.count! + 1 });
      }
      return undefined;
    };

    await expect(kubernetes.recordEvent(failing)).resolves.toBeUndefined();

    const patches = server.requests.filter((r) => r.method === 'PATCH');
    expect(patches).toHaveLength(EVENT_WRITE_ATTEMPTS);
    expect(server.requests.slice(1)).toHaveLength(2 * EVENT_WRITE_ATTEMPTS - 1); // a read between patches
    expect(storedEvents()[0]!.count).toBe(1 + EVENT_WRITE_ATTEMPTS); // only the others' increments
  });

  it('creates the Event again when it expired between the 409 AlreadyExists and the read', async () => {
    server.putEvent({ ...storedShape(failing), count: 4 });
    server.intercept = (req) => {
      if (req.method === 'GET') server.events.clear(); // --event-ttl passed
      return undefined;
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
    server.events.clear();
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
    server.intercept = () => ({
      status: 403,
      body: status(403, 'Forbidden', 'events is forbidden: User "x" cannot create resource "events"'),
    });
    const err = await kubernetes.recordEvent(failing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubernetesApiError);
    expect(err).toMatchObject({ statusCode: 403, reason: 'Forbidden' });

    server.intercept = undefined;
    await kubernetes.recordEvent(failing);
    server.intercept = (req) =>
      req.method === 'PATCH' ? { status: 500, body: status(500, 'InternalError', 'etcd timeout') } : undefined;
    await expect(kubernetes.recordEvent(failing)).rejects.toMatchObject({ statusCode: 500, reason: 'InternalError' });

    // The failed patch dropped what this container knew: the next repeat starts from the create.
    server.intercept = undefined;
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
