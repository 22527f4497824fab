import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { systemClock } from '../../shared/clock.ts';
import { ClientNodeIngresses } from '../../shared/k8s/client-node-ingresses.ts';
import { FAKE_API_SERVER_CA_DATA } from '../../shared/k8s/fakes/api-server.ts';
import { FakeIngresses } from '../../shared/k8s/fakes/ingresses.ts';
import { startFakeIngressesServer } from '../../shared/k8s/fakes/ingresses-server.ts';
import type { IngressesPort } from '../../shared/k8s/ingress-port.ts';
import type { Ingress, IngressClass, IngressClassParams, Namespace } from '../../shared/k8s/ingress-types.ts';
import { tokenKubeConfig } from '../../shared/k8s/lambda-access.ts';
import { applyMergePatch } from '../../shared/k8s/merge-patch.ts';
import { path } from '../../shared/k8s/rest-client.ts';
import { RestIngresses } from '../../shared/k8s/rest-ingresses.ts';
import type { KubeLabAccess } from '../helpers/kube-lab.ts';
import { AdminApi, uniqueNamespace } from './backends.ts';
import type { KubeServer } from './clients.ts';

/**
 * The Ingress side of the Kubernetes contract suite: deploy/crds/ingressclassparams.yaml as a real API server takes
 * it, and one world per backend (the lab's API server, FakeIngresses over HTTPS) in which a test seeds what kubectl
 * would create and reads through the IngressesPort of either client, never knowing which backend it runs on.
 */

export const CRD_FILE = join(import.meta.dirname, '../../deploy/crds/ingressclassparams.yaml');
export const CRD_NAME = 'ingressclassparams.elbv2.k8s.aws';
export const TGB_CRD_FILE = join(import.meta.dirname, '../../deploy/crds/targetgroupbindings.yaml');
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
export const PARAMS_PATH = '/apis/elbv2.k8s.aws/v1beta1/ingressclassparams';

export interface CustomResourceDefinition {
  metadata: { name: string; resourceVersion?: string };
  spec: Record<string, unknown>;
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

export function crdManifest(file = CRD_FILE): CustomResourceDefinition {
  return load(readFileSync(file, 'utf8')) as CustomResourceDefinition;
}

/** Where the API serves the CRD's resources (its storage version, cluster-wide). */
function servedPath(crd: CustomResourceDefinition): string {
  const { group, names, versions } = crd.spec as {
    group: string;
    names: { plural: string };
    versions: { name: string; storage: boolean }[];
  };
  return `/apis/${group}/${versions.find((v) => v.storage)!.name}/${names.plural}`;
}

/**
 * kubectl apply of a CRD of deploy/crds/ (created, or its spec replaced), answered once the API server serves it
 * (Established, and a list of its resource answered).
 */
export async function installCrd(api: AdminApi, file = CRD_FILE): Promise<CustomResourceDefinition> {
  const manifest = crdManifest(file);
  const name = manifest.metadata.name;
  try {
    await api.post(CRDS, manifest);
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode !== 409) throw err;
    const current = await api.get<CustomResourceDefinition>(`${CRDS}/${name}`);
    await api.put(`${CRDS}/${name}`, {
      ...manifest,
      metadata: { ...manifest.metadata, resourceVersion: current.metadata.resourceVersion },
    });
  }
  const deadline = Date.now() + 20_000;
  for (;;) {
    const crd = await api.get<CustomResourceDefinition>(`${CRDS}/${name}`);
    const established = crd.status?.conditions?.find((c) => c.type === 'Established')?.status === 'True';
    // Established comes before the discovery of the new resource is served everywhere: a list proves it.
    if (
      established &&
      (await api.get(servedPath(manifest)).then(
        () => true,
        () => false,
      ))
    ) {
      return crd;
    }
    if (Date.now() > deadline) throw new Error(`the CRD ${name} was not established: ${JSON.stringify(crd.status)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** kubectl delete of the IngressClassParams CRD, answered once it is gone. */
export async function uninstallCrd(api: AdminApi): Promise<void> {
  await api.delete(`${CRDS}/${CRD_NAME}`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const gone = await api.get(`${CRDS}/${CRD_NAME}`).then(
      () => false,
      (err: { statusCode?: number }) => err.statusCode === 404,
    );
    if (gone) return;
    if (Date.now() > deadline) throw new Error(`the CRD ${CRD_NAME} was not removed`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export type IngressClientName = 'client-node' | 'REST client';

export const INGRESS_CLIENTS: { name: IngressClientName; port(server: KubeServer): IngressesPort }[] = [
  {
    name: 'client-node',
    port: (server) =>
      new ClientNodeIngresses(tokenKubeConfig({ endpoint: server.url, caData: server.caData }, server.token)),
  },
  {
    name: 'REST client',
    port: (server) => new RestIngresses({ server: server.url, caData: server.caData, token: server.token }),
  },
];

/** What kubectl (and another controller) does in an Ingress test. */
export interface IngressSeed {
  namespace(namespace: Namespace): Promise<Namespace>;
  ingress(ingress: Ingress): Promise<Ingress>;
  ingressClass(ingressClass: IngressClass): Promise<IngressClass>;
  params(params: IngressClassParams): Promise<IngressClassParams>;
  deleteIngress(namespace: string, name: string): Promise<void>;
  /** Another writer's unguarded label change, which moves resourceVersion on. */
  labelIngress(namespace: string, name: string, labels: Record<string, string>): Promise<Ingress>;
  /** A user's change of the spec (kubectl edit): a merge patch of `spec`. */
  patchIngressSpec(namespace: string, name: string, spec: Partial<NonNullable<Ingress['spec']>>): Promise<Ingress>;
}

export interface IngressWorld {
  kind: 'fake' | 'real';
  /** The test's own namespace (made on the real API server; on the fake with the first Ingress). */
  namespace: string;
  /** A cluster-scoped name (IngressClass, IngressClassParams) no other test uses. */
  name(base: string): string;
  server: KubeServer;
  seed: IngressSeed;
  close(): Promise<void>;
}

/** A world on the lab's API server, with the CRD installed: each test its own namespace and names. */
export async function realIngressWorld(lab: KubeLabAccess): Promise<IngressWorld> {
  const server: KubeServer = { url: lab.url, caData: lab.caData, token: lab.token };
  const api = new AdminApi(server);
  const namespace = uniqueNamespace();
  await api.post('/api/v1/namespaces', { metadata: { name: namespace } });
  const ingresses = (ns: string) => path('apis', 'networking.k8s.io', 'v1', 'namespaces', ns, 'ingresses');
  const seed: IngressSeed = {
    namespace: (ns) => api.post('/api/v1/namespaces', ns),
    ingress: (ingress) => api.post(ingresses(ingress.metadata.namespace ?? namespace), ingress),
    ingressClass: (ingressClass) => api.post('/apis/networking.k8s.io/v1/ingressclasses', ingressClass),
    params: (params) => api.post(PARAMS_PATH, params),
    deleteIngress: async (ns, name) => {
      await api.delete(`${ingresses(ns)}/${encodeURIComponent(name)}`);
    },
    labelIngress: (ns, name, labels) =>
      api.patch(`${ingresses(ns)}/${encodeURIComponent(name)}`, { metadata: { labels } }),
    patchIngressSpec: (ns, name, spec) => api.patch(`${ingresses(ns)}/${encodeURIComponent(name)}`, { spec }),
  };
  return { kind: 'real', namespace, name: (base) => `${namespace}-${base}`, server, seed, close: async () => {} };
}

/** A world on a FakeIngresses of its own, served over HTTPS as the adapter tests serve it. */
export async function fakeIngressWorld(): Promise<IngressWorld & { fake: FakeIngresses }> {
  const fake = new FakeIngresses(systemClock);
  const served = await startFakeIngressesServer(fake);
  const namespace = uniqueNamespace();
  fake.putNamespace({ metadata: { name: namespace } });
  const inNamespace = (ingress: Ingress): Ingress => ({
    ...ingress,
    metadata: { ...ingress.metadata, namespace: ingress.metadata.namespace ?? namespace },
  });
  const seed: IngressSeed = {
    namespace: async (ns) => fake.putNamespace(ns),
    ingress: async (ingress) => fake.putIngress(inNamespace(ingress)),
    ingressClass: async (ingressClass) => fake.putIngressClass(ingressClass),
    params: async (params) => fake.putIngressClassParams(params),
    deleteIngress: async (ns, name) => fake.deleteIngress(ns, name),
    labelIngress: async (ns, name, labels) =>
      fake.mutateIngress(ns, name, (i) => {
        i.metadata.labels = { ...i.metadata.labels, ...labels };
      }),
    patchIngressSpec: async (ns, name, spec) =>
      fake.mutateIngress(ns, name, (i) => {
        i.spec = applyMergePatch(i.spec, spec);
      }),
  };
  return {
    kind: 'fake',
    fake,
    namespace,
    name: (base) => `${namespace}-${base}`,
    server: { url: served.url, caData: FAKE_API_SERVER_CA_DATA, token: 'test-token' },
    seed,
    close: () => served.close(),
  };
}
