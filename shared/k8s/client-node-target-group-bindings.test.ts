import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { loadConfig } from '../config/config.ts';
import {
  ClientNodeLeaseRead,
  ClientNodePodGates,
  ClientNodeTargetGroupBindings,
} from './client-node-target-group-bindings.ts';
import { KubernetesApiError } from './errors.ts';
import { FakeAccessDeps } from './fakes/access.ts';
import { FAKE_API_SERVER_CA_DATA, status } from './fakes/api-server.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { FakeTargetGroupBindings } from './fakes/target-group-bindings.ts';
import { type FakeTgbServer, startFakeTgbServer } from './fakes/tgb-server.ts';
import { createTgbControllerKube, tokenKubeConfig } from './lambda-access.ts';
import { LBC_LEASE, leaseState } from './lbc-lease.ts';
import { RestLeaseRead, RestPodGates, RestTargetGroupBindings } from './rest-target-group-bindings.ts';
import type { TgbControllerKube } from './tgb-port.ts';
import { tgbControllerKube } from './tgb-port.ts';
import { type TargetGroupBinding, TGB_FINALIZER } from './tgb-types.ts';
import type { Pod } from './types.ts';

/**
 * The binding controller's adapters (TargetGroupBindings, Pod gates, the Lease read), client-node (kubeconfig mode)
 * and the Lambdas' REST client, against FakeTargetGroupBindings and FakeKubernetes served over HTTPS
 * (fakes/tgb-server.ts): the exact requests each makes, and the answers and errors it hands back.
 * test/k8s-contract/tgb-port.test.ts runs them against a real API server.
 */

const TOKEN = 'test-token';
const NOW = Date.parse('2026-11-02T08:00:00Z');
type Port = Omit<TgbControllerKube, 'getService' | 'listEndpointSlices' | 'listNodes' | 'recordEvent'>;

const unused = () => Promise.reject(new Error('not part of this test'));
const others = { getService: unused, listEndpointSlices: unused, listNodes: unused, recordEvent: unused };

const CLIENTS: { name: string; port(server: { url: string }, clock: FakeClock): Port }[] = [
  {
    name: 'client-node',
    port: (server, clock) => {
      const kc = tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, TOKEN);
      return tgbControllerKube(
        new ClientNodeTargetGroupBindings(kc),
        new ClientNodePodGates(kc, { clock }),
        new ClientNodeLeaseRead(kc),
        others,
        others,
      );
    },
  },
  {
    name: 'the REST client',
    port: (server, clock) => {
      const kc = { server: server.url, caData: FAKE_API_SERVER_CA_DATA, token: TOKEN };
      return tgbControllerKube(
        new RestTargetGroupBindings(kc),
        new RestPodGates(kc, { clock }),
        new RestLeaseRead(kc),
        others,
        others,
      );
    },
  },
];

const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/web/0123456789abcdef';

function binding(name: string, namespace = 'shop'): TargetGroupBinding {
  return {
    metadata: { name, namespace, labels: { team: 'shop' } },
    spec: {
      serviceRef: { name: 'web', port: 'http' },
      targetGroupARN: ARN,
      networking: { ingress: [{ from: [{ securityGroup: { groupID: 'sg-0abc' } }], ports: [{ port: 8080 }] }] },
    },
  };
}

function pod(name: string, labels: Record<string, string>): Pod {
  return {
    metadata: { name, namespace: 'shop', labels },
    spec: { nodeName: 'node-1' },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: '2026-11-02T07:00:00Z' }],
    },
  };
}

const GATE = 'target-health.elbv2.k8s.aws/web';
const BINDINGS = '/apis/elbv2.k8s.aws/v1beta1/namespaces/shop/targetgroupbindings';

describe.each(CLIENTS)('the binding controller over $name', (client) => {
  let clock: FakeClock;
  let fake: FakeTargetGroupBindings;
  let kube: FakeKubernetes;
  let server: FakeTgbServer;
  let port: Port;

  beforeEach(async () => {
    clock = new FakeClock(NOW);
    fake = new FakeTargetGroupBindings(clock);
    kube = new FakeKubernetes(clock);
    server = await startFakeTgbServer(fake, kube);
    port = client.port(server, clock);
  });

  afterEach(async () => {
    await server.close();
  });

  it('reads a binding as the API sent it; 404 is undefined', async () => {
    const stored = fake.putBinding(binding('web'));
    expect(await port.getTargetGroupBinding('shop', 'web')).toEqual(stored);
    expect(await port.getTargetGroupBinding('shop', 'gone')).toBeUndefined();
    expect(server.requests[0]).toMatchObject({ method: 'GET', url: `${BINDINGS}/web` });
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('lists bindings of every namespace, 500 at a time, or of one namespace', async () => {
    for (let i = 0; i < 501; i++) fake.putBinding(binding(`b${i}`, `ns${i % 3}`));
    const listed = await port.listTargetGroupBindings();
    expect(listed).toHaveLength(501);
    expect(listed[0]).toEqual((await fake.listTargetGroupBindings())[0]);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings?limit=500',
      expect.stringMatching(/^\/apis\/elbv2\.k8s\.aws\/v1beta1\/targetgroupbindings\?continue=[\w-]+&limit=500$/),
    ]);
    const ns1 = await port.listTargetGroupBindings('ns1');
    expect(ns1).toHaveLength(167);
    expect(new Set(ns1.map((b) => b.metadata.namespace))).toEqual(new Set(['ns1']));
    expect(server.requests[2]!.url).toBe('/apis/elbv2.k8s.aws/v1beta1/namespaces/ns1/targetgroupbindings?limit=500');
  });

  it('starts a list again, once, when its continue token expired (410 Gone)', async () => {
    for (let i = 0; i < 501; i++) fake.putBinding(binding(`b${i}`));
    let expired = false;
    server.intercept = (req) => {
      if (!req.query.get('continue') || expired) return undefined;
      expired = true;
      return { status: 410, body: status(410, 'Expired', 'The provided continue parameter is too old') };
    };
    expect(await port.listTargetGroupBindings()).toHaveLength(501);
    expect(server.requests.map((r) => r.query.has('continue'))).toEqual([false, true, false, true]);
  });

  it('answers [] and undefined while the CRD is not installed (the API server 404s its paths)', async () => {
    fake.putBinding(binding('web'));
    fake.crdInstalled = false;
    expect(await port.listTargetGroupBindings()).toEqual([]);
    expect(await port.listTargetGroupBindings('shop')).toEqual([]);
    expect(await port.getTargetGroupBinding('shop', 'web')).toBeUndefined();
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'GET', 'GET']);
  });

  it('sets and removes finalizers with a merge patch guarded by resourceVersion; a stale guard is 409', async () => {
    const rv = fake.putBinding(binding('web')).metadata.resourceVersion!;
    const written = await port.setTargetGroupBindingFinalizers('shop', 'web', [TGB_FINALIZER], { resourceVersion: rv });
    expect(written.metadata.finalizers).toEqual([TGB_FINALIZER]);
    expect(server.requests[0]).toMatchObject({ method: 'PATCH', url: `${BINDINGS}/web` });
    expect(server.requests[0]!.headers['content-type']).toBe('application/merge-patch+json');
    expect(JSON.parse(server.requests[0]!.body)).toEqual({
      metadata: { finalizers: [TGB_FINALIZER], resourceVersion: rv },
    });
    const stale = await port
      .setTargetGroupBindingFinalizers('shop', 'web', [], { resourceVersion: rv })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(KubernetesApiError);
    expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    fake.deleteBinding('shop', 'web');
    const marked = (await port.getTargetGroupBinding('shop', 'web'))!;
    expect(marked.metadata.deletionTimestamp).toBe('2026-11-02T08:00:00Z');
    await port.setTargetGroupBindingFinalizers('shop', 'web', [], {
      resourceVersion: marked.metadata.resourceVersion!,
    });
    expect(JSON.parse(server.requests.at(-1)!.body)).toEqual({
      metadata: { finalizers: null, resourceVersion: marked.metadata.resourceVersion },
    });
    expect(fake.bindings.has('shop/web')).toBe(false);
  });

  it('sets and removes annotations, and fills the spec, each a guarded merge patch of the binding', async () => {
    const rv = fake.putBinding(binding('web')).metadata.resourceVersion!;
    const annotated = await port.setTargetGroupBindingAnnotations(
      'shop',
      'web',
      { a: '1', b: '2' },
      { resourceVersion: rv },
    );
    const rv2 = annotated.metadata.resourceVersion!;
    const cleared = await port.setTargetGroupBindingAnnotations('shop', 'web', { a: null }, { resourceVersion: rv2 });
    expect(cleared.metadata.annotations).toEqual({ b: '2' });
    expect(JSON.parse(server.requests[1]!.body)).toEqual({
      metadata: { annotations: { a: null }, resourceVersion: rv2 },
    });
    const rv3 = cleared.metadata.resourceVersion!;
    const filled = await port.fillTargetGroupBindingSpec(
      'shop',
      'web',
      { targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-0a1b', targetGroupARN: undefined },
      { resourceVersion: rv3 },
    );
    expect(JSON.parse(server.requests[2]!.body)).toEqual({
      spec: { targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-0a1b' },
      metadata: { resourceVersion: rv3 },
    });
    expect(server.requests[2]).toMatchObject({ method: 'PATCH', url: `${BINDINGS}/web` });
    expect(filled.spec).toEqual({ ...binding('web').spec, targetType: 'ip', ipAddressType: 'ipv4', vpcID: 'vpc-0a1b' });
    expect(filled.metadata.generation).toBe(2);
    const refused = await port
      .fillTargetGroupBindingSpec(
        'shop',
        'web',
        { targetType: 'pod' as never },
        filled.metadata as { resourceVersion: string },
      )
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ statusCode: 422, message: expect.stringContaining('spec.targetType') });
  });

  it('replaces the status through the status subresource, unguarded, a field left out removed', async () => {
    fake.putBinding(binding('web'));
    const condition = {
      type: 'Ready',
      status: 'True' as const,
      reason: 'Reconciled',
      lastTransitionTime: '2026-11-02T08:00:00Z',
    };
    const written = await port.setTargetGroupBindingStatus('shop', 'web', {
      observedGeneration: 1,
      conditions: [condition],
    });
    expect(written.status).toEqual({ observedGeneration: 1, conditions: [condition] });
    expect(server.requests[0]).toMatchObject({ method: 'PATCH', url: `${BINDINGS}/web/status` });
    expect(server.requests[0]!.headers['content-type']).toBe('application/merge-patch+json');
    expect(JSON.parse(server.requests[0]!.body)).toEqual({
      status: { observedGeneration: 1, conditions: [condition] },
    });
    const bare = await port.setTargetGroupBindingStatus('shop', 'web', { observedGeneration: 2 });
    expect(JSON.parse(server.requests[1]!.body)).toEqual({ status: { observedGeneration: 2, conditions: null } });
    expect(bare.status).toEqual({ observedGeneration: 2 });
    expect(fake.callCount('setTargetGroupBindingStatus')).toBe(2);
  });

  it("lists a namespace's Pods by the Service's selector as a labelSelector", async () => {
    kube.putPod(pod('web-1', { app: 'web', tier: 'front' }));
    kube.putPod(pod('web-2', { app: 'web' }));
    kube.putPod(pod('db-1', { app: 'db' }));
    const listed = await port.listPods('shop', { tier: 'front', app: 'web' });
    expect(listed.map((p) => p.metadata.name)).toEqual(['web-1']);
    expect(listed[0]).toEqual(kube.workloads.get('shop', 'web-1'));
    expect(server.requests[0]!.path).toBe('/api/v1/namespaces/shop/pods');
    expect(server.requests[0]!.query.get('labelSelector')).toBe('app=web,tier=front');
    expect(server.requests[0]!.query.get('limit')).toBe('500');
    expect(kube.callCount('listPods')).toBe(1);
  });

  it("sets a gate's condition: reads the Pod, then strategic-merge-patches its status by type; nothing when unchanged", async () => {
    kube.putPod(pod('web-1', { app: 'web' }));
    const waiting = {
      type: GATE,
      status: 'False' as const,
      reason: 'Elb.RegistrationInProgress',
      message: 'registering',
    };
    const first = await port.setPodCondition('shop', 'web-1', waiting);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /api/v1/namespaces/shop/pods/web-1',
      'PATCH /api/v1/namespaces/shop/pods/web-1/status',
    ]);
    expect(server.requests[1]!.headers['content-type']).toBe('application/strategic-merge-patch+json');
    expect(JSON.parse(server.requests[1]!.body)).toEqual({
      status: { conditions: [{ ...waiting, lastTransitionTime: '2026-11-02T08:00:00Z' }] },
    });
    expect(first !== 'gone' && first.status?.conditions?.map((c) => c.type)).toEqual([GATE, 'Ready']);
    await port.setPodCondition('shop', 'web-1', waiting);
    expect(server.requests).toHaveLength(3);
    clock.advance(30_000);
    await port.setPodCondition('shop', 'web-1', { type: GATE, status: 'True' });
    expect(JSON.parse(server.requests[4]!.body)).toEqual({
      status: {
        conditions: [
          { type: GATE, status: 'True', reason: null, message: null, lastTransitionTime: '2026-11-02T08:00:30Z' },
        ],
      },
    });
    expect(kube.workloads.get('shop', 'web-1')!.status!.conditions).toEqual([
      { type: GATE, status: 'True', lastTransitionTime: '2026-11-02T08:00:30Z' },
      { type: 'Ready', status: 'False', lastTransitionTime: '2026-11-02T07:00:00Z' },
    ]);
    expect(await port.setPodCondition('shop', 'gone', { type: GATE, status: 'True' })).toBe('gone');
  });

  it("answers 'gone' when the Pod goes between the read and the write", async () => {
    kube.putPod(pod('web-1', { app: 'web' }));
    server.intercept = (req) =>
      req.method === 'PATCH' ? { status: 404, body: status(404, 'NotFound', 'pods "web-1" not found') } : undefined;
    expect(await port.setPodCondition('shop', 'web-1', { type: GATE, status: 'True' })).toBe('gone');
  });

  it('reads a Namespace with its labels, and the Lease; 404 is undefined', async () => {
    kube.workloads.putNamespace({
      metadata: { name: 'shop', labels: { 'elbv2.k8s.aws/pod-readiness-gate-inject': 'enabled' } },
    });
    expect((await port.getNamespace('shop'))?.metadata.labels).toMatchObject({
      'elbv2.k8s.aws/pod-readiness-gate-inject': 'enabled',
    });
    expect(await port.getNamespace('none')).toBeUndefined();
    expect(await port.getLease(LBC_LEASE.namespace, LBC_LEASE.name)).toBeUndefined();
    kube.workloads.leases.holdLbcLease('lbc-1', { renewedAtMs: NOW - 5_500 });
    const lease = await port.getLease(LBC_LEASE.namespace, LBC_LEASE.name);
    expect(lease).toMatchObject({
      metadata: { name: LBC_LEASE.name },
      spec: { holderIdentity: 'lbc-1', leaseDurationSeconds: 15 },
    });
    expect(leaseState(lease, NOW)).toEqual({ held: true, holder: 'lbc-1', expiresInSeconds: 10 });
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v1/namespaces/shop',
      '/api/v1/namespaces/none',
      '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/aws-load-balancer-controller-leader',
      '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/aws-load-balancer-controller-leader',
    ]);
  });

  it('hands back other API errors as KubernetesApiError, with status and reason', async () => {
    fake.queueError(
      'listTargetGroupBindings',
      new KubernetesApiError(403, 'Forbidden', 'targetgroupbindings is forbidden'),
    );
    await expect(port.listTargetGroupBindings()).rejects.toMatchObject({ statusCode: 403, reason: 'Forbidden' });
    kube.queueError('getLease', new KubernetesApiError(403, 'Forbidden', 'leases is forbidden'));
    await expect(port.getLease(LBC_LEASE.namespace, LBC_LEASE.name)).rejects.toMatchObject({ statusCode: 403 });
    kube.putPod(pod('web-1', { app: 'web' }));
    kube.queueError('setPodCondition', new KubernetesApiError(422, 'Invalid', 'bad'));
    await expect(port.setPodCondition('shop', 'web-1', { type: GATE, status: 'True' })).rejects.toMatchObject({
      statusCode: 422,
    });
  });
});

describe('createTgbControllerKube', () => {
  let server: FakeTgbServer;

  beforeEach(async () => {
    const clock = new FakeClock(NOW);
    const fake = new FakeTargetGroupBindings(clock);
    fake.putBinding(binding('web'));
    server = await startFakeTgbServer(fake, new FakeKubernetes(clock));
  });

  afterEach(async () => {
    await server.close();
  });

  it('goes over the REST client with the token of the Secrets Manager secret (token mode)', async () => {
    const deps = new FakeAccessDeps({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    deps.secretValues = [JSON.stringify({ token: 'sa-token', ca: FAKE_API_SERVER_CA_DATA })];
    const config = loadConfig({
      CLUSTER_NAME: 'prod',
      AWS_REGION: 'eu-west-1',
      KUBERNETES_AUTH_MODE: 'token',
      KUBERNETES_API_ENDPOINT: server.url,
      KUBERNETES_TOKEN_SECRET_ID: 'ccm/kubernetes',
    });
    const kube = createTgbControllerKube(config, deps);
    expect((await kube.listTargetGroupBindings()).map((b) => b.metadata.name)).toEqual(['web']);
    expect(await kube.getNamespace('default')).toMatchObject({ metadata: { name: 'default' } });
    expect(await kube.getLease(LBC_LEASE.namespace, LBC_LEASE.name)).toBeUndefined();
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(Array(3).fill('Bearer sa-token'));
  });

  it('goes over client-node with the default kubeconfig (kubeconfig mode)', async () => {
    const deps = new FakeAccessDeps({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    deps.loadDefaultKubeConfig = () =>
      tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, 'from-kubeconfig');
    const kube = createTgbControllerKube(loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1' }), deps);
    expect(await kube.getTargetGroupBinding('shop', 'web')).toMatchObject({ metadata: { name: 'web' } });
    expect(await kube.listPods('shop', { app: 'web' })).toEqual([]);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(Array(2).fill('Bearer from-kubeconfig'));
  });
});
