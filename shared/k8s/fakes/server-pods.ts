import { KubernetesApiError } from '../errors.ts';
import type { Pod, PodDisruptionBudget } from '../types.ts';
import { type FakeResponse, type RecordedRequest, status } from './api-server.ts';
import type { FakeKubernetes } from './fake-kubernetes.ts';
import type { ListsAndWatches } from './lists.ts';
import { requestMergePatch } from './writes.ts';

/**
 * The Pod and PodDisruptionBudget routes of the fake API server (`fake-kubernetes-server.ts`), over
 * FakeKubernetes' `workloads` (`fake-pods.ts`):
 * - `GET /api/v1/pods` and `/api/v1/namespaces/<ns>/pods`, paged, with label and field selectors
 *   (the drain lists with `fieldSelector=spec.nodeName=<node>`);
 * - `GET` and `DELETE /api/v1/namespaces/<ns>/pods/<name>` (DeleteOptions: gracePeriodSeconds,
 *   preconditions.uid); the DELETE answers the Pod, terminating or as it went;
 * - `PATCH /api/v1/namespaces/<ns>/pods/<name>` with a JSON merge patch whose `metadata.resourceVersion`
 *   and `metadata.uid` are preconditions (409 when either differs from the stored Pod's, 404 when there is
 *   none), as the IP address manager writes its annotation;
 * - `POST .../pods/<name>/eviction` (policy/v1 Eviction): 201 with a Success Status when allowed,
 *   429 when a budget would be violated, 500 when two budgets cover the Pod, 404 for an unknown Pod
 *   (https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/);
 * - `/apis/policy/v1[/namespaces/<ns>]/poddisruptionbudgets[/<name>]`: list, get, create, delete,
 *   answered with the status the disruption controller would compute.
 * Returns undefined for any other path.
 */

const PODS = /^\/api\/v1(?:\/namespaces\/([^/]+))?\/pods(?:\/([^/]+)(\/eviction)?)?$/;
const BUDGETS = /^\/apis\/policy\/v1(?:\/namespaces\/([^/]+))?\/poddisruptionbudgets(?:\/([^/]+))?$/;
const ON_NODE = /^spec\.nodeName=([^,!=]+)$/;

interface DeleteOptionsBody {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string };
}

const decode = (part: string | undefined) => (part === undefined ? undefined : decodeURIComponent(part));

export async function servePods(
  fake: FakeKubernetes,
  lists: ListsAndWatches,
  req: RecordedRequest,
): Promise<FakeResponse | undefined> {
  const pods = req.path.match(PODS);
  if (pods) return podRequest(fake, lists, req, decode(pods[1]), decode(pods[2]), pods[3] !== undefined);
  const budgets = req.path.match(BUDGETS);
  if (budgets) return budgetRequest(fake, lists, req, decode(budgets[1]), decode(budgets[2]));
  return undefined;
}

async function podRequest(
  fake: FakeKubernetes,
  lists: ListsAndWatches,
  req: RecordedRequest,
  namespace: string | undefined,
  name: string | undefined,
  eviction: boolean,
): Promise<FakeResponse> {
  const { method, query } = req;
  if (name === undefined) {
    if (method !== 'GET') return methodNotAllowed(method);
    // The port's own read when the selector is the one it sends, so its call count and queued errors apply.
    const node = namespace === undefined ? query.get('fieldSelector')?.match(ON_NODE)?.[1] : undefined;
    const current = async () => (node !== undefined ? fake.listPodsOnNode(node) : fake.workloads.list());
    return lists.serve({ kind: 'Pod', listKind: 'PodList', apiVersion: 'v1', namespace, query, current });
  }
  if (namespace === undefined) return notFound('pods', name);
  if (eviction) {
    if (method !== 'POST') return methodNotAllowed(method);
    const body = JSON.parse(req.body || '{}') as { metadata?: { name?: string }; deleteOptions?: DeleteOptionsBody };
    if (body.metadata?.name !== name) {
      const message = `name in URL does not match name in Eviction object`;
      return { status: 400, body: status(400, 'BadRequest', message) };
    }
    fake.workloads.evictRequest(namespace, name, deleteOptions(body.deleteOptions));
    return { status: 201, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 } };
  }
  switch (method) {
    case 'GET': {
      const pod = fake.workloads.get(namespace, name);
      return pod ? { status: 200, body: pod } : notFound('pods', name);
    }
    case 'PATCH': {
      const { patch, guard, uid } = requestMergePatch<Pod>(req, fake.workloads.get(namespace, name)?.metadata);
      return { status: 200, body: fake.workloads.patchRequest(namespace, name, patch, { ...guard, uid }) };
    }
    case 'DELETE': {
      const body = JSON.parse(req.body || '{}') as DeleteOptionsBody;
      return { status: 200, body: fake.workloads.deleteRequest(namespace, name, deleteOptions(body)) };
    }
    default:
      return methodNotAllowed(method);
  }
}

async function budgetRequest(
  fake: FakeKubernetes,
  lists: ListsAndWatches,
  req: RecordedRequest,
  namespace: string | undefined,
  name: string | undefined,
): Promise<FakeResponse> {
  const { method, query } = req;
  if (name === undefined && method === 'GET') {
    const current = async () => fake.workloads.listBudgets();
    const apiVersion = 'policy/v1';
    const listKind = 'PodDisruptionBudgetList';
    return lists.serve({ kind: 'PodDisruptionBudget', listKind, apiVersion, namespace, query, current });
  }
  if (namespace === undefined) return methodNotAllowed(method);
  if (name === undefined) {
    if (method !== 'POST') return methodNotAllowed(method);
    const body = JSON.parse(req.body) as PodDisruptionBudget;
    if (fake.workloads.budget(namespace, body.metadata.name)) {
      const message = `poddisruptionbudgets.policy "${body.metadata.name}" already exists`;
      return { status: 409, body: status(409, 'AlreadyExists', message) };
    }
    const created = fake.workloads.putBudget({ ...body, metadata: { ...body.metadata, namespace } });
    return { status: 201, body: created };
  }
  const stored = fake.workloads.budget(namespace, name);
  if (!stored) return notFound('poddisruptionbudgets.policy', name);
  if (method === 'GET') return { status: 200, body: stored };
  if (method !== 'DELETE') return methodNotAllowed(method);
  fake.workloads.deleteBudget(namespace, name);
  return { status: 200, body: stored };
}

function deleteOptions(body: DeleteOptionsBody | undefined) {
  const gracePeriodSeconds = body?.gracePeriodSeconds;
  if (gracePeriodSeconds !== undefined && (!Number.isInteger(gracePeriodSeconds) || gracePeriodSeconds < 0)) {
    throw new KubernetesApiError(422, 'Invalid', `gracePeriodSeconds: Invalid value: ${gracePeriodSeconds}`);
  }
  return { gracePeriodSeconds, uid: body?.preconditions?.uid };
}

function notFound(resource: string, name: string): FakeResponse {
  return { status: 404, body: status(404, 'NotFound', `${resource} "${name}" not found`) };
}

function methodNotAllowed(method: string): FakeResponse {
  return { status: 405, body: status(405, 'MethodNotAllowed', `the server does not allow this method: ${method}`) };
}
