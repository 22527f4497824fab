import { KubernetesApiError } from '../errors.ts';
import { type TargetGroupBinding, TGB_API_VERSION } from '../tgb-types.ts';
import type { MergePatch, ObjectMeta } from '../types.ts';
import {
  type FakeApiServer,
  type FakeResponse,
  type RecordedRequest,
  startFakeApiServer,
  status,
} from './api-server.ts';
import type { FakeKubernetes } from './fake-kubernetes.ts';
import { ListsAndWatches } from './lists.ts';
import { serveGates } from './server-gates.ts';
import { servePods } from './server-pods.ts';
import { type FakeTargetGroupBindings, notServed, type TgbChange } from './target-group-bindings.ts';
import { requestMergePatch } from './writes.ts';

/**
 * FakeTargetGroupBindings served over HTTPS (on `startFakeApiServer`), for the adapter tests of the binding
 * controller's port (client-node-target-group-bindings.test.ts) and whatever lists or watches bindings over HTTP:
 * - `GET /apis/elbv2.k8s.aws/v1beta1[/namespaces/<ns>]/targetgroupbindings`: a list paged by `limit` and an opaque
 *   `continue` token (items without `kind`/`apiVersion`), or with `watch=true` the changes after `resourceVersion`
 *   (every binding as ADDED without one), then the end of the stream, as a watch whose timeout ran out;
 * - `GET` and `PATCH .../namespaces/<ns>/targetgroupbindings/<name>[/status]`: a JSON merge patch whose
 *   `metadata.resourceVersion` is the guard (writes.ts), applied as target-group-bindings.ts's `patchBinding`;
 * - `POST .../namespaces/<ns>/targetgroupbindings` and `DELETE .../targetgroupbindings/<name>` (DeleteOptions'
 *   `preconditions.uid`), as the fake's `createTargetGroupBinding` and `deleteTargetGroupBinding`;
 * - every path of the CRD answers the API server's 404 for an unknown resource while it is not installed;
 * - with a FakeKubernetes, the readiness gate's Pods and Namespaces and the Leases too (server-gates.ts), and the
 *   Pods' other routes (server-pods.ts).
 * Reads go through the fake's port methods, so its call counters and queued errors hold for requests too.
 */

export interface FakeTgbServer extends FakeApiServer {
  readonly fake: FakeTargetGroupBindings;
  /** Looks at each request first; an answer returned here is sent instead of the fake's (fault injection). */
  intercept: ((request: RecordedRequest) => FakeResponse | undefined) | undefined;
}

const BINDINGS =
  /^\/apis\/elbv2\.k8s\.aws\/v1beta1(?:\/namespaces\/([^/]+))?\/targetgroupbindings(?:\/([^/]+)(\/status)?)?$/;

export async function startFakeTgbServer(fake: FakeTargetGroupBindings, kube?: FakeKubernetes): Promise<FakeTgbServer> {
  const history: TgbChange[] = [];
  const unwatch = fake.watch((change) => history.push(change));
  const lists = kube && new ListsAndWatches(kube);
  let intercept: FakeTgbServer['intercept'];
  const server = await startFakeApiServer(async (req) => {
    const injected = intercept?.(req);
    if (injected) return injected;
    try {
      const bindings = BINDINGS.exec(req.path);
      if (bindings) return await bindingRequest(fake, history, req, bindings);
      const gates = kube && lists ? await serveGates(kube, lists, req) : undefined;
      if (gates) return gates;
      const pods = kube && lists ? await servePods(kube, lists, req) : undefined;
      if (pods) return pods;
      return {
        status: 404,
        body: status(404, 'NotFound', `the fake API server does not serve ${req.method} ${req.path}`),
      };
    } catch (err) {
      if (err instanceof KubernetesApiError) {
        return { status: err.statusCode, body: status(err.statusCode, err.reason, err.message) };
      }
      throw err;
    }
  });
  return {
    ...server,
    fake,
    get intercept() {
      return intercept;
    },
    set intercept(value) {
      intercept = value;
    },
    close: async () => {
      unwatch();
      lists?.close();
      await server.close();
    },
  };
}

async function bindingRequest(
  fake: FakeTargetGroupBindings,
  history: readonly TgbChange[],
  req: RecordedRequest,
  match: RegExpExecArray,
): Promise<FakeResponse> {
  if (!fake.crdInstalled) throw notServed();
  const decode = (part: string | undefined) => (part === undefined ? undefined : decodeURIComponent(part));
  const [namespace, name, sub] = [decode(match[1]), decode(match[2]), match[3] !== undefined];
  const { method, query } = req;
  if (name === undefined) {
    if (method === 'POST' && namespace !== undefined) return create(fake, namespace, req);
    if (method !== 'GET') return methodNotAllowed(method);
    if (query.get('watch') === 'true' || query.get('watch') === '1') return watch(fake, history, namespace, query);
    return page(await fake.listTargetGroupBindings(namespace), fake.currentRevision(), query);
  }
  if (namespace === undefined)
    return { status: 404, body: status(404, 'NotFound', `the fake API server does not serve ${req.path}`) };
  if (method === 'GET' && !sub) {
    const binding = await fake.getTargetGroupBinding(namespace, name);
    if (binding) return { status: 200, body: binding };
    return { status: 404, body: status(404, 'NotFound', `targetgroupbindings.elbv2.k8s.aws "${name}" not found`) };
  }
  if (method === 'DELETE' && !sub) return remove(fake, namespace, name, req);
  if (method !== 'PATCH') return methodNotAllowed(method);
  const current = fake.bindings.get(`${namespace}/${name}`);
  const { patch, guard } = requestMergePatch<TargetGroupBinding>(req, current?.metadata);
  const { resourceVersion: _rv, ...metadata } = (patch.metadata ?? {}) as ObjectMeta;
  const body = { ...patch, ...(patch.metadata ? { metadata } : {}) } as MergePatch<TargetGroupBinding>;
  return { status: 200, body: fake.patchRequest(namespace, name, body, guard, sub) };
}

/** A POST of a binding: the URL's namespace, which one in the body must match; 201 with the binding as stored. */
async function create(fake: FakeTargetGroupBindings, namespace: string, req: RecordedRequest): Promise<FakeResponse> {
  const binding = JSON.parse(req.body || '{}') as TargetGroupBinding;
  const given = binding.metadata?.namespace;
  if (given !== undefined && given !== namespace) {
    const message = 'the namespace of the provided object does not match the namespace sent on the request';
    return { status: 400, body: status(400, 'BadRequest', message) };
  }
  const created = await fake.createTargetGroupBinding({ ...binding, metadata: { ...binding.metadata, namespace } });
  return { status: 201, body: created };
}

/**
 * A DELETE, with DeleteOptions' `preconditions.uid` when the body has one: 200 with the binding marked (finalizers)
 * or as it went; 404 when there is none; 409 when the uid is another's.
 */
async function remove(
  fake: FakeTargetGroupBindings,
  namespace: string,
  name: string,
  req: RecordedRequest,
): Promise<FakeResponse> {
  const options = JSON.parse(req.body || '{}') as { preconditions?: { uid?: string } };
  const before = fake.bindings.get(`${namespace}/${name}`);
  if (!before) {
    return { status: 404, body: status(404, 'NotFound', `targetgroupbindings.elbv2.k8s.aws "${name}" not found`) };
  }
  await fake.deleteTargetGroupBinding(namespace, name, options.preconditions?.uid);
  return { status: 200, body: fake.bindings.get(`${namespace}/${name}`) ?? before };
}

/** The changes after `resourceVersion` (every binding as ADDED without one), one JSON event a line. */
async function watch(
  fake: FakeTargetGroupBindings,
  history: readonly TgbChange[],
  namespace: string | undefined,
  query: URLSearchParams,
): Promise<FakeResponse> {
  const asked = query.get('resourceVersion');
  const inScope = (b: TargetGroupBinding) => namespace === undefined || b.metadata.namespace === namespace;
  const events =
    !asked || asked === '0'
      ? (await fake.listTargetGroupBindings(namespace)).map((object) => ({
          type: 'ADDED',
          object: { apiVersion: TGB_API_VERSION, kind: 'TargetGroupBinding', ...object },
        }))
      : history.filter((c) => Number(c.object.metadata.resourceVersion) > Number(asked) && inScope(c.object));
  return { status: 200, body: events.map((e) => `${JSON.stringify(e)}\n`).join('') };
}

/** One page of a list: `continue` is the offset of the next item, opaque to the client. */
function page(items: TargetGroupBinding[], revision: number, query: URLSearchParams): FakeResponse {
  const limit = Number(query.get('limit') ?? 0) || items.length;
  const token = query.get('continue');
  const start = token ? Number(Buffer.from(token, 'base64url').toString('utf8')) : 0;
  const next = start + limit;
  return {
    status: 200,
    body: {
      kind: 'TargetGroupBindingList',
      apiVersion: TGB_API_VERSION,
      metadata: {
        resourceVersion: String(revision),
        ...(next < items.length ? { continue: Buffer.from(String(next)).toString('base64url') } : {}),
      },
      items: items.slice(start, next),
    },
  };
}

function methodNotAllowed(method: string): FakeResponse {
  return { status: 405, body: status(405, 'MethodNotAllowed', `the server does not allow this method: ${method}`) };
}
