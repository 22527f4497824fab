import { type KubeConfig, PolicyV1Api } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeNode } from '../../test/helpers/nodes.ts';
import { budget, podOnNode } from '../../test/helpers/pods.ts';
import { FakeClock } from '../clock.ts';
import { RetryableError, TerminalError } from '../errors.ts';
import { apiConfiguration } from './client-node-adapter.ts';
import { ClientNodeDrain } from './client-node-drain.ts';
import { isDrained, planDrain } from './drain.ts';
import type { DrainPort } from './drain-port.ts';
import { KubernetesApiError } from './errors.ts';
import { ADAPTER_CLIENTS } from './fakes/adapter-clients.ts';
import { FAKE_API_SERVER_CA_DATA } from './fakes/api-server.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { type FakeKubernetesServer, startFakeKubernetesServer } from './fakes/server.ts';
import { tokenKubeConfig } from './lambda-access.ts';
import { refreshingPort } from './refreshing-port.ts';

/**
 * ClientNodeDrain against FakeKubernetes served over HTTPS: the Eviction API, PodDisruptionBudgets
 * and graceful deletion as the interruption controller's tests run on them, seen through the
 * real client. https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/
 */

function kubeConfigFor(server: FakeKubernetesServer, token = 'test-token'): KubeConfig {
  return tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, token);
}

let clock: FakeClock;
let fake: FakeKubernetes;
let server: FakeKubernetesServer;
let drain: DrainPort;

beforeEach(async () => {
  clock = new FakeClock();
  fake = new FakeKubernetes(clock);
  server = await startFakeKubernetesServer(fake);
  // The fake API server's own tests below drain through client-node; the port tests through each client.
  drain = new ClientNodeDrain(kubeConfigFor(server));
});

afterEach(async () => {
  await server.close();
});

const web = (name: string, node = 'n1') =>
  fake.putPod(
    podOnNode(node, name, {
      namespace: 'shop',
      labels: { app: 'web' },
      owner: { kind: 'ReplicaSet', name: 'web-1' },
      gracePeriodSeconds: 45,
    }),
  );

describe.each(ADAPTER_CLIENTS)('DrainPort over $name', (client) => {
  beforeEach(() => {
    drain = client.drain(server);
  });

  describe('listPodsOnNode', () => {
    it("lists the Node's Pods of every namespace by field selector, 500 at a time, as the API sent them", async () => {
      for (let i = 0; i < 501; i++) fake.putPod(podOnNode('n1', `p${i}`, { namespace: `ns${i % 3}` }));
      fake.putPod(podOnNode('n2', 'elsewhere'));
      const listed = await drain.listPodsOnNode('n1');
      expect(listed).toHaveLength(501);
      expect(listed.find((p) => p.metadata.name === 'p7')).toEqual(fake.workloads.get('ns1', 'p7'));
      expect(new Set(listed.map((p) => p.metadata.namespace))).toEqual(new Set(['ns0', 'ns1', 'ns2']));
      expect(server.requests.map((r) => r.url)).toEqual([
        '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500',
        expect.stringMatching(/^\/api\/v1\/pods\?continue=[A-Za-z0-9_-]+&fieldSelector=spec.nodeName%3Dn1&limit=500$/),
      ]);
      expect(fake.callCount('listPodsOnNode')).toBe(1);
    });

    it('starts the list again once when its continue token has expired (410)', async () => {
      for (let i = 0; i < 501; i++) fake.putPod(podOnNode('n1', `p${i}`));
      let compacted = false;
      server.intercept = (req) => {
        if (req.query.get('continue') && !compacted) {
          compacted = true;
          fake.putPod(podOnNode('n1', 'late'));
          server.compact();
        }
        return undefined;
      };
      expect(await drain.listPodsOnNode('n1')).toHaveLength(502);
      expect(server.requests).toHaveLength(4);
    });
  });

  describe('evictPod', () => {
    it('posts a policy/v1 Eviction with the grace period and the uid precondition; the Pod terminates', async () => {
      const pod = web('w1');
      expect(await drain.evictPod('shop', 'w1', { gracePeriodSeconds: 20, uid: pod.metadata.uid })).toBe('evicted');
      const [request] = server.requests;
      expect(request).toMatchObject({ method: 'POST', url: '/api/v1/namespaces/shop/pods/w1/eviction' });
      expect(JSON.parse(request!.body)).toEqual({
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: 'w1', namespace: 'shop' },
        deleteOptions: { gracePeriodSeconds: 20, preconditions: { uid: pod.metadata.uid } },
      });
      expect(fake.workloads.get('shop', 'w1')!.metadata.deletionTimestamp).toBe('2026-11-02T08:00:20Z');
      clock.advance(20_000);
      expect(await drain.listPodsOnNode('n1')).toEqual([]);
    });

    it('answers blocked when the budget allows no disruption, and deletes nothing', async () => {
      web('w1');
      web('w2');
      fake.workloads.putBudget(budget('web', { app: 'web' }, { namespace: 'shop', minAvailable: 2 }));
      expect(await drain.evictPod('shop', 'w1')).toBe('blocked');
      expect(server.requests.map((r) => r.method)).toEqual(['POST']);
      expect(fake.workloads.get('shop', 'w1')!.metadata.deletionTimestamp).toBeUndefined();
    });

    it('answers gone for an unknown Pod, and for a new Pod under the same name', async () => {
      expect(await drain.evictPod('shop', 'nope')).toBe('gone');
      web('db-0');
      expect(await drain.evictPod('shop', 'db-0', { uid: 'uid-of-the-old-one' })).toBe('gone');
      expect(fake.workloads.get('shop', 'db-0')!.metadata.deletionTimestamp).toBeUndefined();
    });

    it('throws the other refusals classified: two budgets (500) retryable, a namespace being deleted (403) terminal', async () => {
      web('w1');
      fake.workloads.putBudget(budget('a', { app: 'web' }, { namespace: 'shop', maxUnavailable: 1 }));
      fake.workloads.putBudget(budget('b', {}, { namespace: 'shop', maxUnavailable: 1 }));
      await expect(drain.evictPod('shop', 'w1')).rejects.toThrow(
        expect.objectContaining({ constructor: RetryableError, message: expect.stringMatching(/more than one/) }),
      );
      fake.workloads.terminateNamespace('shop');
      await expect(drain.evictPod('shop', 'w1')).rejects.toThrow(
        expect.objectContaining({
          constructor: TerminalError,
          message: expect.stringMatching(/403 Forbidden: .*namespace shop because it is being terminated/),
        }),
      );
      expect(server.requests.at(-1)).toMatchObject({ method: 'POST', url: '/api/v1/namespaces/shop/pods/w1/eviction' });
    });

    it('leaves a 401 unclassified, so the credential refresh retries the eviction once', async () => {
      web('w1');
      await server.close();
      server = await startFakeKubernetesServer(fake, { authenticate: (token) => token === 'fresh' });
      const tokens = ['stale', 'fresh'];
      const port = refreshingPort<DrainPort, string>(
        async () => ({ kubeConfig: tokens.shift()!, refreshAt: clock.now() + 600_000 }),
        clock,
        (token) => client.drain(server, token),
      );
      expect(await port.evictPod('shop', 'w1')).toBe('evicted');
      expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer stale', 'Bearer fresh']);
    });
  });

  describe('deletePod and cordonNode', () => {
    it('deletes a finished Pod at once; an unknown one is gone', async () => {
      const done = fake.putPod(podOnNode('n1', 'job', { namespace: 'batch', phase: 'Succeeded' }));
      expect(await drain.deletePod('batch', 'job', { uid: done.metadata.uid })).toBe('deleted');
      expect(server.requests[0]).toMatchObject({ method: 'DELETE', url: '/api/v1/namespaces/batch/pods/job' });
      expect(JSON.parse(server.requests[0]!.body)).toEqual({ preconditions: { uid: done.metadata.uid } });
      expect(fake.workloads.get('batch', 'job')).toBeUndefined();
      expect(await drain.deletePod('batch', 'job')).toBe('gone');
    });

    it('cordons with a merge patch guarded by resourceVersion; a stale one is 409', async () => {
      const rv = fake.putNode(makeNode('n1')).metadata.resourceVersion!;
      const cordoned = await drain.cordonNode('n1', { resourceVersion: rv });
      expect(cordoned.spec?.unschedulable).toBe(true);
      expect(fake.nodes.get('n1')!.spec?.unschedulable).toBe(true);
      expect(server.requests[0]!.headers['content-type']).toBe('application/merge-patch+json');
      expect(JSON.parse(server.requests[0]!.body)).toEqual({
        spec: { unschedulable: true },
        metadata: { resourceVersion: rv },
      });
      const stale = await drain.cordonNode('n1', { resourceVersion: rv }).catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(KubernetesApiError);
      expect(stale).toMatchObject({ statusCode: 409 });
    });
  });
});

describe('the fake API server', () => {
  it('serves PodDisruptionBudgets with the status the disruption controller would compute', async () => {
    for (const name of ['w1', 'w2', 'w3']) web(name);
    const policy = new PolicyV1Api(apiConfiguration(kubeConfigFor(server)));
    const body = budget('web', { app: 'web' }, { namespace: 'shop', maxUnavailable: 1 });
    await policy.createNamespacedPodDisruptionBudget({ namespace: 'shop', body: body as never });
    await drain.evictPod('shop', 'w1');
    const listed = await policy.listNamespacedPodDisruptionBudget({ namespace: 'shop' });
    expect(listed.items.map((b) => [b.metadata?.name, b.status?.disruptionsAllowed, b.status?.currentHealthy])).toEqual(
      [['web', 0, 2]],
    );
  });

  it('lets a drain through the real client run to the end over several passes', async () => {
    for (const name of ['w1', 'w2']) web(name);
    fake.putPod(podOnNode('n1', 'fluent', { owner: { kind: 'DaemonSet', name: 'fluent' } }));
    fake.workloads.putBudget(budget('web', { app: 'web' }, { namespace: 'shop', maxUnavailable: 1 }));
    const outcomes: string[] = [];
    for (let pass = 0; pass < 10; pass++) {
      const pods = await drain.listPodsOnNode('n1');
      if (isDrained(pods)) break;
      for (const { pod, gracePeriodSeconds } of planDrain(pods).evict) {
        const { namespace, name, uid } = pod.metadata;
        outcomes.push(`${pass}:${name}:${await drain.evictPod(namespace!, name, { gracePeriodSeconds, uid })}`);
      }
      clock.advance(45_000);
    }
    // w1 goes first; w2 waits until w1 has terminated (the fake has no ReplicaSet to replace w1, so the
    // budget counts one Pod fewer: maxUnavailable 1 of a scale the fake now sees as 1).
    expect(outcomes).toEqual(['0:w1:evicted', '0:w2:blocked', '1:w2:evicted']);
    expect((await drain.listPodsOnNode('n1')).map((p) => p.metadata.name)).toEqual(['fluent']);
  });
});
