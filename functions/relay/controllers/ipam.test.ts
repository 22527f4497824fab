import { describe, expect, it } from 'vitest';
import type { RoutedKey } from '../change-router.ts';
import { makeAddressPod, makeNode, makePod, makeVpcCniConfigMap, makeWindowsNode } from '../testing/objects.ts';
import { asObject, at, router, short } from '../testing/router.ts';

/** IPAM's keys, through the router: every key is a Node's. */

describe('ChangeRouter: ipam keys are Node keys', () => {
  const ipam = () => router({ reconcilers: ['ipam'] });
  const hints = (keys: RoutedKey[]) => keys.map((k) => [k.message.name, k.message.hint]);

  it("a Pod's change becomes its Node's key, at the Pod's revision; what the Pod does not read is filtered", () => {
    const { r, keys } = ipam();
    const pod = at(makeAddressPod('default', 'p', 'win-1'));
    expect(r.observe('Pod', pod)).toBe('forwarded');
    expect(keys).toEqual([
      {
        reconciler: 'ipam',
        message: {
          kind: 'Node',
          name: 'win-1',
          hint: { eventType: 'MODIFIED', resourceVersion: pod.metadata!.resourceVersion, source: 'relay/Pod' },
        },
      },
    ]);

    keys.length = 0;
    expect(r.observe('Pod', at({ ...pod, status: { phase: 'Running', containerStatuses: [{ ready: true }] } }))).toBe(
      'unchanged',
    );
    const finished = at({ ...pod, status: { phase: 'Succeeded' } });
    expect(r.observe('Pod', finished)).toBe('forwarded');
    expect(hints(keys)).toEqual([
      ['win-1', { eventType: 'MODIFIED', resourceVersion: finished.metadata!.resourceVersion, source: 'relay/Pod' }],
    ]);
    expect(r.observe('Pod', at(makePod('default', 'plain', 'win-1')))).toBe('not-relevant');
  });

  it('Pods of one Node changing at once are keys of that one Node, each with its own revision', () => {
    const { r, keys } = ipam();
    const pods = ['a', 'b', 'c'].map((name) => at(makeAddressPod('default', name, 'win-1')));
    for (const pod of pods) r.observe('Pod', pod);
    r.observe('Pod', at(makeAddressPod('default', 'd', 'win-2')));
    expect(short(keys)).toEqual(['ipam:Node//win-1', 'ipam:Node//win-1', 'ipam:Node//win-1', 'ipam:Node//win-2']);
    // Distinct deduplication IDs: a change arriving while the Node is reconciled is not swallowed by SQS.
    expect(keys.slice(0, 3).map((k) => k.message.hint?.resourceVersion)).toEqual(
      pods.map((p) => p.metadata!.resourceVersion),
    );
  });

  it('a Pod found on another Node after a relist sends both Nodes a key', () => {
    const { r, keys } = ipam();
    r.observe('Pod', at(makeAddressPod('default', 'p', 'win-1'), 'uid-1'));
    keys.length = 0;
    r.observe('Pod', at(makeAddressPod('default', 'p', 'win-2'), 'uid-2'));
    expect(short(keys).sort()).toEqual(['ipam:Node//win-1', 'ipam:Node//win-2']);
  });

  it('a Windows Node is its own key; the ConfigMap becomes a key for every Windows Node', () => {
    const { r, keys } = ipam();
    const win1 = at(makeWindowsNode('win-1'));
    expect(r.observe('Node', asObject(win1))).toBe('forwarded');
    r.observe('Node', asObject(at(makeWindowsNode('win-2'))));
    expect(r.observe('Node', asObject(at(makeNode('linux-1'))))).toBe('not-relevant');
    expect(hints(keys.slice(0, 1))).toEqual([
      ['win-1', { eventType: 'MODIFIED', resourceVersion: win1.metadata.resourceVersion, uid: 'uid', source: 'relay' }],
    ]);

    keys.length = 0;
    const config = at(makeVpcCniConfigMap());
    expect(r.observe('ConfigMap', config)).toBe('forwarded');
    const configHint = {
      eventType: 'MODIFIED',
      resourceVersion: config.metadata!.resourceVersion,
      source: 'relay/ConfigMap',
    };
    expect(hints(keys)).toEqual([
      ['win-1', configHint],
      ['win-2', configHint],
    ]);

    keys.length = 0;
    expect(r.observe('ConfigMap', at({ ...config, metadata: { ...config.metadata, labels: { a: 'b' } } }))).toBe(
      'unchanged',
    );
    const deleted = at(config);
    expect(r.remove('ConfigMap', deleted)).toBe('forwarded');
    expect(hints(keys)).toEqual([
      ['win-1', { ...configHint, resourceVersion: deleted.metadata!.resourceVersion }],
      ['win-2', { ...configHint, resourceVersion: deleted.metadata!.resourceVersion }],
    ]);
  });

  it('a Windows Node listed after the ConfigMap changed gets a key for that change too', () => {
    const { r, keys } = ipam();
    const config = at(makeVpcCniConfigMap());
    // Lists run in parallel: the ConfigMap may come first, when no Node is known.
    expect(r.observe('ConfigMap', config)).toBe('unchanged');
    const node = at(makeWindowsNode('win-1'));
    r.observe('Node', asObject(node));
    expect(keys.map((k) => k.message.hint?.resourceVersion)).toEqual([
      node.metadata.resourceVersion,
      config.metadata!.resourceVersion,
    ]);
    expect(keys[1]!.message.hint?.source).toBe('relay/ConfigMap');

    // Only when the Node newly concerns ipam, not on every change of it.
    keys.length = 0;
    const moved = structuredClone(node);
    moved.spec!.providerID = 'aws:///eu-west-1b/i-0abc';
    r.observe('Node', asObject(at(moved)));
    expect(keys.map((k) => k.message.hint?.source)).toEqual(['relay']);
  });

  it('after the migration lock, every Node key again, not one per Node per ConfigMap', () => {
    const { r, keys } = ipam();
    r.observe('Node', asObject(at(makeWindowsNode('win-1'))));
    r.observe('ConfigMap', at(makeVpcCniConfigMap()));
    r.observe('Pod', at(makeAddressPod('default', 'p', 'win-1')));
    keys.length = 0;
    expect(r.resendAll('ipam', { eventType: 'RESYNC', eventId: 'm' })).toBe(2);
    expect(short(keys)).toEqual(['ipam:Node//win-1', 'ipam:Node//win-1']);
  });
});
