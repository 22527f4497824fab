import { beforeEach, describe, expect, it } from 'vitest';
import { makeNode } from '../../../test/helpers/nodes.ts';
import { FakeClock } from '../../clock.ts';
import { KubernetesApiError } from '../errors.ts';
import { FakeKubernetes } from './fake-kubernetes.ts';

let clock: FakeClock;
let kube: FakeKubernetes;
beforeEach(() => {
  clock = new FakeClock();
  kube = new FakeKubernetes(clock);
});

describe('FakeKubernetes', () => {
  it('bumps resourceVersion on every write and answers 409 to a write guarded by a stale one', async () => {
    const created = kube.putNode(makeNode('n'));
    const patched = await kube.patchNode(
      'n',
      { metadata: { labels: { a: 'b' } } },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    expect(Number(patched.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));
    const stale = kube.patchNode(
      'n',
      { metadata: { labels: { a: 'c' } } },
      { resourceVersion: created.metadata.resourceVersion! },
    );
    await expect(stale).rejects.toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(kube.nodes.get('n')!.metadata.labels!.a).toBe('b');
  });

  // The status subresource takes metadata but never the spec, as the API server's does (test/k8s-contract/).
  it('applies merge patches: null removes, arrays are replaced; status only through the status subresource', async () => {
    const node = kube.putNode(makeNode('n', { labels: { keep: '1', drop: '2' } }));
    const next = await kube.patchNode(
      'n',
      { metadata: { labels: { drop: null } }, spec: { taints: [] }, status: { addresses: [] } },
      { resourceVersion: node.metadata.resourceVersion! },
    );
    expect(next.metadata.labels).toEqual({ 'kubernetes.io/hostname': 'n', keep: '1' });
    expect(next.spec?.taints).toEqual([]);
    expect(next.status?.addresses).toHaveLength(1); // ignored by the main resource
    const status = await kube.patchNodeStatus(
      'n',
      { status: { addresses: [] }, metadata: { labels: { x: 'y' } }, spec: { taints: null } },
      { resourceVersion: next.metadata.resourceVersion! },
    );
    expect(status.status?.addresses).toEqual([]);
    expect(status.metadata.labels?.x).toBe('y');
    expect(status.spec?.taints).toEqual([]);
  });

  it('keeps an object with finalizers terminating until they are removed', async () => {
    kube.putNode({ ...makeNode('n'), metadata: { name: 'n', finalizers: ['example.com/hold'] } });
    await kube.deleteNode('n', {});
    const terminating = kube.nodes.get('n')!;
    expect(terminating.metadata.deletionTimestamp).toBe('2026-11-02T08:00:00Z'); // RFC 3339, whole seconds
    await kube.patchNode(
      'n',
      { metadata: { finalizers: null } },
      { resourceVersion: terminating.metadata.resourceVersion! },
    );
    expect(kube.nodes.has('n')).toBe(false);
  });

  it('checks delete preconditions', async () => {
    kube.putNode(makeNode('n'));
    await expect(kube.deleteNode('n', { uid: 'someone-else' })).rejects.toBeInstanceOf(KubernetesApiError);
    await expect(kube.deleteNode('missing', {})).rejects.toMatchObject({ statusCode: 404 });
    expect(kube.nodes.has('n')).toBe(true);
  });

  it('records Events and serves queued errors once', async () => {
    kube.queueError('getNode', new KubernetesApiError(500, 'InternalError', 'boom'));
    kube.putNode(makeNode('n'));
    await expect(kube.getNode('n')).rejects.toMatchObject({ statusCode: 500 });
    expect(await kube.getNode('n')).toBeDefined();
    await kube.recordEvent({
      involvedObject: { kind: 'Node', name: 'n' },
      type: 'Normal',
      reason: 'Synced',
      message: 'm',
    });
    expect(kube.eventsFor('Node', 'n', 'Synced')).toHaveLength(1);
    expect(kube.callCount('getNode')).toBe(2);
  });

  it('keeps every recorded Event and can count identical ones as the adapter aggregates them', async () => {
    const event = {
      involvedObject: { kind: 'Service', namespace: 'shop', name: 'web', uid: 'u1' },
      type: 'Warning' as const,
      reason: 'SyncLoadBalancerFailed',
      message: 'AccessDenied',
    };
    await kube.recordEvent(event);
    clock.advance(10_000);
    await kube.recordEvent(event);
    await kube.recordEvent({ ...event, message: 'Throttling' });
    clock.advance(20_000);
    await kube.recordEvent(event);

    expect(kube.events).toHaveLength(4);
    const start = kube.events[0]!.timestamp;
    expect(kube.aggregatedEvents()).toEqual([
      { ...event, count: 3, firstTimestamp: start, lastTimestamp: start + 30_000 },
      { ...event, message: 'Throttling', count: 1, firstTimestamp: start + 10_000, lastTimestamp: start + 10_000 },
    ]);
  });
});
