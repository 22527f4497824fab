import { expect } from 'vitest';
import { RetryableError } from '../../shared/errors.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { makeNode } from '../helpers/nodes.ts';
import { budget, type PodOptions, podOnNode } from '../helpers/pods.ts';
import { describeKube } from './contract.ts';

/**
 * Pods through the drain port (the interruption controller: list a Node's Pods, evict them through the Eviction
 * API that PodDisruptionBudgets guard, delete finished ones) and the IP address manager's port (its Pod
 * annotation, the VPC CNI's ConfigMap). The test plays the scheduler (a Binding), the kubelet (the Pod's status)
 * and the disruption controller (the budget's status): nothing else writes them on the lab's API server.
 * https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/
 */

describeKube('Pods', (world, client, test) => {
  const drain = () => client.drain(world().server);
  const ipam = () => client.ipam(world().server);
  const ns = () => world().namespace;
  const node = () => world().name('n1');
  const spec = (name: string, options: PodOptions = {}): Pod =>
    podOnNode(node(), name, { namespace: ns(), labels: { app: 'web' }, ...options });
  /** A Pod scheduled on the test's Node and running there (Ready unless told). */
  const run = (name: string, options: PodOptions = {}) => world().seed.runPod(spec(name, options), node());
  /** A budget over the `app: web` Pods and the status the disruption controller would give it. */
  const guard = (minAvailable: number, counts: Parameters<ReturnType<typeof world>['seed']['createBudget']>[1]) =>
    world().seed.createBudget(budget('web', { app: 'web' }, { namespace: ns(), minAvailable }), counts);

  test('lists the Pods bound to a Node by field selector: not those of another Node, nor unscheduled ones', async () => {
    await world().seed.createNode(makeNode(node()));
    const a = await run('a');
    await world().seed.runPod(spec('elsewhere'), world().name('n2'));
    await world().seed.createPod(spec('pending'));
    const listed = await drain().listPodsOnNode(node());
    expect(listed.map((p) => [p.metadata.name, p.metadata.uid, p.spec?.nodeName, p.status?.phase])).toEqual([
      ['a', a.metadata.uid, node(), 'Running'],
    ]);
    expect((await ipam().listPodsOnNode(node())).map((p) => p.metadata.name)).toEqual(['a']);
  });

  test('evicts a Pod no budget covers: it terminates with its grace period, and the next eviction answers evicted too', async () => {
    await run('a', { gracePeriodSeconds: 45 });
    expect(await drain().evictPod(ns(), 'a')).toBe('evicted');
    const terminating = await world().read.pod(ns(), 'a');
    expect(terminating?.metadata.deletionTimestamp).toEqual(expect.any(String));
    expect(terminating?.metadata.deletionGracePeriodSeconds).toBe(45);
    expect(await drain().evictPod(ns(), 'a')).toBe('evicted');
  });

  test('an evicted Pod carries the DisruptionTarget condition', async () => {
    await run('a');
    expect(await drain().evictPod(ns(), 'a')).toBe('evicted');
    const evicted = await world().read.pod(ns(), 'a');
    expect(evicted?.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }),
    );
  });

  test('an eviction with grace period 0, or of a Pod never scheduled, deletes it at once', async () => {
    await run('a');
    await world().seed.createPod(spec('pending'));
    expect(await drain().evictPod(ns(), 'a', { gracePeriodSeconds: 0 })).toBe('evicted');
    expect(await drain().evictPod(ns(), 'pending')).toBe('evicted');
    expect(await world().read.pod(ns(), 'a')).toBeUndefined();
    expect(await world().read.pod(ns(), 'pending')).toBeUndefined();
  });

  test('a budget that allows no disruption blocks the eviction (429), and the Pod stays', async () => {
    await run('a');
    await run('b');
    await guard(2, { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 });
    expect(await drain().evictPod(ns(), 'a')).toBe('blocked');
    expect((await world().read.pod(ns(), 'a'))?.metadata.deletionTimestamp).toBeUndefined();
  });

  test('a budget that allows one disruption lets one eviction through and blocks the next', async () => {
    await run('a');
    await run('b');
    await guard(1, { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 });
    expect(await drain().evictPod(ns(), 'a')).toBe('evicted');
    expect((await world().read.budget(ns(), 'web'))?.status?.disruptionsAllowed).toBe(0);
    expect(await drain().evictPod(ns(), 'b')).toBe('blocked');
  });

  test('a Pod that is not Ready may go while its budget is healthy (IfHealthyBudget); a Ready one may not', async () => {
    await run('a');
    await run('b');
    await run('sick', { ready: false });
    await guard(2, { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 3 });
    expect(await drain().evictPod(ns(), 'a')).toBe('blocked');
    expect(await drain().evictPod(ns(), 'sick')).toBe('evicted');
  });

  test('refuses to evict a Pod two budgets cover (500), as a retryable error', async () => {
    await run('a');
    await guard(0, { disruptionsAllowed: 1, currentHealthy: 1, desiredHealthy: 0, expectedPods: 1 });
    await world().seed.createBudget(budget('also', { app: 'web' }, { namespace: ns(), minAvailable: 0 }), {
      disruptionsAllowed: 1,
      currentHealthy: 1,
      desiredHealthy: 0,
      expectedPods: 1,
    });
    await expect(drain().evictPod(ns(), 'a')).rejects.toBeInstanceOf(RetryableError);
    expect((await world().read.pod(ns(), 'a'))?.metadata.deletionTimestamp).toBeUndefined();
  });

  test('answers gone for a Pod that does not exist, or whose uid is not the one listed', async () => {
    await run('a');
    expect(await drain().evictPod(ns(), 'absent')).toBe('gone');
    expect(await drain().evictPod(ns(), 'a', { uid: '00000000-0000-0000-0000-000000000000' })).toBe('gone');
    expect(await drain().deletePod(ns(), 'absent')).toBe('gone');
    expect(await drain().deletePod(ns(), 'a', { uid: '00000000-0000-0000-0000-000000000000' })).toBe('gone');
    expect((await world().read.pod(ns(), 'a'))?.metadata.deletionTimestamp).toBeUndefined();
  });

  test('deletes a finished Pod, guarded by its uid', async () => {
    const done = await run('done', { phase: 'Succeeded' });
    expect(await drain().deletePod(ns(), 'done', { uid: done.metadata.uid })).toBe('deleted');
    const after = await world().read.pod(ns(), 'done');
    // Bound to a Node, it waits for the kubelet to confirm (which never comes here); either way it is going.
    expect(after === undefined || after.metadata.deletionTimestamp !== undefined).toBe(true);
  });

  test("writes the IP address manager's annotation guarded by resourceVersion and uid; null removes it", async () => {
    const pod = await run('a', { annotations: { 'example.com/keep': 'yes' } });
    const guardOf = (p: Pod) => ({ resourceVersion: p.metadata.resourceVersion!, uid: p.metadata.uid! });
    const annotated = await ipam().patchPodAnnotations(
      ns(),
      'a',
      { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.0.7' },
      guardOf(pod),
    );
    expect(annotated).not.toBe('gone');
    const written = annotated as Pod;
    expect(written.metadata.annotations).toEqual({
      'example.com/keep': 'yes',
      'vpc.amazonaws.com/PrivateIPv4Address': '10.0.0.7',
    });
    await expect(
      ipam().patchPodAnnotations(ns(), 'a', { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.0.8' }, guardOf(pod)),
    ).rejects.toMatchObject({ statusCode: 409 });
    // The uid is immutable: another one under the current resourceVersion is an invalid write.
    await expect(
      ipam().patchPodAnnotations(
        ns(),
        'a',
        { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.0.8' },
        { ...guardOf(written), uid: '00000000-0000-0000-0000-000000000000' },
      ),
    ).rejects.toMatchObject({ statusCode: 422, message: expect.stringContaining('metadata.uid') });
    const removed = (await ipam().patchPodAnnotations(
      ns(),
      'a',
      { 'vpc.amazonaws.com/PrivateIPv4Address': null },
      guardOf(written),
    )) as Pod;
    expect(removed.metadata.annotations).toEqual({ 'example.com/keep': 'yes' });
    expect(
      await ipam().patchPodAnnotations(ns(), 'absent', { a: 'b' }, { resourceVersion: '1', uid: pod.metadata.uid! }),
    ).toBe('gone');
  });

  test('does not annotate a Pod re-created under the same name with the old guard (409)', async () => {
    const first = await world().seed.createPod(spec('p'));
    // Never scheduled, it goes at once.
    expect(await drain().deletePod(ns(), 'p', { uid: first.metadata.uid })).toBe('deleted');
    const second = await world().seed.createPod(spec('p'));
    expect(second.metadata.uid).not.toBe(first.metadata.uid);
    await expect(
      ipam().patchPodAnnotations(
        ns(),
        'p',
        { 'vpc.amazonaws.com/PrivateIPv4Address': '10.0.0.8' },
        { resourceVersion: first.metadata.resourceVersion!, uid: first.metadata.uid! },
      ),
    ).rejects.toMatchObject({ statusCode: 409 });
    expect((await world().read.pod(ns(), 'p'))?.metadata.annotations).toBeUndefined();
  });

  test('reads a ConfigMap, and answers undefined for one that does not exist', async () => {
    const created = await world().seed.createConfigMap({
      metadata: { name: 'amazon-vpc-cni', namespace: ns() },
      data: { 'enable-windows-ipam': 'true' },
    });
    const read = await ipam().getConfigMap(ns(), 'amazon-vpc-cni');
    expect(read).toMatchObject({ metadata: { uid: created.metadata.uid }, data: { 'enable-windows-ipam': 'true' } });
    expect(await ipam().getConfigMap(ns(), 'absent')).toBeUndefined();
  });
});
