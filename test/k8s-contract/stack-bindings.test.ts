import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../shared/clock.ts';
import { ClientNodeTargetGroupBindings } from '../../shared/k8s/client-node-target-group-bindings.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { FAKE_API_SERVER_CA_DATA } from '../../shared/k8s/fakes/api-server.ts';
import { FakeTargetGroupBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { startFakeTgbServer } from '../../shared/k8s/fakes/tgb-server.ts';
import { tokenKubeConfig } from '../../shared/k8s/lambda-access.ts';
import { RestTargetGroupBindings, type TgbAdapterPort } from '../../shared/k8s/rest-target-group-bindings.ts';
import { type StackRef, stackBinding, type WantedStackBinding } from '../../shared/k8s/stack-bindings.ts';
import { type TargetGroupBinding, TGB_API_VERSION, TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { keepStackBindings } from '../../shared/load-balancers/stack-bindings.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE } from '../helpers/kube-lab.ts';
import { AdminApi, uniqueNamespace } from './backends.ts';
import type { KubeServer } from './clients.ts';
import { BACKEND_LABELS } from './contract.ts';
import { describeWithoutCrd, onFakeWithoutCrd, useTgbLab } from './tgb-lab.ts';

/**
 * The stack bindings' writes (shared/k8s/stack-bindings.ts `StackBindingWrites`: create, delete with the uid
 * precondition) and `keepStackBindings` over them, through both clients, on a real API server (the run's lab,
 * deploy/crds/targetgroupbindings.yaml installed) and on FakeTargetGroupBindings served over HTTPS (tgb-server.ts):
 * the same scenarios on each, so the Ingress and service controllers' tests, which run on the fake, hold on a
 * cluster. Without the CRD at the end, on an API server of its own. tgb-port.test.ts holds the binding controller's.
 */

const CLIENTS: { name: string; port(server: KubeServer): TgbAdapterPort }[] = [
  {
    name: 'client-node',
    port: (server) =>
      new ClientNodeTargetGroupBindings(tokenKubeConfig({ endpoint: server.url, caData: server.caData }, server.token)),
  },
  {
    name: 'REST client',
    port: (server) => new RestTargetGroupBindings({ server: server.url, caData: server.caData, token: server.token }),
  },
];

interface World {
  namespace: string;
  server: KubeServer;
  close(): Promise<void>;
}

async function realWorld(server: KubeServer): Promise<World> {
  const namespace = uniqueNamespace();
  await new AdminApi(server).post('/api/v1/namespaces', { metadata: { name: namespace } });
  return { namespace, server, close: async () => {} };
}

async function fakeWorld(): Promise<World> {
  const served = await startFakeTgbServer(new FakeTargetGroupBindings(systemClock));
  const server = { url: served.url, caData: FAKE_API_SERVER_CA_DATA, token: 'test-token' };
  return { namespace: uniqueNamespace(), server, close: () => served.close() };
}

const ARN = (name: string) =>
  `arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/${name}/0123456789abcdef`;
const IP_GROUP = 'k8s-shop-web-0a1b2c3d4e';

function wanted(namespace: string, name = IP_GROUP): WantedStackBinding {
  return {
    group: { arn: ARN(name), name, targetType: 'ip', ipAddressType: 'ipv4', vpcId: 'vpc-0a1b2c3d' },
    service: { namespace, name: 'web', port: 'http' },
  };
}

/** The fields a stack binding is made of: what `stackBinding()` writes, read back. */
const written = (b: TargetGroupBinding | undefined) => b && { apiVersion: b.apiVersion, kind: b.kind, spec: b.spec };

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err,
  );

for (const kind of ['fake', 'real'] as const) {
  describe(`the stack bindings' writes (${BACKEND_LABELS[kind]})`, () => {
    if (kind === 'real' && !KUBE_LAB_AVAILABLE) {
      it.skip(KUBE_LAB_SKIPPED_MESSAGE);
      return;
    }
    const labServer = kind === 'real' ? useTgbLab() : undefined;

    describe.each(CLIENTS)('through the $name', (client) => {
      let world: World;
      let port: TgbAdapterPort;
      let stack: StackRef;
      beforeEach(async () => {
        world = labServer ? await realWorld(labServer()) : await fakeWorld();
        port = client.port(world.server);
        stack = { kind: 'service', namespace: world.namespace, name: 'web' };
      });
      afterEach(async () => {
        await world.close();
      });
      const ns = () => world.namespace;

      it('creates a binding as stackBinding() builds it, and reads it back with those fields', async () => {
        const built = stackBinding(stack, wanted(ns()));
        const created = await port.createTargetGroupBinding(built);
        expect(created.metadata).toMatchObject({
          name: IP_GROUP,
          namespace: ns(),
          labels: { 'service.k8s.aws/stack-namespace': ns(), 'service.k8s.aws/stack-name': 'web' },
          finalizers: [TGB_FINALIZER],
          uid: expect.any(String),
          resourceVersion: expect.any(String),
          generation: 1,
        });
        expect(created.metadata.deletionTimestamp).toBeUndefined();
        expect(written(created)).toEqual({ apiVersion: TGB_API_VERSION, kind: 'TargetGroupBinding', spec: built.spec });
        expect(created.status).toBeUndefined();
        expect(await port.getTargetGroupBinding(ns(), IP_GROUP)).toEqual(created);
        expect(await port.listTargetGroupBindings(ns())).toEqual([created]);
      });

      it('refuses a second of the same name: 409 AlreadyExists, the first left as it was', async () => {
        const first = await port.createTargetGroupBinding(stackBinding(stack, wanted(ns())));
        const other = stackBinding(
          { ...stack, name: 'api' },
          { ...wanted(ns()), service: { ...wanted(ns()).service, name: 'api' } },
        );
        const again = await rejection(port.createTargetGroupBinding(other));
        expect(again).toBeInstanceOf(KubernetesApiError);
        expect(again).toMatchObject({ statusCode: 409, reason: 'AlreadyExists' });
        expect(await port.getTargetGroupBinding(ns(), IP_GROUP)).toEqual(first);
      });

      it('deletes with the right uid: marked, its finalizer kept, until the finalizer goes', async () => {
        const created = await port.createTargetGroupBinding(stackBinding(stack, wanted(ns())));
        expect(await port.deleteTargetGroupBinding(ns(), IP_GROUP, created.metadata.uid)).toBe('deleted');
        const marked = (await port.getTargetGroupBinding(ns(), IP_GROUP))!;
        expect(marked.metadata.deletionTimestamp).toEqual(expect.any(String));
        expect(marked.metadata.finalizers).toEqual([TGB_FINALIZER]);
        expect(marked.metadata.uid).toBe(created.metadata.uid);
        expect(written(marked)).toEqual(written(created));
        // Deleting it again while it is marked changes nothing.
        expect(await port.deleteTargetGroupBinding(ns(), IP_GROUP, created.metadata.uid)).toBe('deleted');
        const still = (await port.getTargetGroupBinding(ns(), IP_GROUP))!;
        expect(still.metadata.resourceVersion).toBe(marked.metadata.resourceVersion);
        await port.setTargetGroupBindingFinalizers(ns(), IP_GROUP, [], {
          resourceVersion: marked.metadata.resourceVersion!,
        });
        expect(await port.getTargetGroupBinding(ns(), IP_GROUP)).toBeUndefined();
        expect(await port.deleteTargetGroupBinding(ns(), IP_GROUP, created.metadata.uid)).toBe('gone');
      });

      it("refuses a delete with another's uid (409), and answers 'gone' for one that is not there", async () => {
        const created = await port.createTargetGroupBinding(stackBinding(stack, wanted(ns())));
        const refused = await rejection(port.deleteTargetGroupBinding(ns(), IP_GROUP, `${created.metadata.uid}-old`));
        expect(refused).toBeInstanceOf(KubernetesApiError);
        expect(refused).toMatchObject({ statusCode: 409, reason: 'Conflict' });
        expect(await port.getTargetGroupBinding(ns(), IP_GROUP)).toEqual(created);
        expect(await port.deleteTargetGroupBinding(ns(), 'absent')).toBe('gone');
        expect(await port.deleteTargetGroupBinding(ns(), 'absent', created.metadata.uid)).toBe('gone');
      });

      it('keeps the stack bindings: a pass writes what is missing, the same pass again nothing; none wanted marks them', async () => {
        const both = [wanted(ns()), wanted(ns(), 'k8s-shop-api-5f6e7d8c9b')];
        expect(await keepStackBindings(port, stack, both)).toEqual({ writes: 2, warnings: [] });
        const kept = await port.listTargetGroupBindings(ns());
        expect(kept.map((b) => b.metadata.name).sort()).toEqual(['k8s-shop-api-5f6e7d8c9b', IP_GROUP]);
        expect(await keepStackBindings(port, stack, both)).toEqual({ writes: 0, warnings: [] });
        expect(await port.listTargetGroupBindings(ns())).toEqual(kept);
        expect(await keepStackBindings(port, stack, [both[0]!])).toEqual({ writes: 1, warnings: [] });
        const marked = (await port.getTargetGroupBinding(ns(), 'k8s-shop-api-5f6e7d8c9b'))!;
        expect(marked.metadata).toMatchObject({ deletionTimestamp: expect.any(String), finalizers: [TGB_FINALIZER] });
        // Waited for while it is being deleted: no write.
        expect(await keepStackBindings(port, stack, [both[0]!])).toEqual({ writes: 0, warnings: [] });
      });

      it("leaves a binding of the name that is not the stack's, and says so", async () => {
        const theirs = stackBinding({ kind: 'service', namespace: ns(), name: 'other' }, wanted(ns()));
        const created = await port.createTargetGroupBinding(theirs);
        const kept = await keepStackBindings(port, stack, [wanted(ns())]);
        expect(kept.writes).toBe(0);
        expect(kept.warnings).toEqual([expect.stringContaining(`TargetGroupBinding ${ns()}/${IP_GROUP} exists`)]);
        expect(await port.getTargetGroupBinding(ns(), IP_GROUP)).toEqual(created);
      });
    });
  });
}

/**
 * Without the CRD: a create is the API server's 404, which `keepStackBindings` says once as a warning, and a delete
 * is 'gone'. Its own API server, since the run's has the CRD installed.
 */
describe('the stack bindings without the CRD', () => {
  const expectNoCrd = async (server: KubeServer, namespace: string) => {
    const stack: StackRef = { kind: 'service', namespace, name: 'web' };
    for (const client of CLIENTS) {
      const port = client.port(server);
      const refused = await rejection(port.createTargetGroupBinding(stackBinding(stack, wanted(namespace))));
      expect(refused, client.name).toBeInstanceOf(KubernetesApiError);
      expect(refused, client.name).toMatchObject({ statusCode: 404, reason: 'NotFound' });
      expect(await port.deleteTargetGroupBinding(namespace, IP_GROUP, 'uid-1'), client.name).toBe('gone');
      const kept = await keepStackBindings(port, stack, [
        wanted(namespace),
        wanted(namespace, 'k8s-shop-api-5f6e7d8c9b'),
      ]);
      expect(kept.writes, client.name).toBe(0);
      expect(kept.warnings, client.name).toEqual([
        expect.stringContaining('the TargetGroupBinding CRD is not installed'),
      ]);
    }
  };

  it('on FakeTargetGroupBindings (crdInstalled = false), through both clients', async () => {
    await onFakeWithoutCrd((server) => expectNoCrd(server, 'shop'));
  });

  describeWithoutCrd('on a real API server of its own', (ownServer) => {
    it('through both clients (the API server answers 404)', async () => {
      const server = ownServer();
      await new AdminApi(server).post('/api/v1/namespaces', { metadata: { name: 'shop' } });
      await expectNoCrd(server, 'shop');
    });
  });
});
