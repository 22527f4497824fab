import { request } from 'node:https';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.ts';
import { KubernetesApiError } from '../errors.ts';
import { KubernetesRestClient } from '../rest-client.ts';
import type { TargetGroupBinding } from '../tgb-types.ts';
import { FAKE_API_SERVER_CA_DATA } from './api-server.ts';
import { FakeKubernetes } from './fake-kubernetes.ts';
import { FakeTargetGroupBindings } from './target-group-bindings.ts';
import { type FakeTgbServer, startFakeTgbServer } from './tgb-server.ts';

/**
 * The fake API server's TargetGroupBinding routes beyond what the port's adapters request (their tests are
 * client-node-target-group-bindings.test.ts): the watch a relay would open, the answers without the CRD, a PATCH
 * counted as the port write it stands for, a create's namespace, and the routes it does not serve (the stack bindings'
 * writes through the adapters: rest-target-group-bindings-writes.test.ts).
 */

const ROOT = '/apis/elbv2.k8s.aws/v1beta1';
const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/web/0123456789abcdef';

function binding(name: string, namespace: string): TargetGroupBinding {
  return { metadata: { name, namespace }, spec: { serviceRef: { name: 'web', port: 80 }, targetGroupARN: ARN } };
}

interface WatchEvent {
  type: string;
  object: TargetGroupBinding;
}

describe('the fake API server for TargetGroupBindings', () => {
  let fake: FakeTargetGroupBindings;
  let server: FakeTgbServer;
  let api: KubernetesRestClient;

  beforeEach(async () => {
    const clock = new FakeClock();
    fake = new FakeTargetGroupBindings(clock);
    server = await startFakeTgbServer(fake, new FakeKubernetes(clock));
    api = new KubernetesRestClient({ server: server.url, caData: FAKE_API_SERVER_CA_DATA, token: 't' });
  });

  afterEach(async () => {
    await server.close();
  });

  /** A raw watch request: its NDJSON lines, parsed; an error status as KubernetesApiError. */
  const watch = (at: string, resourceVersion?: string): Promise<WatchEvent[]> => {
    const query = `watch=true${resourceVersion ? `&resourceVersion=${resourceVersion}` : ''}`;
    const ca = Buffer.from(FAKE_API_SERVER_CA_DATA, 'base64');
    return new Promise((resolve, reject) => {
      const req = request(`${server.url}${at}?${query}`, { ca }, (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new KubernetesApiError(res.statusCode ?? 0, 'Error', text));
          else
            resolve(
              text
                .split('\n')
                .filter(Boolean)
                .map((line) => JSON.parse(line) as WatchEvent),
            );
        });
      });
      req.on('error', reject);
      req.end();
    });
  };

  it('watches from a list: every binding ADDED without a resourceVersion, the changes after one with it', async () => {
    fake.putBinding(binding('a', 'shop'));
    fake.putBinding(binding('b', 'other'));
    const list = await api.send<{ metadata: { resourceVersion: string }; items: unknown[] }>({
      method: 'GET',
      path: `${ROOT}/targetgroupbindings`,
    });
    expect(list.items).toHaveLength(2);
    expect(list.metadata.resourceVersion).toBe('2');
    const initial = await watch(`${ROOT}/targetgroupbindings`);
    expect(initial.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.kind}`)).toEqual([
      'ADDED a TargetGroupBinding',
      'ADDED b TargetGroupBinding',
    ]);
    fake.mutateBinding('shop', 'a', (b) => {
      b.spec.targetType = 'ip';
    });
    fake.deleteBinding('other', 'b');
    const changes = await watch(`${ROOT}/targetgroupbindings`, list.metadata.resourceVersion);
    expect(changes.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.metadata.resourceVersion}`)).toEqual([
      'MODIFIED a 3',
      'DELETED b 4',
    ]);
    const inShop = await watch(`${ROOT}/namespaces/shop/targetgroupbindings`, list.metadata.resourceVersion);
    expect(inShop.map((e) => e.type)).toEqual(['MODIFIED']);
  });

  it('answers 404 on every path of the resource while the CRD is not installed', async () => {
    fake.putBinding(binding('a', 'shop'));
    fake.crdInstalled = false;
    for (const at of [`${ROOT}/targetgroupbindings`, `${ROOT}/namespaces/shop/targetgroupbindings/a`]) {
      await expect(api.send({ method: 'GET', path: at })).rejects.toMatchObject({ statusCode: 404 });
    }
    await expect(watch(`${ROOT}/targetgroupbindings`)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('counts a PATCH as the port write it stands for, and answers the error queued for that write', async () => {
    const stored = fake.putBinding(binding('a', 'shop'));
    fake.queueError('setTargetGroupBindingAnnotations', new KubernetesApiError(500, 'InternalError', 'etcd'));
    const patch = (body: unknown, status = false) =>
      api.send<TargetGroupBinding>({
        method: 'PATCH',
        path: `${ROOT}/namespaces/shop/targetgroupbindings/a${status ? '/status' : ''}`,
        body,
        contentType: 'application/merge-patch+json',
      });
    await expect(patch({ metadata: { annotations: { x: '1' } } })).rejects.toMatchObject({ statusCode: 500 });
    await patch({
      metadata: { finalizers: ['elbv2.k8s.aws/resources'], resourceVersion: stored.metadata.resourceVersion },
    });
    await patch({ spec: { targetType: 'ip' } });
    await patch({ status: { observedGeneration: 2 } }, true);
    expect(Object.fromEntries(fake.calls)).toEqual({
      setTargetGroupBindingAnnotations: 1,
      setTargetGroupBindingFinalizers: 1,
      fillTargetGroupBindingSpec: 1,
      setTargetGroupBindingStatus: 1,
    });
    await expect(
      api.send({
        method: 'PATCH',
        path: `${ROOT}/namespaces/shop/targetgroupbindings/a`,
        body: {},
        contentType: 'application/json-patch+json',
      }),
    ).rejects.toMatchObject({ statusCode: 415 });
    await expect(
      api.send({ method: 'PUT', path: `${ROOT}/namespaces/shop/targetgroupbindings/a`, body: stored }),
    ).rejects.toMatchObject({
      statusCode: 405,
    });
  });

  it('creates in the namespace of the URL (400 when the body names another, 405 without one), deletes as the fake', async () => {
    const create = (path: string, body: TargetGroupBinding) =>
      api.send<TargetGroupBinding>({ method: 'POST', path, body });
    await expect(create(`${ROOT}/namespaces/shop/targetgroupbindings`, binding('a', 'other'))).rejects.toMatchObject({
      statusCode: 400,
      reason: 'BadRequest',
    });
    await expect(create(`${ROOT}/targetgroupbindings`, binding('a', 'shop'))).rejects.toMatchObject({
      statusCode: 405,
    });
    const { namespace: _ns, ...metadata } = binding('a', 'shop').metadata;
    const created = await create(`${ROOT}/namespaces/shop/targetgroupbindings`, { ...binding('a', 'shop'), metadata });
    expect(created).toEqual(fake.bindings.get('shop/a'));
    const gone = await api.send<TargetGroupBinding>({
      method: 'DELETE',
      path: `${ROOT}/namespaces/shop/targetgroupbindings/a`,
      body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: created.metadata.uid } },
    });
    expect(gone).toEqual(created);
    expect(fake.bindings.has('shop/a')).toBe(false);
    await expect(
      api.send({ method: 'DELETE', path: `${ROOT}/namespaces/shop/targetgroupbindings/a` }),
    ).rejects.toMatchObject({ statusCode: 404, reason: 'NotFound' });
    expect(Object.fromEntries(fake.calls)).toEqual({ createTargetGroupBinding: 1, deleteTargetGroupBinding: 1 });
  });
});
