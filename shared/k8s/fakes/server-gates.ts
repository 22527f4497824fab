import { KubernetesApiError } from '../errors.ts';
import { type FakeResponse, type RecordedRequest, status } from './api-server.ts';
import type { FakeKubernetes } from './fake-kubernetes.ts';
import type { ListsAndWatches } from './lists.ts';

/**
 * The readiness gate's and the Lease's routes of the fake API servers (server.ts, tgb-server.ts), over
 * FakeKubernetes' `workloads` (pods.ts, leases.ts), each through the fake's counted request method so its call
 * counts and queued errors hold for requests too:
 * - `GET /api/v1/namespaces/<ns>/pods?labelSelector=a=b,c=d` (a Service's selector: equalities only): `listPods`;
 * - `PATCH /api/v1/namespaces/<ns>/pods/<name>/status` with a strategic merge patch (`conditions` merged by type):
 *   `setPodCondition`; another patch type is 415 here;
 * - `GET /api/v1/namespaces/<name>`: `getNamespace`;
 * - `GET /apis/coordination.k8s.io/v1/namespaces/<ns>/leases/<name>`: `getLease`.
 * Returns undefined for any other request.
 * https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/#use-a-strategic-merge-patch-to-update-a-deployment
 */

export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';

const POD_LIST = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/;
const POD_STATUS = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/status$/;
const NAMESPACE = /^\/api\/v1\/namespaces\/([^/]+)$/;
const LEASE = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases\/([^/]+)$/;
const EQUALITY = /^([^!=,]+)==?([^!=,]*)$/;

export async function serveGates(
  fake: FakeKubernetes,
  lists: ListsAndWatches,
  req: RecordedRequest,
): Promise<FakeResponse | undefined> {
  const { method, path, query } = req;
  const pods = method === 'GET' && query.get('watch') === null ? POD_LIST.exec(path) : null;
  const selector = pods ? equalities(query.get('labelSelector')) : undefined;
  if (pods && selector && query.get('fieldSelector') === null) {
    const namespace = decodeURIComponent(pods[1]!);
    const current = async () => fake.workloads.listMatching(namespace, selector);
    return lists.serve({ kind: 'Pod', listKind: 'PodList', apiVersion: 'v1', namespace, query, current });
  }
  const podStatus = POD_STATUS.exec(path);
  if (podStatus) {
    if (method !== 'PATCH') return undefined;
    if (req.headers['content-type'] !== STRATEGIC_MERGE_PATCH) {
      throw new KubernetesApiError(
        415,
        'UnsupportedMediaType',
        `the fake API server serves strategic merge patches of pods/status only, not ${String(req.headers['content-type'])}`,
      );
    }
    const [namespace, name] = [decodeURIComponent(podStatus[1]!), decodeURIComponent(podStatus[2]!)];
    return { status: 200, body: fake.workloads.patchStatusRequest(namespace, name, JSON.parse(req.body || '{}')) };
  }
  const namespace = method === 'GET' ? NAMESPACE.exec(path) : null;
  if (namespace) {
    const name = decodeURIComponent(namespace[1]!);
    return found(fake.workloads.getNamespaceRequest(name), 'namespaces', name);
  }
  const lease = method === 'GET' ? LEASE.exec(path) : null;
  if (lease) {
    const [ns, name] = [decodeURIComponent(lease[1]!), decodeURIComponent(lease[2]!)];
    return found(fake.workloads.leases.getRequest(ns, name), 'leases.coordination.k8s.io', name);
  }
  return undefined;
}

/** `a=b,c==d` as `{ a: 'b', c: 'd' }`; undefined when any term is not an equality (or there is no selector). */
function equalities(selector: string | null): Record<string, string> | undefined {
  if (selector === null) return undefined;
  const out: Record<string, string> = {};
  for (const term of selector.split(',').filter(Boolean)) {
    const match = EQUALITY.exec(term.trim());
    if (!match) return undefined;
    out[match[1]!.trim()] = match[2]!.trim();
  }
  return out;
}

function found(object: unknown, resource: string, name: string): FakeResponse {
  if (object === undefined) return { status: 404, body: status(404, 'NotFound', `${resource} "${name}" not found`) };
  return { status: 200, body: object };
}
