import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { loadConfig } from '../config/config.ts';
import { ClientNodePodGates, ClientNodeTargetGroupBindings } from './client-node-target-group-bindings.ts';
import { KubernetesApiError } from './errors.ts';
import { FakeAccessDeps } from './fakes/access.ts';
import { FAKE_API_SERVER_CA_DATA, status } from './fakes/api-server.ts';
import { FakeKubernetes } from './fakes/fake-kubernetes.ts';
import { FakeTargetGroupBindings } from './fakes/target-group-bindings.ts';
import { type FakeTgbServer, startFakeTgbServer } from './fakes/tgb-server.ts';
import { createStackBindingsPort, tokenKubeConfig } from './lambda-access.ts';
import { RestPodGates, RestTargetGroupBindings } from './rest-target-group-bindings.ts';
import { type StackBindingsPort, type StackRef, stackBinding, stackBindingsPort } from './stack-bindings.ts';
import { TGB_FINALIZER } from './tgb-types.ts';

/**
 * The stack bindings' writes (stack-bindings.ts `StackBindingWrites`) through both adapters, client-node
 * (kubeconfig mode) and the Lambdas' REST client, against FakeTargetGroupBindings served over HTTPS (tgb-server.ts):
 * the exact requests, and the answers and errors handed back; and `createStackBindingsPort`'s access modes.
 * test/k8s-contract/stack-bindings.test.ts runs the same writes against a real API server.
 */

const TOKEN = 'test-token';
const NOW = Date.parse('2026-11-02T08:00:00Z');
const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/k8s-shop-web-0a1b2c3d4e/0123456789abcdef';
const STACK: StackRef = { kind: 'ingress', explicit: true, name: 'shop' };
const BINDINGS = '/apis/elbv2.k8s.aws/v1beta1/namespaces/shop/targetgroupbindings';

const wanted = (name = 'k8s-shop-web-0a1b2c3d4e') =>
  stackBinding(STACK, {
    group: { arn: ARN, name, targetType: 'ip', ipAddressType: 'ipv4', vpcId: 'vpc-0a1b' },
    service: { namespace: 'shop', name: 'web', port: 'http' },
  });

const CLIENTS: { name: string; port(server: { url: string }): StackBindingsPort }[] = [
  {
    name: 'client-node',
    port: (server) => {
      const kc = tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, TOKEN);
      return stackBindingsPort(new ClientNodeTargetGroupBindings(kc), new ClientNodePodGates(kc));
    },
  },
  {
    name: 'the REST client',
    port: (server) => {
      const kc = { server: server.url, caData: FAKE_API_SERVER_CA_DATA, token: TOKEN };
      return stackBindingsPort(new RestTargetGroupBindings(kc), new RestPodGates(kc));
    },
  },
];

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err,
  );

describe.each(CLIENTS)('the stack bindings over $name', (client) => {
  let fake: FakeTargetGroupBindings;
  let server: FakeTgbServer;
  let port: StackBindingsPort;

  beforeEach(async () => {
    const clock = new FakeClock(NOW);
    fake = new FakeTargetGroupBindings(clock);
    server = await startFakeTgbServer(fake, new FakeKubernetes(clock));
    port = client.port(server);
  });

  afterEach(async () => {
    await server.close();
  });

  it('creates a binding with a POST of the object to its namespace, and answers it as stored', async () => {
    const created = await port.createTargetGroupBinding(wanted());
    expect(server.requests[0]).toMatchObject({ method: 'POST', url: BINDINGS });
    expect(server.requests[0]!.headers['content-type']).toBe('application/json');
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.parse(server.requests[0]!.body)).toEqual(wanted());
    expect(created).toEqual(fake.bindings.get('shop/k8s-shop-web-0a1b2c3d4e'));
    expect(created.metadata).toMatchObject({
      labels: { 'ingress.k8s.aws/stack': 'shop' },
      finalizers: [TGB_FINALIZER],
      uid: expect.any(String),
      generation: 1,
    });
    expect(created.spec).toEqual(wanted().spec);
    expect(fake.callCount('createTargetGroupBinding')).toBe(1);
  });

  it('answers 409 AlreadyExists when the name is taken, and leaves the one there', async () => {
    const first = await port.createTargetGroupBinding(wanted());
    const again = await rejection(
      port.createTargetGroupBinding({ ...wanted(), spec: { ...wanted().spec, targetType: 'instance' } }),
    );
    expect(again).toBeInstanceOf(KubernetesApiError);
    expect(again).toMatchObject({ statusCode: 409, reason: 'AlreadyExists' });
    expect(fake.bindings.get('shop/k8s-shop-web-0a1b2c3d4e')).toEqual(first);
  });

  it('deletes with the uid as a DeleteOptions precondition: marked while its finalizer is on', async () => {
    const created = await port.createTargetGroupBinding(wanted());
    expect(await port.deleteTargetGroupBinding('shop', created.metadata.name, created.metadata.uid)).toBe('deleted');
    expect(server.requests[1]).toMatchObject({ method: 'DELETE', url: `${BINDINGS}/k8s-shop-web-0a1b2c3d4e` });
    expect(server.requests[1]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(server.requests[1]!.body)).toEqual({
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      preconditions: { uid: created.metadata.uid },
    });
    expect(fake.bindings.get('shop/k8s-shop-web-0a1b2c3d4e')?.metadata).toMatchObject({
      deletionTimestamp: '2026-11-02T08:00:00Z',
      finalizers: [TGB_FINALIZER],
    });
  });

  it('deletes without a body when no uid is given; a binding without finalizers goes at once', async () => {
    const { finalizers: _f, ...metadata } = wanted().metadata;
    await port.createTargetGroupBinding({ ...wanted(), metadata });
    expect(await port.deleteTargetGroupBinding('shop', 'k8s-shop-web-0a1b2c3d4e')).toBe('deleted');
    expect(server.requests[1]).toMatchObject({ method: 'DELETE', url: `${BINDINGS}/k8s-shop-web-0a1b2c3d4e` });
    expect(server.requests[1]!.body).toBe('');
    expect(fake.bindings.has('shop/k8s-shop-web-0a1b2c3d4e')).toBe(false);
  });

  it("answers 'gone' for a binding that is not there (404), and 409 for another's uid, leaving it", async () => {
    expect(await port.deleteTargetGroupBinding('shop', 'absent', 'uid-1')).toBe('gone');
    const created = await port.createTargetGroupBinding(wanted());
    const other = await rejection(port.deleteTargetGroupBinding('shop', created.metadata.name, 'another-uid'));
    expect(other).toBeInstanceOf(KubernetesApiError);
    expect(other).toMatchObject({ statusCode: 409, reason: 'Conflict' });
    expect(fake.bindings.get('shop/k8s-shop-web-0a1b2c3d4e')).toEqual(created);
  });

  it("answers 404 to a create and 'gone' to a delete while the CRD is not installed", async () => {
    fake.crdInstalled = false;
    const refused = await rejection(port.createTargetGroupBinding(wanted()));
    expect(refused).toBeInstanceOf(KubernetesApiError);
    expect(refused).toMatchObject({ statusCode: 404, reason: 'NotFound' });
    expect(await port.deleteTargetGroupBinding('shop', 'k8s-shop-web-0a1b2c3d4e', 'uid-1')).toBe('gone');
    expect(server.requests.map((r) => r.method)).toEqual(['POST', 'DELETE']);
  });

  it('hands back other API errors as KubernetesApiError, with status and reason', async () => {
    fake.queueError('createTargetGroupBinding', new KubernetesApiError(403, 'Forbidden', 'create is forbidden'));
    await expect(port.createTargetGroupBinding(wanted())).rejects.toMatchObject({
      statusCode: 403,
      reason: 'Forbidden',
    });
    await port.createTargetGroupBinding(wanted());
    server.intercept = (req) =>
      req.method === 'DELETE' ? { status: 500, body: status(500, 'InternalError', 'etcd is down') } : undefined;
    const failed = await rejection(port.deleteTargetGroupBinding('shop', 'k8s-shop-web-0a1b2c3d4e'));
    expect(failed).toBeInstanceOf(KubernetesApiError);
    expect(failed).toMatchObject({ statusCode: 500, reason: 'InternalError' });
  });
});

describe('createStackBindingsPort', () => {
  let fake: FakeTargetGroupBindings;
  let kube: FakeKubernetes;
  let server: FakeTgbServer;

  beforeEach(async () => {
    const clock = new FakeClock(NOW);
    fake = new FakeTargetGroupBindings(clock);
    kube = new FakeKubernetes(clock);
    server = await startFakeTgbServer(fake, kube);
  });

  afterEach(async () => {
    await server.close();
  });

  const tokenConfig = () =>
    loadConfig({
      CLUSTER_NAME: 'prod',
      AWS_REGION: 'eu-west-1',
      KUBERNETES_AUTH_MODE: 'token',
      KUBERNETES_API_ENDPOINT: server.url,
      KUBERNETES_TOKEN_SECRET_ID: 'ccm/kubernetes',
    });
  const secret = (token: string) => JSON.stringify({ token, ca: FAKE_API_SERVER_CA_DATA });

  it('goes over the REST client with the token of the Secrets Manager secret (token mode)', async () => {
    const deps = new FakeAccessDeps({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    deps.secretValues = [secret('sa-token')];
    const port = createStackBindingsPort(tokenConfig(), deps);
    const created = await port.createTargetGroupBinding(wanted());
    expect((await port.listTargetGroupBindings('shop')).map((b) => b.metadata.name)).toEqual([created.metadata.name]);
    expect(await port.listPods('shop', { app: 'web' })).toEqual([]);
    expect(await port.deleteTargetGroupBinding('shop', created.metadata.name, created.metadata.uid)).toBe('deleted');
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `POST ${BINDINGS}`,
      `GET ${BINDINGS}`,
      'GET /api/v1/namespaces/shop/pods',
      `DELETE ${BINDINGS}/k8s-shop-web-0a1b2c3d4e`,
    ]);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(Array(4).fill('Bearer sa-token'));
    // Once per port (the bindings, the Pods), as createTgbControllerKube's ports do; not again for later requests.
    expect(deps.secretReads).toBe(2);
  });

  it('reads the secret again on a 401 and sends the write once more, with the new token', async () => {
    const deps = new FakeAccessDeps({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    deps.secretValues = [secret('old-token'), secret('new-token')];
    server.intercept = (req) =>
      req.headers.authorization === 'Bearer new-token'
        ? undefined
        : { status: 401, body: status(401, 'Unauthorized', 'Unauthorized') };
    const port = createStackBindingsPort(tokenConfig(), deps);
    await port.createTargetGroupBinding(wanted());
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer old-token', 'Bearer new-token']);
    expect(deps.secretReads).toBe(2);
    expect(fake.callCount('createTargetGroupBinding')).toBe(1);
    expect(fake.bindings.has('shop/k8s-shop-web-0a1b2c3d4e')).toBe(true);
  });

  it('goes over client-node with the default kubeconfig (kubeconfig mode)', async () => {
    const deps = new FakeAccessDeps({ accessKeyId: 'AKID', secretAccessKey: 'secret' });
    deps.loadDefaultKubeConfig = () =>
      tokenKubeConfig({ endpoint: server.url, caData: FAKE_API_SERVER_CA_DATA }, 'from-kubeconfig');
    const port = createStackBindingsPort(loadConfig({ CLUSTER_NAME: 'prod', AWS_REGION: 'eu-west-1' }), deps);
    const created = await port.createTargetGroupBinding(wanted());
    expect(await port.deleteTargetGroupBinding('shop', created.metadata.name)).toBe('deleted');
    expect(server.requests.map((r) => r.method)).toEqual(['POST', 'DELETE']);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(Array(2).fill('Bearer from-kubeconfig'));
  });
});
