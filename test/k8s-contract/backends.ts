import { randomBytes } from 'node:crypto';
import { FakeCluster, startFakeKubeApi } from '../../functions/relay/testing/fake-kube-api.ts';
import { systemClock } from '../../shared/clock.ts';
import { FAKE_API_SERVER_CA_DATA } from '../../shared/k8s/fakes/api-server.ts';
import { FakeKubernetes } from '../../shared/k8s/fakes/fake-kubernetes.ts';
import { startFakeKubernetesServer } from '../../shared/k8s/fakes/server.ts';
import type { ConfigMap } from '../../shared/k8s/ipam-port.ts';
import { applyMergePatch } from '../../shared/k8s/merge-patch.ts';
import { KubernetesRestClient, MERGE_PATCH_TYPE, path } from '../../shared/k8s/rest-client.ts';
import type {
  EndpointSlice,
  Node,
  ObjectMeta,
  ObjectReference,
  Pod,
  PodDisruptionBudget,
  Service,
} from '../../shared/k8s/types.ts';
import type { KubeLabAccess } from '../helpers/kube-lab.ts';
import type { KubeServer } from './clients.ts';

/**
 * The two backends of the Kubernetes contract suite: the real API server of the lab (test/helpers/kube-lab.ts)
 * and FakeKubernetes served over HTTPS (shared/k8s/fakes/server.ts), the fake every controller test runs on.
 * The behaviour tests reach either only through the project's ports and clients (clients.ts). What no port
 * does (kubectl creating objects, the scheduler binding a Pod, the kubelet writing its status, the
 * controller-manager writing a PodDisruptionBudget's status) the test plays through a seed, which writes the
 * fake directly and the real API server over its API, so a test never knows which backend it runs on.
 */

export type KubeBackendKind = 'fake' | 'real';

/** What kubectl, the kubelet, the scheduler and the controller-manager do in a test, played by it. */
export interface KubeSeed {
  /** A Node as the kubelet registers it (status included: Nodes take status on create). */
  createNode(node: Node): Promise<Node>;
  /** The kubelet's status update (a merge patch of the status subresource, unguarded). */
  patchNodeStatus(name: string, status: Node['status']): Promise<Node>;
  /** Another writer's unguarded merge patch of metadata or spec (a label), which moves resourceVersion on. */
  touchNode(name: string, labels: Record<string, string | null>): Promise<Node>;
  /** kubectl delete. */
  deleteNode(name: string): Promise<void>;
  /** kubectl create: the API server's defaults are filled in on the real backend only. */
  createService(service: Service): Promise<Service>;
  /** kubectl delete: a Service with finalizers is marked for deletion only. */
  deleteService(namespace: string, name: string): Promise<void>;
  /** What the EndpointSlice controller writes. */
  createEndpointSlice(slice: EndpointSlice): Promise<EndpointSlice>;
  /**
   * A Pod created unbound (kubectl), bound to `nodeName` by the Binding subresource (the scheduler), and its
   * status written (the kubelet): `pod.status` as given, Running and Ready by default.
   */
  runPod(pod: Pod, nodeName: string): Promise<Pod>;
  /** A Pod created and never scheduled (Pending). */
  createPod(pod: Pod): Promise<Pod>;
  /** The scheduler's Binding of a Pod created unscheduled. */
  bindPod(namespace: string, name: string, nodeName: string): Promise<void>;
  /**
   * A PodDisruptionBudget, and its status as the disruption controller would write it: written on the real
   * API server (nothing else writes it there); on the fake, which computes it, checked to be what it computed.
   */
  createBudget(budget: PodDisruptionBudget, status: BudgetCounts): Promise<void>;
  createConfigMap(configMap: ConfigMap): Promise<ConfigMap>;
  /**
   * etcd's compaction of the history up to now (the API server asks for one every 5 minutes): continue tokens
   * of lists from before answer 410 Gone.
   */
  compact(): Promise<void>;
}

/** The counts of a PodDisruptionBudget's status (observedGeneration is the budget's generation). */
export interface BudgetCounts {
  disruptionsAllowed: number;
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
}

/** A core/v1 Event as stored. */
export interface StoredEventView {
  metadata: ObjectMeta;
  involvedObject?: ObjectReference;
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  source?: { component?: string };
}

/** What a test reads outside the ports, as kubectl get would. */
export interface KubeReads {
  pod(namespace: string, name: string): Promise<Pod | undefined>;
  budget(namespace: string, name: string): Promise<PodDisruptionBudget | undefined>;
  /** The core Events of the namespace, as stored. */
  events(namespace: string): Promise<StoredEventView[]>;
}

export interface KubeWorld {
  kind: KubeBackendKind;
  /** The test's own namespace (created, with its `default` ServiceAccount, on the real API server). */
  namespace: string;
  /** A name of a cluster-scoped object (a Node) no other test uses. */
  name(base: string): string;
  /** Where the ports, and the relay's list and watch, connect. */
  server: KubeServer;
  /**
   * Where the relay's Leases connect: the real API server, or the relay's own fake API server
   * (functions/relay/testing/fake-kube-api.ts), since FakeKubernetes keeps no Leases.
   */
  leaseServer: KubeServer;
  seed: KubeSeed;
  read: KubeReads;
  close(): Promise<void>;
}

/** The real API server's JSON over the project's REST client, as system:masters. */
export class AdminApi {
  readonly client: KubernetesRestClient;

  constructor(server: KubeServer) {
    this.client = new KubernetesRestClient(
      { server: server.url, caData: server.caData, token: server.token },
      'k8s-contract-seed',
    );
  }

  get<T>(at: string): Promise<T> {
    return this.client.send<T>({ method: 'GET', path: at });
  }

  post<T>(at: string, body: unknown): Promise<T> {
    return this.client.send<T>({ method: 'POST', path: at, body });
  }

  put<T>(at: string, body: unknown): Promise<T> {
    return this.client.send<T>({ method: 'PUT', path: at, body });
  }

  patch<T>(at: string, body: unknown): Promise<T> {
    return this.client.send<T>({ method: 'PATCH', path: at, body, contentType: MERGE_PATCH_TYPE });
  }

  delete<T>(at: string, body?: unknown): Promise<T> {
    return this.client.send<T>({ method: 'DELETE', path: at, body });
  }
}

let counter = 0;

/** A namespace name no other test of the run uses (the API server is shared by every file of the run). */
export function uniqueNamespace(): string {
  return `t${++counter}-${randomBytes(3).toString('hex')}`;
}

const READY = (ready: boolean) => ({ type: 'Ready', status: ready ? 'True' : 'False' }) as const;

/** The status a kubelet would write for the Pod the test describes: Running and Ready unless it says otherwise. */
export function kubeletStatus(pod: Pod): NonNullable<Pod['status']> {
  const phase = pod.status?.phase ?? 'Running';
  return {
    ...pod.status,
    phase,
    conditions: pod.status?.conditions ?? [READY(phase === 'Running')],
  };
}

/** A Pod as created by kubectl: no node, no status. */
function unbound(pod: Pod, namespace: string): Pod {
  const { nodeName: _node, ...spec } = pod.spec ?? {};
  return { ...pod, metadata: { ...pod.metadata, namespace }, spec, status: undefined };
}

/** The real backend's world: a namespace of its own on the lab's API server. */
export async function realWorld(lab: KubeLabAccess): Promise<KubeWorld> {
  const server: KubeServer = { url: lab.url, caData: lab.caData, token: lab.token };
  const api = new AdminApi(server);
  const namespace = uniqueNamespace();
  await api.post('/api/v1/namespaces', { metadata: { name: namespace } });
  // The ServiceAccount admission plugin refuses Pods whose ServiceAccount does not exist, and the
  // controller-manager that creates `default` in every namespace does not run here.
  await api.post(path('api', 'v1', 'namespaces', namespace, 'serviceaccounts'), { metadata: { name: 'default' } });
  const nodePath = (name: string) => path('api', 'v1', 'nodes', name);
  const podPath = (ns: string, name: string) => path('api', 'v1', 'namespaces', ns, 'pods', name);
  const budgetPath = (ns: string, name: string) =>
    path('apis', 'policy', 'v1', 'namespaces', ns, 'poddisruptionbudgets', name);
  const seed: KubeSeed = {
    createNode: (node) => api.post('/api/v1/nodes', node),
    patchNodeStatus: (name, status) => api.patch(`${nodePath(name)}/status`, { status }),
    touchNode: (name, labels) => api.patch(nodePath(name), { metadata: { labels } }),
    deleteNode: async (name) => {
      await api.delete(nodePath(name));
    },
    createService: (service) =>
      api.post(path('api', 'v1', 'namespaces', service.metadata.namespace ?? namespace, 'services'), service),
    deleteService: async (ns, name) => {
      await api.delete(path('api', 'v1', 'namespaces', ns, 'services', name));
    },
    createEndpointSlice: (slice) =>
      api.post(
        path('apis', 'discovery.k8s.io', 'v1', 'namespaces', slice.metadata.namespace ?? namespace, 'endpointslices'),
        slice,
      ),
    createPod: (pod) => {
      const ns = pod.metadata.namespace ?? namespace;
      return api.post(path('api', 'v1', 'namespaces', ns, 'pods'), unbound(pod, ns));
    },
    bindPod: async (ns, name, nodeName) => {
      await api.post(`${podPath(ns, name)}/binding`, {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name, namespace: ns },
        target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
      });
    },
    runPod: async (pod, nodeName) => {
      const ns = pod.metadata.namespace ?? namespace;
      await api.post(path('api', 'v1', 'namespaces', ns, 'pods'), unbound(pod, ns));
      await seed.bindPod(ns, pod.metadata.name, nodeName);
      // The kubelet replaces the conditions it owns; a merge patch replaces the list whole (PodScheduled
      // from the binding included), so it is carried over.
      const bound = await api.get<Pod>(podPath(ns, pod.metadata.name));
      const status = kubeletStatus(pod);
      const scheduled = bound.status?.conditions?.filter((c) => c.type === 'PodScheduled') ?? [];
      return api.patch(`${podPath(ns, pod.metadata.name)}/status`, {
        status: { ...status, conditions: [...scheduled, ...(status.conditions ?? [])] },
      });
    },
    createBudget: async (budget, counts) => {
      const ns = budget.metadata.namespace ?? namespace;
      const created = await api.post<PodDisruptionBudget>(
        path('apis', 'policy', 'v1', 'namespaces', ns, 'poddisruptionbudgets'),
        { ...budget, metadata: { ...budget.metadata, namespace: ns } },
      );
      await api.patch(`${budgetPath(ns, budget.metadata.name)}/status`, {
        status: { observedGeneration: created.metadata.generation, ...counts },
      });
    },
    createConfigMap: (configMap) =>
      api.post(path('api', 'v1', 'namespaces', configMap.metadata.namespace ?? namespace, 'configmaps'), configMap),
    compact: async () => {
      // etcd's v3 JSON gateway: the current revision is in every answer's header.
      const etcd = async (call: string, body: unknown) => {
        const answer = await fetch(`${lab.etcd}/v3/kv/${call}`, { method: 'POST', body: JSON.stringify(body) });
        if (!answer.ok) throw new Error(`etcd ${call}: HTTP ${answer.status} ${await answer.text()}`);
        return (await answer.json()) as { header?: { revision?: string } };
      };
      const { header } = await etcd('range', { key: Buffer.from('/').toString('base64'), limit: 1 });
      await etcd('compaction', { revision: header?.revision, physical: true });
    },
  };
  const orUndefined = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  };
  const read: KubeReads = {
    pod: (ns, name) => orUndefined(() => api.get<Pod>(podPath(ns, name))),
    budget: (ns, name) => orUndefined(() => api.get<PodDisruptionBudget>(budgetPath(ns, name))),
    events: async (ns) =>
      (await api.get<{ items: StoredEventView[] }>(path('api', 'v1', 'namespaces', ns, 'events'))).items,
  };
  const name = (base: string) => `${namespace}-${base}`;
  // Nothing to clean up: the lab's etcd is thrown away at the end of the run, and a deleted namespace would
  // stay Terminating anyway (no namespace controller).
  return { kind: 'real', namespace, name, server, leaseServer: server, seed, read, close: async () => {} };
}

/** The fake backend's world: a FakeKubernetes of its own, served over HTTPS as the adapter tests serve it. */
export async function fakeWorld(): Promise<KubeWorld> {
  const fake = new FakeKubernetes(systemClock);
  const served = await startFakeKubernetesServer(fake);
  const relayApi = await startFakeKubeApi(new FakeCluster());
  const namespace = uniqueNamespace();
  const inNamespace = <T extends { metadata: { namespace?: string } }>(object: T): T => ({
    ...object,
    metadata: { ...object.metadata, namespace: object.metadata.namespace ?? namespace },
  });
  const seed: KubeSeed = {
    createNode: async (node) => fake.putNode(node),
    patchNodeStatus: async (name, status) =>
      fake.mutateNode(name, (n) => Object.assign(n, applyMergePatch(n, { status }))),
    touchNode: async (name, labels) =>
      fake.mutateNode(name, (n) => Object.assign(n, applyMergePatch(n, { metadata: { labels } }))),
    deleteNode: (name) => fake.deleteNode(name, {}),
    createService: async (service) => fake.putService(inNamespace(service)),
    deleteService: async (ns, name) => fake.deleteService(ns, name),
    createEndpointSlice: async (slice) => fake.putEndpointSlice(inNamespace(slice)),
    createPod: async (pod) =>
      fake.putPod({ ...unbound(pod, pod.metadata.namespace ?? namespace), status: { phase: 'Pending' } }),
    bindPod: async (ns, name, nodeName) => {
      const pod = fake.workloads.get(ns, name);
      if (!pod) throw new Error(`no pod ${ns}/${name} to bind`);
      fake.putPod({ ...pod, spec: { ...pod.spec, nodeName } });
    },
    runPod: async (pod, nodeName) => {
      const created = inNamespace(pod);
      return fake.putPod({ ...created, spec: { ...created.spec, nodeName }, status: kubeletStatus(pod) });
    },
    createBudget: async (budget, counts) => {
      const stored = fake.workloads.putBudget(inNamespace(budget));
      const { observedGeneration: _generation, ...computed } = stored.status ?? {};
      // The test says what the disruption controller would write; the fake computes it: they must agree.
      if (JSON.stringify(sorted(computed)) !== JSON.stringify(sorted(counts))) {
        throw new Error(
          `the fake computes the budget's status ${JSON.stringify(computed)}, the test says ${JSON.stringify(counts)}`,
        );
      }
    },
    createConfigMap: async (configMap) => fake.putConfigMap(inNamespace(configMap)),
    compact: async () => served.compact(),
  };
  const read: KubeReads = {
    pod: async (ns, name) => fake.workloads.get(ns, name),
    budget: async (ns, name) => fake.workloads.budget(ns, name),
    events: async (ns) =>
      [...served.events.values()].filter((e) => e.metadata.namespace === ns) as unknown as StoredEventView[],
  };
  return {
    kind: 'fake',
    namespace,
    name: (base) => `${namespace}-${base}`,
    server: { url: served.url, caData: FAKE_API_SERVER_CA_DATA, token: 'test-token' },
    leaseServer: { url: relayApi.url, caData: relayApi.caData, token: 'test-token' },
    seed,
    read,
    close: async () => {
      await Promise.all([served.close(), relayApi.close()]);
    },
  };
}

function sorted(object: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).sort(([a], [b]) => (a < b ? -1 : 1)));
}
