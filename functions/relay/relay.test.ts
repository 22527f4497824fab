import { afterEach, describe, expect, it } from 'vitest';
import type { FakeSqs } from '../../shared/aws/fakes/sqs/fake-sqs.ts';
import { LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS } from '../../shared/k8s/service-port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { type KeyMessage, messageDeduplicationId, messageGroupId } from '../../shared/queue/message.ts';
import type { SendFailure, SqsPort } from '../../shared/queue/sqs-port.ts';
import {
  heartbeat,
  keysOn,
  makeAddressPod,
  makeNode,
  QUEUE_NAMES,
  reconcilerQueues,
  setReady,
  until,
} from './testing/objects.ts';
import {
  cluster,
  N1,
  N2,
  relayFor,
  serve,
  settled,
  start,
  stopStarted,
  W1,
  W2,
  windowsCluster,
} from './testing/relay.ts';

/**
 * The relay end to end: the REST clients of a relay in a Pod against a local HTTPS server speaking the
 * Kubernetes list/watch protocol, keys into the FIFO-faithful fake SQS.
 */

afterEach(stopStarted);

const names = (keys: KeyMessage[]) => keys.map((k) => [k.kind, k.namespace ?? '', k.name].join('/')).sort();
const countSends = (sqs: FakeSqs) => sqs.callCount('SendMessageBatch');

describe('relay: changes to keys', () => {
  it('sends the keys each reconciler reads, with the foundation group and deduplication IDs', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(relayFor(api, sqs, urls));
    await settled(relay, c);

    expect(names(keysOn(sqs, 'node'))).toEqual([`Node//${N1}`, `Node//${N2}`]);
    expect(names(keysOn(sqs, 'node-lifecycle'))).toEqual([`Node//${N1}`, `Node//${N2}`]);
    expect(new Set(names(keysOn(sqs, 'route')))).toEqual(new Set(['RouteTable//cluster']));
    expect(new Set(names(keysOn(sqs, 'service')))).toEqual(new Set(['Service/default/web', 'Service/default/web-ip']));
    // Bound Pods only (field selector), and not host-network ones: the key of the Node they are bound to.
    expect(names(keysOn(sqs, 'ipam'))).toEqual([`Node//${N1}`]);

    const node = c.get('Node', N1)!;
    expect(keysOn(sqs, 'node').find((k) => k.name === N1)).toEqual({
      kind: 'Node',
      name: N1,
      hint: {
        eventType: 'MODIFIED',
        resourceVersion: node.metadata!.resourceVersion,
        uid: node.metadata!.uid,
        source: 'relay',
      },
    });
    for (const reconciler of Object.keys(QUEUE_NAMES) as (keyof typeof QUEUE_NAMES)[]) {
      for (const record of sqs.receive(QUEUE_NAMES[reconciler], 10)) {
        const message = JSON.parse(record.body) as KeyMessage;
        expect(record.attributes.MessageGroupId).toBe(messageGroupId(message));
        expect(record.attributes.MessageDeduplicationId).toBe(messageDeduplicationId(message));
      }
    }
  });

  it('forwards watched changes: bound Pods, IP-target endpoints, readiness to lifecycle only, exclusion to the load balancers', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(relayFor(api, sqs, urls));
    await settled(relay, c);
    const before = {
      node: keysOn(sqs, 'node').length,
      lifecycle: keysOn(sqs, 'node-lifecycle').length,
      service: keysOn(sqs, 'service').length,
      ipam: keysOn(sqs, 'ipam').length,
    };

    c.apply('Pod', makeAddressPod('default', 'app-2', N2));
    c.mutate('Pod', 'default/pending-1', (p) => {
      (p.spec as { nodeName?: string }).nodeName = N1;
    });
    c.mutate('EndpointSlice', 'default/web-ip-abcde', (s) => {
      (s.endpoints as unknown[]).push({ addresses: ['10.244.2.9'], conditions: { ready: true } });
    });
    c.mutate('EndpointSlice', 'default/internal-fghij', (s) => {
      (s.endpoints as unknown[]).push({ addresses: ['10.244.2.10'], conditions: { ready: true } });
    });
    c.mutate<Node>('Node', N1, (n) => setReady(n, false));
    await settled(relay, c);

    expect(names(keysOn(sqs, 'ipam').slice(before.ipam))).toEqual([`Node//${N1}`, `Node//${N2}`]);
    expect(names(keysOn(sqs, 'node-lifecycle').slice(before.lifecycle))).toEqual([`Node//${N1}`]);
    // Readiness is no business of the node (initialization) reconciler, nor of the load balancers' target
    // set (KEP-3458): web-ip's endpoints changed, nothing for web, nothing for the ClusterIP Service.
    expect(keysOn(sqs, 'node').length).toBe(before.node);
    expect(names(keysOn(sqs, 'service').slice(before.service))).toEqual(['Service/default/web-ip']);

    // Excluding the Node takes it out of web's target set, and web-ip no longer opens its security group.
    c.mutate<Node>('Node', N1, (n) => {
      n.metadata.labels![LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS] = '';
    });
    await settled(relay, c);
    const nodeSetKeys = keysOn(sqs, 'service').slice(before.service + 1);
    const hint = {
      eventType: 'MODIFIED',
      resourceVersion: c.get('Node', N1)!.metadata!.resourceVersion,
      source: 'relay/Node',
    };
    const uid = (name: string) => c.get('Service', `default/${name}`)!.metadata!.uid;
    expect(nodeSetKeys.map((k) => [k.name, k.hint]).sort()).toEqual([
      ['web', { ...hint, uid: uid('web') }],
      ['web-ip', { ...hint, uid: uid('web-ip') }],
    ]);
  });

  it('filters heartbeat-only Node updates: no key, no SQS call', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(relayFor(api, sqs, urls));
    await settled(relay, c);
    const calls = countSends(sqs);
    const depths = Object.values(QUEUE_NAMES).map((q) => sqs.depth(q));
    const lastRevision = () => String(c.revision);

    for (let i = 0; i < 25; i++) {
      for (const name of [N1, N2])
        c.mutate<Node>('Node', name, (n) => heartbeat(n, `2026-11-02T08:0${i % 10}:${10 + i}Z`));
    }
    await until(() => relay.resourceVersions().Node === lastRevision(), 'the heartbeats to arrive');
    await settled(relay, c);

    expect(countSends(sqs)).toBe(calls);
    expect(Object.values(QUEUE_NAMES).map((q) => sqs.depth(q))).toEqual(depths);
    expect(relay.metrics.changesFiltered.get({ kind: 'Node', reason: 'unchanged' })).toBe(50);

    c.mutate<Node>('Node', N2, (n) => {
      n.spec!.taints = [];
    });
    await settled(relay, c);
    expect(keysOn(sqs, 'node').at(-1)?.name).toBe(N2);
  });

  it.each(['event', 'status'] as const)(
    '410 Gone (as %s) relists without losing a change or deletion made meanwhile',
    async (expiredAs) => {
      const c = cluster();
      const api = await serve(c, { expiredAs });
      const { sqs, urls } = reconcilerQueues();
      const relay = start(relayFor(api, sqs, urls));
      await settled(relay, c);
      const lifecycleBefore = keysOn(sqs, 'node-lifecycle').length;
      const ipamBefore = keysOn(sqs, 'ipam').length;

      // The watch hears nothing more; meanwhile a Node goes NotReady, a Pod goes, history is compacted.
      api.silenceWatches();
      c.mutate<Node>('Node', N2, (n) => setReady(n, false));
      c.remove('Pod', 'default/app-1');
      c.compact();
      api.endWatches();

      await until(() => relay.metrics.relists.get({ kind: 'Node', reason: 'expired' }) === 1, 'the Node relist');
      await until(() => relay.metrics.relists.get({ kind: 'Pod', reason: 'expired' }) === 1, 'the Pod relist');
      await settled(relay, c);

      expect(
        keysOn(sqs, 'node-lifecycle')
          .slice(lifecycleBefore)
          .map((k) => k.name),
      ).toEqual([N2]);
      const deleted = keysOn(sqs, 'ipam').slice(ipamBefore);
      // The Pod's Node, remembered from before: the relist has no Pod object to read it from.
      expect(deleted).toEqual([
        {
          kind: 'Node',
          name: N1,
          hint: { eventType: 'MODIFIED', resourceVersion: expect.any(String), source: 'relay/Pod' },
        },
      ]);
      expect(relay.metrics.watchRestarts.get({ kind: 'Node', reason: 'expired' })).toBe(1);
    },
  );
});

describe('relay: Windows IPAM keys', () => {
  it('watches Pods and only the VPC CNI ConfigMap, and only with the ipam queue', async () => {
    const c = windowsCluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const withoutIpam = start(relayFor(api, sqs, { node: urls.node, service: urls.service }, { identity: 'a' }));
    await settled(withoutIpam, c);
    expect(api.requests.filter((r) => r.kind === 'Pod' || r.kind === 'ConfigMap')).toEqual([]);
    await withoutIpam.stop(1_000);

    const relay = start(relayFor(api, sqs, { ipam: urls.ipam }, { identity: 'b' }));
    await settled(relay, c);
    expect(relay.kinds).toEqual(['Node', 'Pod', 'ConfigMap']);
    await until(() => api.openWatches('ConfigMap') === 1, 'the ConfigMap watch');
    const configMapRequests = api.requests.filter((r) => r.kind === 'ConfigMap');
    expect(configMapRequests.map((r) => [r.path, r.query.get('fieldSelector'), r.watch])).toEqual([
      ['/api/v1/namespaces/kube-system/configmaps', 'metadata.name=amazon-vpc-cni', false],
      ['/api/v1/namespaces/kube-system/configmaps', 'metadata.name=amazon-vpc-cni', true],
    ]);
    // The Windows Nodes (their own change and the ConfigMap's), W1 for its Pod; nothing for the Linux Node.
    expect(new Set(names(keysOn(sqs, 'ipam')))).toEqual(new Set([`Node//${W1}`, `Node//${W2}`]));
  });

  it('a change of the ConfigMap data, or its deletion, sends every Windows Node its key', async () => {
    const c = windowsCluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(relayFor(api, sqs, { ipam: urls.ipam }));
    await settled(relay, c);
    let before = keysOn(sqs, 'ipam').length;

    c.mutate('ConfigMap', 'kube-system/coredns', (m) => {
      m.data = { Corefile: '.:5353 {}' };
    });
    c.mutate('ConfigMap', 'kube-system/amazon-vpc-cni', (m) => {
      m.metadata!.labels = { owner: 'eks' };
    });
    c.mutate('ConfigMap', 'kube-system/amazon-vpc-cni', (m) => {
      m.data = { 'enable-windows-ipam': 'true', 'warm-ip-target': '3' };
    });
    await settled(relay, c);
    const changed = keysOn(sqs, 'ipam').slice(before);
    const revision = c.get('ConfigMap', 'kube-system/amazon-vpc-cni')!.metadata!.resourceVersion;
    expect(changed.map((k) => [k.name, k.hint]).sort()).toEqual([
      [W1, { eventType: 'MODIFIED', resourceVersion: revision, source: 'relay/ConfigMap' }],
      [W2, { eventType: 'MODIFIED', resourceVersion: revision, source: 'relay/ConfigMap' }],
    ]);

    before = keysOn(sqs, 'ipam').length;
    c.remove('ConfigMap', 'kube-system/amazon-vpc-cni');
    await settled(relay, c);
    expect(names(keysOn(sqs, 'ipam').slice(before))).toEqual([`Node//${W1}`, `Node//${W2}`]);
  });

  it("Pod changes and deletions become their Node's key, the last one at the newest Pod revision", async () => {
    const c = windowsCluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const relay = start(relayFor(api, sqs, { ipam: urls.ipam }));
    await settled(relay, c);
    const before = keysOn(sqs, 'ipam').length;

    for (let i = 0; i < 20; i++) c.apply('Pod', makeAddressPod('default', `burst-${i}`, W2));
    c.remove('Pod', 'default/win-app-1');
    const removedAt = String(c.revision);
    c.remove('Pod', 'default/linux-app-1');
    await settled(relay, c);

    const sent = keysOn(sqs, 'ipam').slice(before);
    expect(new Set(names(sent))).toEqual(new Set([`Node//${W1}`, `Node//${W2}`]));
    expect(sent.filter((k) => k.name === W2).at(-1)?.hint?.resourceVersion).toBe(
      c.get('Pod', 'default/burst-19')!.metadata!.resourceVersion,
    );
    expect(sent.filter((k) => k.name === W1).map((k) => k.hint?.resourceVersion)).toEqual([removedAt]);
  });
});

describe('relay: at least once', () => {
  it('sends a refused batch entry again until SQS takes it', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    // The first request refuses its second entry, the next one its first.
    sqs.refuseNextSends.push(['', 'InternalError'], ['ServiceUnavailable']);
    const relay = start(relayFor(api, sqs, { node: urls.node }));
    await settled(relay, c);

    expect(names(keysOn(sqs, 'node'))).toEqual([`Node//${N1}`, `Node//${N2}`]);
    expect(relay.metrics.sendFailures.total({ reconciler: 'node' })).toBe(2);
    expect(relay.metrics.keysSent.get({ reconciler: 'node' })).toBe(2);
  });

  it('sends again when a whole request fails', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    let failing = 2;
    const flaky: SqsPort = {
      sendKeys: (url, messages) =>
        failing-- > 0
          ? Promise.reject(Object.assign(new Error('socket hang up'), { name: 'TimeoutError' }))
          : sqs.sendKeys(url, messages),
      changeVisibility: (arn, entries) => sqs.changeVisibility(arn, entries),
    };
    const relay = start(relayFor(api, flaky, { node: urls.node }));
    await settled(relay, c);

    expect(names(keysOn(sqs, 'node'))).toEqual([`Node//${N1}`, `Node//${N2}`]);
    // Two requests of two keys each failed.
    expect(relay.metrics.sendFailures.get({ reconciler: 'node', code: 'TimeoutError' })).toBe(4);
  });

  it('a restarted relay sends every key again; SQS drops the unchanged ones and keeps what changed', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    // The first relay never gets a key accepted (SQS down), then dies.
    const down: SqsPort = {
      sendKeys: async (_url, messages) =>
        messages.map((message): SendFailure => ({ message, code: 'ServiceUnavailable', reason: 'down' })),
      changeVisibility: async () => undefined,
    };
    const first = start(relayFor(api, down, urls, { identity: 'relay-1' }));
    await until(() => first.status().synced && first.metrics.sendFailures.total() > 0, 'the first relay to try');
    await first.stop(50);
    expect(Object.values(QUEUE_NAMES).map((q) => sqs.depth(q))).toEqual(Object.values(QUEUE_NAMES).map(() => 0));

    const second = start(relayFor(api, sqs, urls, { identity: 'relay-2' }));
    await settled(second, c);
    const depths = Object.values(QUEUE_NAMES).map((q) => sqs.depth(q));
    expect(names(keysOn(sqs, 'node'))).toEqual([`Node//${N1}`, `Node//${N2}`]);
    expect(names(keysOn(sqs, 'ipam'))).toEqual([`Node//${N1}`]);
    await second.stop(1_000);

    // A third start with one Node changed meanwhile: every key is sent again, only the change is new.
    c.mutate<Node>('Node', N1, (n) => setReady(n, false));
    const calls = countSends(sqs);
    const third = start(relayFor(api, sqs, urls, { identity: 'relay-3' }));
    await settled(third, c);
    expect(countSends(sqs)).toBeGreaterThan(calls);
    expect(third.metrics.keysSent.total()).toBeGreaterThanOrEqual(7);
    const after = Object.values(QUEUE_NAMES).map((q) => sqs.depth(q));
    const [node, lifecycle, route, service, ipam] = after.map((d, i) => d - depths[i]!);
    // N1 has a new revision, so its keys are new messages everywhere (a new relay cannot know which
    // fields changed while none ran); N2, the Pod and the Services did not change: their keys are
    // byte-identical to the earlier ones and SQS dropped them.
    expect({ node, lifecycle, route, ipam }).toEqual({ node: 1, lifecycle: 1, route: 1, ipam: 0 });
    // The load balancer with instance targets gets a key with N1's revision: a new relay cannot tell that
    // only readiness changed, so every Node it lists is news to the target set.
    // Whether a Service's own key and a key derived from a Node or an EndpointSlice coalesced before
    // going out depends on timing, so a restart may add a harmless extra Service message.
    expect(service).toBeGreaterThanOrEqual(1);
    const n1 = c.get('Node', N1)!.metadata!.resourceVersion;
    expect(keysOn(sqs, 'service').some((k) => k.name === 'web' && k.hint?.resourceVersion === n1)).toBe(true);
    expect(keysOn(sqs, 'node').at(-1)).toMatchObject({
      name: N1,
      hint: { resourceVersion: c.get('Node', N1)!.metadata!.resourceVersion },
    });
  });

  it('flushes waiting keys on a graceful stop', async () => {
    const c = cluster();
    const api = await serve(c);
    const { sqs, urls } = reconcilerQueues();
    const slow: SqsPort = {
      sendKeys: async (url, messages) => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return sqs.sendKeys(url, messages);
      },
      changeVisibility: async () => undefined,
    };
    const relay = relayFor(
      api,
      slow,
      { node: urls.node },
      { forwarder: { lingerMs: 5, maxInFlightBatches: 1, retryBaseMs: 20, retryMaxMs: 200 } },
    );
    relay.start();
    await until(() => relay.status().synced, 'sync');
    for (let i = 0; i < 40; i++) c.apply('Node', makeNode(`burst-${i}`));
    await until(() => relay.status().pending >= 30, 'keys to wait');

    const result = await relay.stop(5_000);

    expect(result).toEqual({ flushed: true, pending: 0 });
    expect(keysOn(sqs, 'node').filter((k) => k.name.startsWith('burst-'))).toHaveLength(40);
  });
});
