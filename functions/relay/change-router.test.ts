import { describe, expect, it } from 'vitest';
import type { Reconciler } from './controllers/index.ts';
import { heartbeat, makeAddressPod, makeNode, makeService } from './testing/objects.ts';
import { asObject, at, router, short } from './testing/router.ts';

/**
 * The router in isolation: fingerprints in, keys out. What is common to every controller is tested here; what a
 * controller's changes send, with its module (controllers/*.test.ts).
 */

describe('ChangeRouter', () => {
  it('sends a new object to every reconciler that reads it, and nothing for a repeat', () => {
    const { r, keys } = router();
    const node = at(makeNode('n1'));
    expect(r.observe('Node', asObject(node))).toBe('forwarded');
    expect(short(keys)).toEqual(['node:Node//n1', 'node-lifecycle:Node//n1', 'route:RouteTable//cluster']);
    expect(keys[2]!.message.hint).toEqual({
      eventType: 'MODIFIED',
      resourceVersion: node.metadata.resourceVersion,
      uid: 'uid',
      source: 'relay',
    });

    keys.length = 0;
    const beat = structuredClone(node);
    heartbeat(beat, '2026-11-02T08:10:00Z');
    expect(r.observe('Node', asObject(at(beat)))).toBe('unchanged');
    expect(keys).toEqual([]);
  });

  it('forwards a deletion only to reconcilers with something to clean up', () => {
    const { r, keys } = router();
    r.observe('Node', asObject(at(makeNode('n1'))));
    r.observe('Pod', at(makeAddressPod('default', 'p', 'n1')));
    keys.length = 0;
    expect(r.remove('Node', asObject(at(makeNode('n1'))))).toBe('forwarded');
    const pod = at(makeAddressPod('default', 'p', 'n1'));
    expect(r.remove('Pod', pod)).toBe('forwarded');
    expect(short(keys)).toEqual(['route:RouteTable//cluster', 'ipam:Node//n1']);
    // The Node did not go: its key says MODIFIED, at the deleted Pod's revision.
    expect(keys.map((k) => k.message.hint)).toEqual([
      expect.objectContaining({ eventType: 'DELETED' }),
      { eventType: 'MODIFIED', resourceVersion: pod.metadata!.resourceVersion, source: 'relay/Pod' },
    ]);
    expect(r.remove('Pod', at(makeAddressPod('default', 'never-seen', 'n1')))).toBe('not-relevant');
  });

  it('finds deletions by relisting: what the list did not include is gone', () => {
    const { r, keys } = router({ reconcilers: ['ipam'] });
    r.listStarted('Pod');
    const a = at(makeAddressPod('default', 'a', 'n1'));
    r.observe('Pod', a);
    r.observe('Pod', at(makeAddressPod('default', 'b', 'n2')));
    r.listFinished('Pod', '200');
    keys.length = 0;

    r.listStarted('Pod');
    r.observe('Pod', a);
    expect(r.listFinished('Pod', '300')).toEqual(['forwarded']);
    // The Pod is gone with its object: the Node it was bound to was remembered.
    expect(keys.map((k) => [k.message.name, k.message.hint])).toEqual([
      ['n2', { eventType: 'MODIFIED', resourceVersion: '300', source: 'relay/Pod' }],
    ]);
    expect(r.size('Pod')).toBe(1);
  });

  it("a list's Pods become one key per Node, at the newest revision, when the list finishes", () => {
    const { r, keys } = router({ reconcilers: ['ipam'] });
    r.listStarted('Pod');
    const pods = ['a', 'b', 'c'].map((name) => at(makeAddressPod('default', name, name === 'b' ? 'n2' : 'n1')));
    expect(pods.map((pod) => r.observe('Pod', pod))).toEqual(['forwarded', 'forwarded', 'forwarded']);
    expect(keys).toEqual([]);

    r.listFinished('Pod', '300');
    expect(keys.map((k) => [k.message.name, k.message.hint?.resourceVersion])).toEqual([
      ['n1', pods[2]!.metadata!.resourceVersion],
      ['n2', pods[1]!.metadata!.resourceVersion],
    ]);
    // Watched changes after the list are sent as they come.
    keys.length = 0;
    r.observe(
      'Pod',
      at({ ...pods[0]!, metadata: { ...pods[0]!.metadata, deletionTimestamp: '2026-11-02T08:00:00Z' } }),
    );
    expect(short(keys)).toEqual(['ipam:Node//n1']);
  });

  it('holds keys while the migration lock is held, and sends them all on request', () => {
    const held = new Set<Reconciler>(['route']);
    const { r, keys } = router({ reconcilers: ['node', 'route'], held });
    r.observe('Node', asObject(at(makeNode('n1'))));
    r.observe('Node', asObject(at(makeNode('n2'))));
    expect(short(keys)).toEqual(['node:Node//n1', 'node:Node//n2']);
    expect(r.observe('Node', asObject(at(makeNode('n3'))))).toBe('forwarded');
    expect(router({ reconcilers: ['route'], held }).r.observe('Node', asObject(at(makeNode('n1'))))).toBe('held');

    keys.length = 0;
    held.delete('route');
    expect(r.resendAll('route', { eventType: 'RESYNC', eventId: 'migration-1' })).toBe(3);
    // One route key per Node (they coalesce into one message in the forwarder), all RESYNC.
    expect(short(keys)).toEqual(Array(3).fill('route:RouteTable//cluster'));
    expect(new Set(keys.map((k) => JSON.stringify(k.message.hint)))).toEqual(
      new Set([JSON.stringify({ eventType: 'RESYNC', eventId: 'migration-1' })]),
    );
  });

  it('ignores the rules of reconcilers without a queue', () => {
    const { r, keys } = router({ reconcilers: ['ipam'] });
    expect(r.kinds()).toEqual(['Node', 'Pod', 'ConfigMap']);
    expect(r.observe('Node', asObject(at(makeNode('n1'))))).toBe('not-relevant');
    expect(r.observe('Service', at(makeService('default', 'web')))).toBe('not-relevant');
    expect(keys).toEqual([]);
  });
});
