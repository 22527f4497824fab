import { beforeEach, describe, expect, it } from 'vitest';
import { makeNode } from '../../../test/helpers/nodes.ts';
import { budget, type PodOptions, podOnNode } from '../../../test/helpers/pods.ts';
import { FakeClock } from '../../clock.ts';
import { RetryableError, TerminalError, ThrottledError } from '../../errors.ts';
import { isDrained, planDrain } from '../drain.ts';
import { KubernetesApiError } from '../errors.ts';
import type { PodDisruptionBudget } from '../types.ts';
import { FakeKubernetes, type KubernetesChange } from './fake-kubernetes.ts';

/**
 * FakeKubernetes' Pods and PodDisruptionBudgets behave as the API server and the disruption
 * controller do (https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/), so a drain
 * written against the fake meets the same refusals and the same pace as in a cluster.
 */

let clock: FakeClock;
let kube: FakeKubernetes;
beforeEach(() => {
  clock = new FakeClock();
  kube = new FakeKubernetes(clock);
});

const web = (name: string, node = 'n1', options: PodOptions = {}) =>
  kube.putPod(
    podOnNode(node, name, { labels: { app: 'web' }, owner: { kind: 'ReplicaSet', name: 'web-1' }, ...options }),
  );
const names = async (node: string) => (await kube.listPodsOnNode(node)).map((p) => p.metadata.name).sort();

describe('FakeKubernetes Pods: graceful deletion on the clock', () => {
  it('evicts a Pod no budget covers at once; it terminates for its grace period, then is gone', async () => {
    kube.putPod(podOnNode('n1', 'a', { gracePeriodSeconds: 20 }));
    kube.putPod(podOnNode('n2', 'b'));
    expect(await kube.evictPod('default', 'a')).toBe('evicted');
    const [a] = await kube.listPodsOnNode('n1');
    expect(a!.metadata.deletionTimestamp).toBe('2026-11-02T08:00:20Z');
    expect(a!.metadata.deletionGracePeriodSeconds).toBe(20);
    clock.advance(19_000);
    expect(await names('n1')).toEqual(['a']);
    clock.advance(1_000);
    expect(await names('n1')).toEqual([]);
    expect(await names('n2')).toEqual(['b']);
  });

  it('takes a shorter grace period from the request, and never lengthens a running one', async () => {
    kube.putPod(podOnNode('n1', 'a', { gracePeriodSeconds: 60 }));
    expect(await kube.evictPod('default', 'a', { gracePeriodSeconds: 10 })).toBe('evicted');
    expect(await kube.evictPod('default', 'a', { gracePeriodSeconds: 300 })).toBe('evicted');
    expect(kube.workloads.get('default', 'a')!.metadata.deletionTimestamp).toBe('2026-11-02T08:00:10Z');
    expect(await kube.evictPod('default', 'a', { gracePeriodSeconds: 0 })).toBe('evicted');
    expect(kube.workloads.get('default', 'a')).toBeUndefined();
  });

  it('deletes a finished Pod at once', async () => {
    const done = kube.putPod(podOnNode('n1', 'job', { phase: 'Succeeded', gracePeriodSeconds: 60 }));
    expect(await kube.deletePod('default', 'job', { uid: done.metadata.uid })).toBe('deleted');
    expect(await names('n1')).toEqual([]);
  });

  it('answers gone for an unknown Pod and for another incarnation of the name', async () => {
    expect(await kube.evictPod('default', 'nope')).toBe('gone');
    expect(await kube.deletePod('default', 'nope')).toBe('gone');
    kube.putPod(podOnNode('n1', 'db-0'));
    expect(await kube.evictPod('default', 'db-0', { uid: 'uid-old' })).toBe('gone');
    expect(await kube.deletePod('default', 'db-0', { uid: 'uid-old' })).toBe('gone');
    expect(await names('n1')).toEqual(['db-0']);
  });

  it('reports Pod changes to watchers, the removal with a new resourceVersion', async () => {
    const changes: KubernetesChange[] = [];
    kube.watch((c) => changes.push(c));
    const pod = kube.putPod(podOnNode('n1', 'a', { gracePeriodSeconds: 1 }));
    await kube.evictPod('default', 'a');
    clock.advance(1_000);
    await kube.listPodsOnNode('n1');
    // The eviction writes twice, as the API server's does: the DisruptionTarget condition, then the deletion.
    expect(changes.map((c) => [c.kind, c.type])).toEqual([
      ['Pod', 'ADDED'],
      ['Pod', 'MODIFIED'],
      ['Pod', 'MODIFIED'],
      ['Pod', 'DELETED'],
    ]);
    expect(Number(changes[3]!.revision)).toBeGreaterThan(Number(pod.metadata.resourceVersion));
  });

  it('counts calls and throws queued errors, classified', async () => {
    kube.putPod(podOnNode('n1', 'a'));
    kube.queueError('evictPod', new KubernetesApiError(503, 'ServiceUnavailable', 'etcd'));
    kube.queueError('evictPod', new KubernetesApiError(429, 'TooManyRequests', 'priority and fairness'));
    await expect(kube.evictPod('default', 'a')).rejects.toBeInstanceOf(RetryableError);
    expect(await kube.evictPod('default', 'a')).toBe('blocked');
    expect(kube.callCount('evictPod')).toBe(2);
    expect(kube.writeCount()).toBe(2);
  });
});

describe('FakeKubernetes PodDisruptionBudgets', () => {
  it('refuses an eviction that would leave fewer than minAvailable healthy Pods (429: blocked)', async () => {
    for (const name of ['w1', 'w2', 'w3']) web(name);
    kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 2 }));
    expect(await kube.evictPod('default', 'w1')).toBe('evicted');
    expect(await kube.evictPod('default', 'w2')).toBe('blocked');
    expect(kube.workloads.budget('default', 'web')!.status).toMatchObject({
      currentHealthy: 2,
      desiredHealthy: 2,
      disruptionsAllowed: 0,
      expectedPods: 3,
    });
    // The ReplicaSet's replacement becomes Ready on another Node: one more disruption is allowed.
    web('w4', 'n2');
    expect(await kube.evictPod('default', 'w2')).toBe('evicted');
    expect(await kube.evictPod('default', 'w3')).toBe('blocked');
  });

  it('never falls back to a delete when blocked', async () => {
    web('w1');
    kube.workloads.putBudget(budget('web', { app: 'web' }, { maxUnavailable: 0 }));
    expect(await kube.evictPod('default', 'w1')).toBe('blocked');
    expect(kube.workloads.get('default', 'w1')!.metadata.deletionTimestamp).toBeUndefined();
    expect(kube.callCount('deletePod')).toBe(0);
  });

  it.each<[string, PodDisruptionBudget['spec'], number | undefined, number, number]>([
    // [what, spec, scale set for the ReplicaSet, desiredHealthy, disruptionsAllowed] with 4 Ready Pods
    ['minAvailable 3', { minAvailable: 3 }, undefined, 3, 1],
    ['minAvailable 4', { minAvailable: 4 }, undefined, 4, 0],
    ['minAvailable 50% of 4', { minAvailable: '50%' }, undefined, 2, 2],
    ['minAvailable 60% of 4 rounds up to 3', { minAvailable: '60%' }, undefined, 3, 1],
    ['minAvailable 100%', { minAvailable: '100%' }, undefined, 4, 0],
    ['maxUnavailable 1', { maxUnavailable: 1 }, undefined, 3, 1],
    ['maxUnavailable 0', { maxUnavailable: 0 }, undefined, 4, 0],
    ['maxUnavailable 30% of 4 rounds up to 2', { maxUnavailable: '30%' }, undefined, 2, 2],
    ['maxUnavailable 1 of a scale of 5 (one Pod missing)', { maxUnavailable: 1 }, 5, 4, 0],
    ['minAvailable 50% of a scale of 6', { minAvailable: '50%' }, 6, 3, 1],
  ])('computes the status as the disruption controller: %s', (_what, spec, scale, desiredHealthy, allowed) => {
    for (const name of ['w1', 'w2', 'w3', 'w4']) web(name);
    if (scale !== undefined) kube.workloads.setScale('default', 'ReplicaSet', 'web-1', scale);
    const stored = kube.workloads.putBudget({
      ...budget('web', { app: 'web' }),
      spec: { ...spec, selector: { matchLabels: { app: 'web' } } },
    });
    expect(stored.status).toMatchObject({ currentHealthy: 4, desiredHealthy, disruptionsAllowed: allowed });
  });

  it('counts neither not-Ready nor terminating Pods as healthy', async () => {
    web('w1');
    web('w2', 'n1', { ready: false });
    web('w3', 'n1', { gracePeriodSeconds: 30 });
    await kube.evictPod('default', 'w3');
    expect(kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 1 })).status).toMatchObject({
      currentHealthy: 1,
      disruptionsAllowed: 0,
      expectedPods: 3,
    });
  });

  it('allows no disruption under maxUnavailable when a selected Pod has no controller', async () => {
    web('w1');
    web('w2');
    kube.putPod(podOnNode('n1', 'bare', { labels: { app: 'web' } }));
    kube.workloads.putBudget(budget('web', { app: 'web' }, { maxUnavailable: 1 }));
    expect(await kube.evictPod('default', 'w1')).toBe('blocked');
  });

  it('evicts a Pending or finished Pod whatever the budget says', async () => {
    web('w1', 'n1', { phase: 'Pending' });
    web('w2', 'n1', { phase: 'Failed' });
    kube.workloads.putBudget(budget('web', { app: 'web' }, { maxUnavailable: 0 }));
    expect(await kube.evictPod('default', 'w1')).toBe('evicted');
    expect(await kube.evictPod('default', 'w2')).toBe('evicted');
    expect(await names('n1')).toEqual(['w1']); // Pending but scheduled: terminating for its grace period
  });

  it('evicts a running but not Ready Pod while the budget is whole (IfHealthyBudget), or always (AlwaysAllow)', async () => {
    for (const name of ['w1', 'w2', 'w3']) web(name);
    web('sick', 'n1', { ready: false });
    kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 3 }));
    expect(await kube.evictPod('default', 'sick')).toBe('evicted');
    web('sick2', 'n1', { ready: false });
    kube.workloads.putBudget(budget('web', { app: 'web' }, { minAvailable: 4 }));
    expect(await kube.evictPod('default', 'sick2')).toBe('blocked');
    kube.workloads.putBudget(
      budget('web', { app: 'web' }, { minAvailable: 4, unhealthyPodEvictionPolicy: 'AlwaysAllow' }),
    );
    expect(await kube.evictPod('default', 'sick2')).toBe('evicted');
  });

  it('selects by label in its own namespace only; {} selects the whole namespace', async () => {
    kube.putPod(podOnNode('n1', 'api', { namespace: 'shop' }));
    kube.putPod(podOnNode('n1', 'api', { namespace: 'other' }));
    kube.workloads.putBudget(budget('all', {}, { namespace: 'shop', minAvailable: 1 }));
    expect(await kube.evictPod('other', 'api')).toBe('evicted');
    expect(await kube.evictPod('shop', 'api')).toBe('blocked');
  });

  it('answers 500 when two budgets cover the Pod (the eviction API does not support it)', async () => {
    web('w1');
    web('w2');
    kube.workloads.putBudget(budget('one', { app: 'web' }, { maxUnavailable: 1 }));
    kube.workloads.putBudget(budget('two', {}, { maxUnavailable: 1 }));
    const refused = kube.evictPod('default', 'w1');
    await expect(refused).rejects.toBeInstanceOf(RetryableError);
    await expect(refused).rejects.not.toBeInstanceOf(ThrottledError);
    await expect(refused).rejects.toThrow(/more than one PodDisruptionBudget/);
  });

  it('answers 403 to an eviction in a namespace being deleted, budget or not; a delete still goes through', async () => {
    kube.putPod(podOnNode('n1', 'api', { namespace: 'shop' }));
    kube.putPod(podOnNode('n1', 'job', { namespace: 'shop', phase: 'Failed' }));
    kube.putPod(podOnNode('n1', 'api', { namespace: 'other' }));
    kube.workloads.terminateNamespace('shop');
    const refused = kube.evictPod('shop', 'api');
    await expect(refused).rejects.toBeInstanceOf(TerminalError);
    await expect(refused).rejects.toThrow(/403 Forbidden.*unable to create new content in namespace shop/);
    expect(kube.workloads.get('shop', 'api')!.metadata.deletionTimestamp).toBeUndefined();
    expect(await kube.deletePod('shop', 'job')).toBe('deleted');
    expect(await kube.evictPod('other', 'api')).toBe('evicted');
  });
});

describe('a drain over several passes', () => {
  it('cordons, then evicts within the budget each pass until only DaemonSet and mirror Pods are left', async () => {
    const node = kube.putNode(makeNode('n1'));
    for (const name of ['w1', 'w2', 'w3']) web(name, 'n1', { gracePeriodSeconds: 30 });
    web('w4', 'n2');
    kube.putPod(podOnNode('n1', 'fluent', { owner: { kind: 'DaemonSet', name: 'fluent' } }));
    kube.putPod(podOnNode('n1', 'static', { mirror: true }));
    kube.putPod(podOnNode('n1', 'job', { phase: 'Succeeded' }));
    kube.workloads.putBudget(budget('web', { app: 'web' }, { maxUnavailable: 1 }));

    const cordoned = await kube.cordonNode('n1', { resourceVersion: node.metadata.resourceVersion! });
    expect(cordoned.spec?.unschedulable).toBe(true);
    await expect(kube.cordonNode('n1', { resourceVersion: node.metadata.resourceVersion! })).rejects.toMatchObject({
      statusCode: 409,
    });

    let passes = 0;
    let replacements = 0;
    const blocked: number[] = [];
    for (; passes < 20; passes++) {
      const pods = await kube.listPodsOnNode('n1');
      if (isDrained(pods)) break;
      const plan = planDrain(pods);
      for (const pod of plan.delete)
        await kube.deletePod(pod.metadata.namespace!, pod.metadata.name, { uid: pod.metadata.uid });
      for (const { pod, gracePeriodSeconds } of plan.evict) {
        const result = await kube.evictPod(pod.metadata.namespace!, pod.metadata.name, {
          gracePeriodSeconds,
          uid: pod.metadata.uid,
        });
        if (result === 'blocked') blocked.push(passes);
        // The ReplicaSet replaces an evicted Pod on another (schedulable) Node, Ready a little later.
        else web(`r${++replacements}`, 'n2', { ready: false });
      }
      clock.advance(30_000);
      for (const pod of kube.workloads.list()) if (pod.metadata.name.startsWith('r')) web(pod.metadata.name, 'n2');
    }
    expect(await names('n1')).toEqual(['fluent', 'static']);
    expect(replacements).toBe(3);
    expect(passes).toBe(3); // one web Pod per pass (maxUnavailable 1): the next has to wait for its replacement
    expect(blocked).toEqual([0, 0, 1]); // the passes in which an eviction answered 429
  });
});
