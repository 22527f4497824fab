import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, systemClock } from '../../shared/clock.ts';
import {
  ClientNodeLeaseRead,
  ClientNodePodGates,
  ClientNodeTargetGroupBindings,
} from '../../shared/k8s/client-node-target-group-bindings.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { FAKE_API_SERVER_CA_DATA } from '../../shared/k8s/fakes/api-server.ts';
import { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import { microTime } from '../../shared/k8s/fakes/leases.ts';
import { FakeTargetGroupBindings } from '../../shared/k8s/fakes/target-group-bindings.ts';
import { startFakeTgbServer } from '../../shared/k8s/fakes/tgb-server.ts';
import { tokenKubeConfig } from '../../shared/k8s/lambda-access.ts';
import { type LeaseSnapshot, leaseState } from '../../shared/k8s/lbc-lease.ts';
import { path } from '../../shared/k8s/rest-client.ts';
import { RestLeaseRead, RestPodGates, RestTargetGroupBindings } from '../../shared/k8s/rest-target-group-bindings.ts';
import { type TgbControllerKube, tgbControllerKube } from '../../shared/k8s/tgb-port.ts';
import { type TargetGroupBinding, TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import type { Pod } from '../../shared/k8s/types.ts';
import { KUBE_LAB_AVAILABLE, KUBE_LAB_SKIPPED_MESSAGE } from '../helpers/kube-lab.ts';
import { AdminApi, uniqueNamespace } from './backends.ts';
import type { KubeServer } from './clients.ts';
import { BACKEND_LABELS } from './contract.ts';
import { describeWithoutCrd, onFakeWithoutCrd, useTgbLab } from './tgb-lab.ts';

/**
 * The binding controller's Kubernetes port (TargetGroupBindings, the readiness gate's Pods and Namespaces, the
 * Lease read) through both clients, on a real API server (the run's lab, deploy/crds/targetgroupbindings.yaml
 * installed) and on FakeTargetGroupBindings and FakeKubernetes served over HTTPS (tgb-server.ts): the same scenarios
 * on each, so the fakes the controller's tests run on answer as the API server does. Without the CRD, at the end,
 * on an API server of its own (the run's has it installed).
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/spec/
 */

type Port = Omit<TgbControllerKube, 'getService' | 'listEndpointSlices' | 'listNodes' | 'recordEvent'>;

const unused = () => Promise.reject(new Error('not part of the contract'));
const others = { getService: unused, listEndpointSlices: unused, listNodes: unused, recordEvent: unused };

const CLIENTS: { name: string; port(server: KubeServer, clock: FakeClock): Port }[] = [
  {
    name: 'client-node',
    port: (server, clock) => {
      const kc = tokenKubeConfig({ endpoint: server.url, caData: server.caData }, server.token);
      const gates = new ClientNodePodGates(kc, { clock });
      return tgbControllerKube(
        new ClientNodeTargetGroupBindings(kc),
        gates,
        new ClientNodeLeaseRead(kc),
        others,
        others,
      );
    },
  },
  {
    name: 'REST client',
    port: (server, clock) => {
      const kc = { server: server.url, caData: server.caData, token: server.token };
      const gates = new RestPodGates(kc, { clock });
      return tgbControllerKube(new RestTargetGroupBindings(kc), gates, new RestLeaseRead(kc), others, others);
    },
  },
];

/** What kubectl (and kubelet, and the reference controller) do in a binding test. */
interface TgbSeed {
  binding(binding: TargetGroupBinding): Promise<TargetGroupBinding>;
  /** Another writer's unguarded label change, which moves resourceVersion on. */
  labelBinding(name: string, labels: Record<string, string>): Promise<TargetGroupBinding>;
  deleteBinding(name: string): Promise<void>;
  /** A Pod created, with the status its kubelet wrote. */
  pod(pod: Pod): Promise<Pod>;
  namespace(name: string, labels: Record<string, string>): Promise<void>;
  lease(lease: LeaseSnapshot): Promise<void>;
}

interface TgbWorld {
  namespace: string;
  server: KubeServer;
  seed: TgbSeed;
  close(): Promise<void>;
}

const bindingsPath = (ns: string) => path('apis', 'elbv2.k8s.aws', 'v1beta1', 'namespaces', ns, 'targetgroupbindings');

async function realWorld(server: KubeServer): Promise<TgbWorld> {
  const api = new AdminApi(server);
  const namespace = uniqueNamespace();
  await api.post('/api/v1/namespaces', { metadata: { name: namespace } });
  // The ServiceAccount admission plugin refuses Pods whose ServiceAccount does not exist (no controller-manager).
  await api.post(path('api', 'v1', 'namespaces', namespace, 'serviceaccounts'), { metadata: { name: 'default' } });
  const podPath = (name: string) => path('api', 'v1', 'namespaces', namespace, 'pods', name);
  const seed: TgbSeed = {
    binding: (binding) => api.post(bindingsPath(namespace), binding),
    labelBinding: (name, labels) => api.patch(`${bindingsPath(namespace)}/${name}`, { metadata: { labels } }),
    deleteBinding: async (name) => {
      await api.delete(`${bindingsPath(namespace)}/${name}`);
    },
    pod: async (pod) => {
      const { status, ...created } = pod;
      await api.post(path('api', 'v1', 'namespaces', namespace, 'pods'), created);
      return api.patch(`${podPath(pod.metadata.name)}/status`, { status });
    },
    namespace: async (name, labels) => {
      await api.post('/api/v1/namespaces', { metadata: { name, labels } });
    },
    lease: async (lease) => {
      await api.post(path('apis', 'coordination.k8s.io', 'v1', 'namespaces', namespace, 'leases'), lease);
    },
  };
  return { namespace, server, seed, close: async () => {} };
}

async function fakeWorld(): Promise<TgbWorld> {
  const fake = new FakeTargetGroupBindings(systemClock);
  const kube = new FakeKubernetes(systemClock);
  const served = await startFakeTgbServer(fake, kube);
  const namespace = uniqueNamespace();
  kube.workloads.putNamespace({ metadata: { name: namespace } });
  const seed: TgbSeed = {
    binding: async (binding) => fake.putBinding({ ...binding, metadata: { ...binding.metadata, namespace } }),
    labelBinding: async (name, labels) =>
      fake.mutateBinding(namespace, name, (b) => {
        b.metadata.labels = { ...b.metadata.labels, ...labels };
      }),
    deleteBinding: async (name) => fake.deleteBinding(namespace, name),
    pod: async (pod) => kube.putPod({ ...pod, metadata: { ...pod.metadata, namespace } }),
    namespace: async (name, labels) => {
      kube.workloads.putNamespace({ metadata: { name, labels } });
    },
    lease: async (lease) => {
      kube.workloads.leases.putLease({ ...lease, metadata: { ...lease.metadata, namespace } });
    },
  };
  const server = { url: served.url, caData: FAKE_API_SERVER_CA_DATA, token: 'test-token' };
  return { namespace, server, seed, close: () => served.close() };
}

const ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/web/0123456789abcdef';
const GATE = 'target-health.elbv2.k8s.aws/web';

function binding(name: string): TargetGroupBinding {
  return {
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'TargetGroupBinding',
    metadata: { name },
    spec: {
      serviceRef: { name: 'web', port: 'http' },
      targetGroupARN: ARN,
      networking: { ingress: [{ from: [{ securityGroup: { groupID: 'sg-0abc' } }], ports: [{ port: 8080 }] }] },
    },
  };
}

function pod(name: string, labels: Record<string, string>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: {
      containers: [{ name: 'app', image: 'public.ecr.aws/nginx/nginx:1.27' }],
      readinessGates: [{ conditionType: GATE }],
    },
    status: {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-02T07:00:00Z' }],
    },
  };
}

/**
 * A Pod's conditions without `lastProbeTime: null`, which the API server writes on every condition (a Go zero time)
 * and the fake leaves out.
 */
function conditionsOf(pod: Pod | 'gone'): unknown {
  if (pod === 'gone') return 'gone';
  return pod.status?.conditions?.map((c) => {
    const { lastProbeTime, ...rest } = c as typeof c & { lastProbeTime?: string | null };
    return lastProbeTime === null ? rest : c;
  });
}

const guard = (b: TargetGroupBinding) => ({ resourceVersion: b.metadata.resourceVersion! });
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err as KubernetesApiError,
  );

for (const kind of ['fake', 'real'] as const) {
  describe(`the binding controller's port (${BACKEND_LABELS[kind]})`, () => {
    if (kind === 'real' && !KUBE_LAB_AVAILABLE) {
      it.skip(KUBE_LAB_SKIPPED_MESSAGE);
      return;
    }
    const labServer = kind === 'real' ? useTgbLab() : undefined;

    describe.each(CLIENTS)('through the $name', (client) => {
      let world: TgbWorld;
      let port: Port;
      let clock: FakeClock;
      beforeEach(async () => {
        world = labServer ? await realWorld(labServer()) : await fakeWorld();
        clock = new FakeClock(Date.parse('2026-11-02T08:00:00Z'));
        port = client.port(world.server, clock);
      });
      afterEach(async () => {
        await world.close();
      });
      const ns = () => world.namespace;

      it('reads a binding as stored, lists it in its namespace and in all, and answers undefined for none', async () => {
        const created = await world.seed.binding(binding('web'));
        expect(created.metadata).toMatchObject({ generation: 1, uid: expect.any(String), namespace: ns() });
        expect(created.status).toBeUndefined();
        expect(await port.getTargetGroupBinding(ns(), 'web')).toEqual(created);
        // A custom resource's list items keep their kind and apiVersion (a built-in kind's do not).
        expect(await port.listTargetGroupBindings(ns())).toEqual([created]);
        expect((await port.listTargetGroupBindings()).filter((b) => b.metadata.namespace === ns())).toEqual([created]);
        expect(await port.getTargetGroupBinding(ns(), 'absent')).toBeUndefined();
      });

      it('refuses what the schema refuses: no serviceRef, a target type out of its enum', async () => {
        const { serviceRef: _ref, ...noRef } = binding('bad').spec;
        const missing = await rejection(world.seed.binding({ ...binding('bad'), spec: noRef as never }));
        expect(missing).toMatchObject({
          statusCode: 422,
          message: expect.stringContaining('spec.serviceRef: Required value'),
        });
        const created = await world.seed.binding(binding('web'));
        const refused = await rejection(
          port.fillTargetGroupBindingSpec(ns(), 'web', { targetType: 'pod' as never }, guard(created)),
        );
        expect(refused).toMatchObject({
          statusCode: 422,
          message: expect.stringContaining(
            'spec.targetType: Unsupported value: "pod": supported values: "instance", "ip"',
          ),
        });
      });

      it.each([
        ['spec.serviceRef.port', 'Required value', { serviceRef: { name: 'web' } }],
        ['spec.ipAddressType', 'Unsupported value: "dualstack"', { ipAddressType: 'dualstack' }],
        ['spec.networking.ingress[0].ports', 'Required value', { networking: { ingress: [{ from: [] }] } }],
        [
          'spec.networking.ingress[0].from[0].ipBlock.cidr',
          'Required value',
          { networking: { ingress: [{ from: [{ ipBlock: {} }], ports: [] }] } },
        ],
        [
          'spec.networking.ingress[0].ports[0].protocol',
          'Unsupported value: "SCTP"',
          { networking: { ingress: [{ from: [], ports: [{ protocol: 'SCTP' }] }] } },
        ],
        ['spec.multiClusterTargetGroup', 'Invalid value', { multiClusterTargetGroup: 'yes' }],
        ['spec.serviceRef.port', 'Invalid value', { serviceRef: { name: 'web', port: true } }],
      ])('refuses %s (%s)', async (field, problem, spec) => {
        const bad = { ...binding('bad'), spec: { ...binding('bad').spec, ...spec } } as TargetGroupBinding;
        const refused = await rejection(world.seed.binding(bad));
        expect(refused).toMatchObject({ statusCode: 422, message: expect.stringContaining(`${field}: ${problem}`) });
      });

      it('drops the fields the schema does not know, at every level', async () => {
        const base = binding('web');
        const created = await world.seed.binding({
          ...base,
          extra: 'top',
          spec: {
            ...base.spec,
            serviceRef: { name: 'web', port: 80, namespace: 'other' },
            networking: {
              ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/16', except: [] } }], ports: [], note: 'x' }],
            },
            targetGroupArn: 'arn:wrong-case',
          },
        } as unknown as TargetGroupBinding);
        expect(created).not.toHaveProperty('extra');
        expect(created.spec).toEqual({
          serviceRef: { name: 'web', port: 80 },
          targetGroupARN: ARN,
          networking: { ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/16' } }], ports: [] }] },
        });
        expect((await port.getTargetGroupBinding(ns(), 'web'))?.spec).toEqual(created.spec);
      });

      it('adds the finalizer under a guard (a stale one is 409), fills the spec once, sets and removes annotations', async () => {
        const created = await world.seed.binding(binding('web'));
        const labelled = await world.seed.labelBinding('web', { team: 'shop' });
        const stale = await rejection(
          port.setTargetGroupBindingFinalizers(ns(), 'web', [TGB_FINALIZER], guard(created)),
        );
        expect(stale).toBeInstanceOf(KubernetesApiError);
        expect(stale).toMatchObject({ statusCode: 409, reason: 'Conflict' });
        const held = await port.setTargetGroupBindingFinalizers(ns(), 'web', [TGB_FINALIZER], guard(labelled));
        expect(held.metadata).toMatchObject({ finalizers: [TGB_FINALIZER], generation: 1 });
        const fields = { targetType: 'ip' as const, ipAddressType: 'ipv4' as const, vpcID: 'vpc-0a1b2c3d' };
        const filled = await port.fillTargetGroupBindingSpec(ns(), 'web', fields, guard(held));
        expect(filled.spec).toEqual({ ...binding('web').spec, ...fields });
        expect(filled.metadata.generation).toBe(2);
        const again = await port.fillTargetGroupBindingSpec(ns(), 'web', fields, guard(filled));
        expect(again.metadata.resourceVersion).toBe(filled.metadata.resourceVersion);
        const annotated = await port.setTargetGroupBindingAnnotations(ns(), 'web', { a: '1', b: '2' }, guard(again));
        const cleared = await port.setTargetGroupBindingAnnotations(ns(), 'web', { a: null }, guard(annotated));
        expect(cleared.metadata.annotations).toEqual({ b: '2' });
        expect(cleared.metadata.generation).toBe(2);
      });

      it('replaces the status through its subresource: the spec and generation untouched, a field left out gone', async () => {
        await world.seed.binding(binding('web'));
        const condition = {
          type: 'Ready',
          status: 'False' as const,
          reason: 'TargetGroupNotFound',
          message: 'no target group',
          lastTransitionTime: '2026-11-02T08:00:00Z',
        };
        const written = await port.setTargetGroupBindingStatus(ns(), 'web', {
          observedGeneration: 1,
          conditions: [condition],
        });
        expect(written.status).toEqual({ observedGeneration: 1, conditions: [condition] });
        expect(written.metadata.generation).toBe(1);
        const replaced = await port.setTargetGroupBindingStatus(ns(), 'web', { observedGeneration: 1 });
        expect(replaced.status).toEqual({ observedGeneration: 1 });
        const same = await port.setTargetGroupBindingStatus(ns(), 'web', { observedGeneration: 1 });
        expect(same.metadata.resourceVersion).toBe(replaced.metadata.resourceVersion);
        expect((await port.getTargetGroupBinding(ns(), 'web'))?.spec).toEqual(binding('web').spec);
      });

      it('holds a deletion while the finalizer is on, refuses another then, and removes the binding with the last', async () => {
        const created = await world.seed.binding(binding('web'));
        await port.setTargetGroupBindingFinalizers(ns(), 'web', [TGB_FINALIZER], guard(created));
        await world.seed.deleteBinding('web');
        const marked = (await port.getTargetGroupBinding(ns(), 'web'))!;
        expect(marked.metadata.deletionTimestamp).toEqual(expect.any(String));
        expect(marked.metadata.finalizers).toEqual([TGB_FINALIZER]);
        // Marking it for deletion is a change the controller acts on: the generation moves on.
        expect(marked.metadata.generation).toBe(2);
        const added = await rejection(
          port.setTargetGroupBindingFinalizers(ns(), 'web', [TGB_FINALIZER, 'example.com/other'], guard(marked)),
        );
        expect(added).toMatchObject({ statusCode: 422 });
        await port.setTargetGroupBindingFinalizers(ns(), 'web', [], guard(marked));
        expect(await port.getTargetGroupBinding(ns(), 'web')).toBeUndefined();
      });

      it("sets a Pod's gate condition by type, leaving the others; lastTransitionTime moves with the status only", async () => {
        await world.seed.pod(pod('web-1', { app: 'web' }));
        await world.seed.pod(pod('db-1', { app: 'db' }));
        expect((await port.listPods(ns(), { app: 'web' })).map((p) => p.metadata.name)).toEqual(['web-1']);
        const waiting = {
          type: GATE,
          status: 'False' as const,
          reason: 'Elb.RegistrationInProgress',
          message: 'registering',
        };
        const first = await port.setPodCondition(ns(), 'web-1', waiting);
        // The condition the patch names comes first, the others after, as the API server merges them.
        expect(conditionsOf(first)).toEqual([
          { ...waiting, lastTransitionTime: '2026-11-02T08:00:00Z' },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-02T07:00:00Z' },
        ]);
        clock.advance(10_000);
        const same = await port.setPodCondition(ns(), 'web-1', waiting);
        expect(same !== 'gone' && same.metadata.resourceVersion).toBe(
          first !== 'gone' && first.metadata.resourceVersion,
        );
        const failing = await port.setPodCondition(ns(), 'web-1', {
          type: GATE,
          status: 'False',
          reason: 'Target.Timeout',
        });
        expect((conditionsOf(failing) as unknown[])[0]).toEqual({
          type: GATE,
          status: 'False',
          reason: 'Target.Timeout',
          lastTransitionTime: '2026-11-02T08:00:00Z',
        });
        clock.advance(10_000);
        const healthy = await port.setPodCondition(ns(), 'web-1', { type: GATE, status: 'True' });
        expect(conditionsOf(healthy)).toEqual([
          { type: GATE, status: 'True', lastTransitionTime: '2026-11-02T08:00:20Z' },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-02T07:00:00Z' },
        ]);
        expect(await port.setPodCondition(ns(), 'absent', { type: GATE, status: 'True' })).toBe('gone');
      });

      it('reads a Namespace with its labels, and a Lease as its holder wrote it; none is undefined', async () => {
        const gated = `${ns()}-gated`;
        await world.seed.namespace(gated, { 'elbv2.k8s.aws/pod-readiness-gate-inject': 'enabled' });
        expect((await port.getNamespace(gated))?.metadata.labels).toEqual({
          'elbv2.k8s.aws/pod-readiness-gate-inject': 'enabled',
          'kubernetes.io/metadata.name': gated,
        });
        expect(await port.getNamespace(`${ns()}-none`)).toBeUndefined();
        expect(await port.getLease(ns(), 'leader')).toBeUndefined();
        const renewed = Date.now();
        await world.seed.lease({
          metadata: { name: 'leader' },
          spec: {
            holderIdentity: 'lbc-7d9f_1',
            leaseDurationSeconds: 15,
            renewTime: microTime(renewed),
            acquireTime: microTime(renewed),
          },
        });
        const lease = await port.getLease(ns(), 'leader');
        expect(lease).toMatchObject({
          metadata: { name: 'leader' },
          spec: { holderIdentity: 'lbc-7d9f_1', leaseDurationSeconds: 15 },
        });
        expect(Date.parse(lease!.spec!.renewTime!)).toBe(renewed);
        expect(leaseState(lease, renewed + 5_000)).toEqual({ held: true, holder: 'lbc-7d9f_1', expiresInSeconds: 10 });
      });
    });
  });
}

/**
 * Without the CRD (a cluster that never ran the reference controller): the API server answers 404 for every path of
 * the resource, which both clients read as no binding. Its own API server, since the run's has the CRD installed.
 */
describe('the binding port without the CRD', () => {
  it('reads [] and undefined from FakeTargetGroupBindings (crdInstalled = false), through both clients', async () => {
    await onFakeWithoutCrd(async (server, served) => {
      for (const client of CLIENTS) {
        const port = client.port(server, new FakeClock());
        expect(await port.listTargetGroupBindings(), client.name).toEqual([]);
        expect(await port.listTargetGroupBindings('shop'), client.name).toEqual([]);
        expect(await port.getTargetGroupBinding('shop', 'web'), client.name).toBeUndefined();
      }
      expect(served.requests.map((r) => r.path)).toContain('/apis/elbv2.k8s.aws/v1beta1/targetgroupbindings');
    });
  });

  describeWithoutCrd('on a real API server of its own', (ownServer) => {
    it('reads [] and undefined, through both clients (the API server answers 404)', async () => {
      const server = ownServer();
      await expect(new AdminApi(server).get(bindingsPath('default'))).rejects.toMatchObject({ statusCode: 404 });
      for (const client of CLIENTS) {
        const port = client.port(server, new FakeClock());
        expect(await port.listTargetGroupBindings(), client.name).toEqual([]);
        expect(await port.listTargetGroupBindings('default'), client.name).toEqual([]);
        expect(await port.getTargetGroupBinding('default', 'web'), client.name).toBeUndefined();
      }
    });
  });
});
