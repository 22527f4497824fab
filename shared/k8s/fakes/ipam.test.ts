import { beforeEach, describe, expect, it } from 'vitest';
import { podOnNode } from '../../../test/helpers/pods.ts';
import { FakeClock } from '../../clock.ts';
import { KubernetesApiError } from '../errors.ts';
import { POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from '../ipam-names.ts';
import { podRef } from '../types.ts';
import { FakeKubernetes, type KubernetesChange } from './fake-kubernetes.ts';

/**
 * FakeKubernetes as the IP address manager's port (`ipam-port.ts`): a Pod's annotations patched under its
 * resourceVersion and uid as the API server guards a merge patch, and the VPC CNI's ConfigMap, both seen by
 * watches as the relay sees them.
 */

let clock: FakeClock;
let kube: FakeKubernetes;
let changes: KubernetesChange[];
beforeEach(() => {
  clock = new FakeClock();
  kube = new FakeKubernetes(clock);
  changes = [];
  kube.watch((change) => changes.push(change));
});

const guardOf = (pod: { metadata: { resourceVersion?: string; uid?: string } }) => ({
  resourceVersion: pod.metadata.resourceVersion!,
  uid: pod.metadata.uid!,
});

describe('FakeKubernetes.patchPodAnnotations', () => {
  it('merges the annotations (null removes one), bumps resourceVersion and reports the Pod MODIFIED', async () => {
    const pod = kube.putPod(podOnNode('n1', 'web', { annotations: { keep: 'a', drop: 'b' } }));
    changes.length = 0;
    const patched = await kube.patchPodAnnotations(
      'default',
      'web',
      { [POD_IP_ANNOTATION]: '10.0.1.5/19', drop: null },
      guardOf(pod),
    );
    expect(patched).not.toBe('gone');
    const stored = kube.workloads.get('default', 'web')!;
    expect(stored.metadata.annotations).toEqual({ keep: 'a', [POD_IP_ANNOTATION]: '10.0.1.5/19' });
    expect(patched).toEqual(stored);
    expect(Number(stored.metadata.resourceVersion)).toBeGreaterThan(Number(pod.metadata.resourceVersion));
    expect(stored.metadata.uid).toBe(pod.metadata.uid);
    expect(stored.spec).toEqual(pod.spec);
    expect(changes).toEqual([
      { type: 'MODIFIED', kind: 'Pod', object: stored, revision: Number(stored.metadata.resourceVersion) },
    ]);
    expect(kube.callCount('patchPod')).toBe(1);
    expect(kube.writeCount()).toBe(1);
  });

  it('answers 409 Conflict to a stale resourceVersion and leaves the Pod as it was', async () => {
    const pod = kube.putPod(podOnNode('n1', 'web'));
    kube.putPod({ ...pod, metadata: { ...pod.metadata, labels: { moved: 'on' } } });
    const stale = await kube
      .patchPodAnnotations('default', 'web', { [POD_IP_ANNOTATION]: '10.0.1.5/19' }, guardOf(pod))
      .catch((err: unknown) => err);
    expect(stale).toBeInstanceOf(KubernetesApiError);
    expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(kube.workloads.get('default', 'web')!.metadata.annotations).toBeUndefined();
  });

  // The API server checks the resourceVersion first (a re-created Pod has another: 409); another uid under the
  // current resourceVersion changes an immutable field (test/k8s-contract/pods.contract.test.ts).
  it('answers 422 Invalid to the uid of another incarnation at the current resourceVersion', async () => {
    const pod = kube.putPod(podOnNode('n1', 'db-0'));
    const write = kube.patchPodAnnotations(
      'default',
      'db-0',
      { [POD_IP_ANNOTATION]: '10.0.1.5/19' },
      {
        resourceVersion: pod.metadata.resourceVersion!,
        uid: 'uid-of-the-old-one',
      },
    );
    await expect(write).rejects.toMatchObject({ statusCode: 422, reason: 'Invalid' });
    expect(kube.workloads.get('default', 'db-0')!.metadata.annotations).toBeUndefined();
  });

  it('answers gone for a Pod that no longer exists, terminated ones included', async () => {
    const guard = { resourceVersion: '1', uid: 'uid-1' };
    expect(await kube.patchPodAnnotations('default', 'nope', { a: 'b' }, guard)).toBe('gone');
    const pod = kube.putPod(podOnNode('n1', 'web', { gracePeriodSeconds: 5 }));
    await kube.deletePod('default', 'web');
    clock.advance(5_000);
    expect(await kube.patchPodAnnotations('default', 'web', { a: 'b' }, guardOf(pod))).toBe('gone');
  });

  it('throws an error queued for patchPod, and counts the call', async () => {
    const pod = kube.putPod(podOnNode('n1', 'web'));
    kube.queueError('patchPod', new KubernetesApiError(429, 'TooManyRequests', 'slow down'));
    await expect(kube.patchPodAnnotations('default', 'web', { a: 'b' }, guardOf(pod))).rejects.toMatchObject({
      statusCode: 429,
    });
    expect(kube.callCount('patchPod')).toBe(1);
    expect(await kube.patchPodAnnotations('default', 'web', { a: 'b' }, guardOf(pod))).not.toBe('gone');
  });

  it('records Events about a Pod through podRef', async () => {
    const pod = kube.putPod(podOnNode('n1', 'web', { namespace: 'shop' }));
    await kube.recordEvent({ involvedObject: podRef(pod), type: 'Warning', reason: 'NoAddress', message: 'none left' });
    expect(kube.eventsFor('Pod', 'web', 'NoAddress')).toEqual([
      {
        involvedObject: { apiVersion: 'v1', kind: 'Pod', name: 'web', namespace: 'shop', uid: pod.metadata.uid },
        type: 'Warning',
        reason: 'NoAddress',
        message: 'none left',
        timestamp: clock.now(),
      },
    ]);
  });
});

describe('FakeKubernetes ConfigMaps', () => {
  const { namespace, name } = VPC_CNI_CONFIGMAP;

  it('stores a ConfigMap with a new resourceVersion per write, keeping its uid, and reports each change', async () => {
    const created = kube.putConfigMap({ metadata: { namespace, name }, data: { 'enable-windows-ipam': 'true' } });
    const updated = kube.putConfigMap({ ...created, data: { 'enable-windows-ipam': 'false' } });
    expect(created).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace, name } });
    expect(updated.metadata.uid).toBe(created.metadata.uid);
    expect(Number(updated.metadata.resourceVersion)).toBeGreaterThan(Number(created.metadata.resourceVersion));
    expect(await kube.getConfigMap(namespace, name)).toEqual(updated);
    kube.deleteConfigMap(namespace, name);
    expect(await kube.getConfigMap(namespace, name)).toBeUndefined();
    expect(changes.map((c) => [c.type, c.kind, (c.object as typeof created).data])).toEqual([
      ['ADDED', 'ConfigMap', { 'enable-windows-ipam': 'true' }],
      ['MODIFIED', 'ConfigMap', { 'enable-windows-ipam': 'false' }],
      ['DELETED', 'ConfigMap', { 'enable-windows-ipam': 'false' }],
    ]);
    expect(changes[2]!.revision).toBeGreaterThan(Number(updated.metadata.resourceVersion));
    expect(kube.callCount('getConfigMap')).toBe(2);
    expect(kube.writeCount()).toBe(0);
  });

  it('hands out copies, and throws an error queued for getConfigMap', async () => {
    kube.putConfigMap({ metadata: { namespace, name }, data: { a: '1' } });
    const read = (await kube.getConfigMap(namespace, name))!;
    read.data!.a = 'changed';
    expect((await kube.getConfigMap(namespace, name))!.data).toEqual({ a: '1' });
    kube.queueError('getConfigMap', new KubernetesApiError(503, 'ServiceUnavailable', 'try later'));
    await expect(kube.getConfigMap(namespace, name)).rejects.toMatchObject({ statusCode: 503 });
  });
});
