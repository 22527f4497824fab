import { CoreV1Api, type KubeConfig, Watch } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { podOnNode } from '../../test/helpers/pods.ts';
import { FakeClock } from '../clock.ts';
import { loadConfig } from '../config/config.ts';
import { apiConfiguration } from './client-node-adapter.ts';
import { KubernetesApiError } from './errors.ts';
import { FakeAccessDeps } from './fakes/access.ts';
import { ADAPTER_CLIENTS } from './fakes/adapter-clients.ts';
import { FAKE_API_SERVER_CA_DATA, status } from './fakes/api-server.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { type FakeKubernetesServer, startFakeKubernetesServer } from './fakes/server.ts';
import { POD_IP_ANNOTATION, VPC_CNI_CONFIGMAP } from './ipam-names.ts';
import type { IpamKubernetesPort } from './ipam-port.ts';
import { createIpamKubernetesPort, tokenKubeConfig } from './lambda-access.ts';

/**
 * ClientNodeIpam against FakeKubernetes served over HTTPS: the requests the IP address manager sends
 * (the Node's Pods by field selector, an annotation merge patch guarded by resourceVersion and uid, the VPC
 * CNI's ConfigMap) and the API server's answers, seen through the real client.
 */

function kubeConfigFor(server: FakeKubernetesServer, token = 'test-token'): KubeConfig {
  return tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, token);
}

let clock: FakeClock;
let fake: FakeKubernetes;
let server: FakeKubernetesServer;
let ipam: IpamKubernetesPort;

beforeEach(async () => {
  clock = new FakeClock();
  fake = new FakeKubernetes(clock);
  server = await startFakeKubernetesServer(fake);
});

afterEach(async () => {
  await server.close();
});

const guardOf = (pod: { metadata: { resourceVersion?: string; uid?: string } }) => ({
  resourceVersion: pod.metadata.resourceVersion!,
  uid: pod.metadata.uid!,
});

describe.each(ADAPTER_CLIENTS)('IpamKubernetesPort over $name', (client) => {
  beforeEach(() => {
    ipam = client.ipam(server);
  });

  describe('listPodsOnNode', () => {
    it("lists the Node's Pods of every namespace by field selector, 500 at a time, as the API sent them", async () => {
      for (let i = 0; i < 501; i++) fake.putPod(podOnNode('win-1', `p${i}`, { namespace: `ns${i % 2}` }));
      fake.putPod(podOnNode('win-2', 'elsewhere'));
      const listed = await ipam.listPodsOnNode('win-1');
      expect(listed).toHaveLength(501);
      expect(listed.find((p) => p.metadata.name === 'p3')).toEqual(fake.workloads.get('ns1', 'p3'));
      expect(server.requests.map((r) => r.url)).toEqual([
        '/api/v1/pods?fieldSelector=spec.nodeName%3Dwin-1&limit=500',
        expect.stringMatching(
          /^\/api\/v1\/pods\?continue=[A-Za-z0-9_-]+&fieldSelector=spec.nodeName%3Dwin-1&limit=500$/,
        ),
      ]);
      expect(fake.callCount('listPodsOnNode')).toBe(1);
    });
  });

  describe('patchPodAnnotations', () => {
    it('sends a merge patch of the annotations with resourceVersion and uid as preconditions', async () => {
      const pod = fake.putPod(podOnNode('win-1', 'web', { namespace: 'shop', annotations: { old: 'x' } }));
      const patched = await ipam.patchPodAnnotations(
        'shop',
        'web',
        { [POD_IP_ANNOTATION]: '10.0.1.5/19', old: null },
        guardOf(pod),
      );
      const [request] = server.requests;
      expect(request).toMatchObject({ method: 'PATCH', url: '/api/v1/namespaces/shop/pods/web' });
      expect(request!.headers['content-type']).toBe('application/merge-patch+json');
      expect(JSON.parse(request!.body)).toEqual({
        metadata: {
          annotations: { [POD_IP_ANNOTATION]: '10.0.1.5/19', old: null },
          resourceVersion: pod.metadata.resourceVersion,
          uid: pod.metadata.uid,
        },
      });
      const stored = fake.workloads.get('shop', 'web')!;
      expect(stored.metadata.annotations).toEqual({ [POD_IP_ANNOTATION]: '10.0.1.5/19' });
      expect(patched).toEqual(stored);
      expect(fake.callCount('patchPod')).toBe(1);
    });

    // As the API server answers (test/k8s-contract/pods.contract.test.ts): the resourceVersion is checked first;
    // another uid under the current one is a change of an immutable field.
    it('throws 409 Conflict for a stale resourceVersion, 422 Invalid for another uid at the current one', async () => {
      const pod = fake.putPod(podOnNode('win-1', 'db-0'));
      const moved = fake.putPod({ ...pod, metadata: { ...pod.metadata, labels: { moved: 'on' } } });
      const stale = await ipam
        .patchPodAnnotations('default', 'db-0', { a: 'b' }, guardOf(pod))
        .catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(KubernetesApiError);
      expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
      const guard = { resourceVersion: moved.metadata.resourceVersion!, uid: 'uid-of-the-old-one' };
      const other = await ipam.patchPodAnnotations('default', 'db-0', { a: 'b' }, guard).catch((e: unknown) => e);
      expect(other).toMatchObject({ statusCode: 422, reason: 'Invalid' });
      expect(fake.workloads.get('default', 'db-0')!.metadata.annotations).toBeUndefined();
    });

    it('answers gone when the Pod does not exist (404)', async () => {
      const guard = { resourceVersion: '1', uid: 'uid-1' };
      expect(await ipam.patchPodAnnotations('shop', 'nope', { a: 'b' }, guard)).toBe('gone');
      expect(server.requests[0]).toMatchObject({ method: 'PATCH', url: '/api/v1/namespaces/shop/pods/nope' });
    });

    it('throws the other API errors as KubernetesApiError', async () => {
      const pod = fake.putPod(podOnNode('win-1', 'web'));
      server.intercept = () => ({ status: 403, body: status(403, 'Forbidden', 'pods "web" is forbidden') });
      const refused = await ipam.patchPodAnnotations('default', 'web', { a: 'b' }, guardOf(pod)).catch((e) => e);
      expect(refused).toBeInstanceOf(KubernetesApiError);
      expect(refused).toMatchObject({ statusCode: 403, reason: 'Forbidden' });
    });
  });

  describe('getConfigMap', () => {
    const { namespace, name } = VPC_CNI_CONFIGMAP;

    it('reads the ConfigMap as the API sent it; 404 is undefined', async () => {
      expect(await ipam.getConfigMap(namespace, name)).toBeUndefined();
      const stored = fake.putConfigMap({ metadata: { namespace, name }, data: { 'enable-windows-ipam': 'true' } });
      expect(await ipam.getConfigMap(namespace, name)).toEqual(stored);
      expect(server.requests.map((r) => [r.method, r.url])).toEqual([
        ['GET', '/api/v1/namespaces/kube-system/configmaps/amazon-vpc-cni'],
        ['GET', '/api/v1/namespaces/kube-system/configmaps/amazon-vpc-cni'],
      ]);
      expect(fake.callCount('getConfigMap')).toBe(2);
    });
  });
});

describe('the fake API server', () => {
  const { namespace, name } = VPC_CNI_CONFIGMAP;

  it('lists and watches ConfigMaps by name, as the relay watches the one it needs', async () => {
    fake.putConfigMap({ metadata: { namespace, name }, data: { a: '1' } });
    fake.putConfigMap({ metadata: { namespace, name: 'other' }, data: { a: '2' } });
    const core = new CoreV1Api(apiConfiguration(kubeConfigFor(server)));
    const fieldSelector = `metadata.name=${name}`;
    const listed = await core.listNamespacedConfigMap({ namespace, fieldSelector });
    expect(listed.items.map((c) => c.data)).toEqual([{ a: '1' }]);
    fake.putConfigMap({ metadata: { namespace, name: 'other' }, data: { a: '3' } });
    fake.putConfigMap({ metadata: { namespace, name }, data: { a: '4' } });
    fake.deleteConfigMap(namespace, name);
    const seen: [string, unknown][] = [];
    await new Promise<void>((resolve, reject) => {
      void new Watch(kubeConfigFor(server))
        .watch(
          `/api/v1/namespaces/${namespace}/configmaps`,
          { fieldSelector, resourceVersion: listed.metadata!.resourceVersion },
          (type, object: { data?: unknown }) => seen.push([type, object.data]),
          (err) => (err ? reject(err) : resolve()),
        )
        .catch(reject);
    });
    expect(seen).toEqual([
      ['MODIFIED', { a: '4' }],
      ['DELETED', { a: '4' }],
    ]);
  });
});

describe('createIpamKubernetesPort', () => {
  it('authenticates as the Node port does, and fetches the token again on 401 before patching', async () => {
    await server.close();
    server = await startFakeKubernetesServer(fake, { authenticate: (token) => token === 'fresh' });
    const pod = fake.putPod(podOnNode('win-1', 'web'));
    const deps = new FakeAccessDeps({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' });
    deps.secretValues = ['stale', 'fresh'].map((token) => JSON.stringify({ token, ca: FAKE_API_SERVER_CA_DATA }));
    const config = loadConfig({
      CLUSTER_NAME: 'prod',
      AWS_REGION: 'eu-west-1',
      KUBERNETES_AUTH_MODE: 'token',
      KUBERNETES_API_ENDPOINT: server.url,
      KUBERNETES_TOKEN_SECRET_ID: deps.secretId,
    });
    const port = createIpamKubernetesPort(config, deps);
    expect(await port.patchPodAnnotations('default', 'web', { a: 'b' }, guardOf(pod))).not.toBe('gone');
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer stale', 'Bearer fresh']);
    expect(fake.workloads.get('default', 'web')!.metadata.annotations).toEqual({ a: 'b' });
  });
});
