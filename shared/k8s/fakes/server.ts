import { KubernetesApiError } from '../errors.ts';
import { applyMergePatch } from '../merge-patch.ts';
import type { EventRecord, Node, ObjectMeta, Service } from '../types.ts';
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
import { requestMergePatch as mergePatch } from './writes.ts';

/**
 * FakeKubernetes served over HTTPS (on `startFakeApiServer`), so the client-node adapters are tested
 * against the same API-server semantics as the reconcilers: a write to the main resource ignores
 * `status`, a write to `/status` takes only `status`, a merge patch carrying a stale
 * `metadata.resourceVersion` is 409 Conflict, a delete with failed preconditions is 409, an object with
 * finalizers is only marked for deletion until they are gone, and a list or watch from a compacted
 * resourceVersion is 410 Gone (`fake-kubernetes-lists.ts`). Errors queued on the fake
 * (`queueError`) come back as the API server's Status answers. Core Events are stored here (the fake
 * keeps one record per occurrence): create, read and guarded merge patch, as the adapter uses them.
 * Pods, their eviction subresource and PodDisruptionBudgets are `fake-kubernetes-pods.ts`. ConfigMaps are
 * read only: get (the port's `getConfigMap`), and list and watch (with selectors, e.g.
 * `fieldSelector=metadata.name=amazon-vpc-cni`, as the relay watches the one it needs).
 */

export interface StoredEvent {
  metadata: ObjectMeta & { namespace: string; resourceVersion: string };
  count?: number;
  [field: string]: unknown;
}

export interface FakeKubernetesServerOptions {
  /** Whether the API server accepts this bearer token (401 otherwise). Default: every request is accepted. */
  authenticate?: (token: string | undefined) => boolean;
}

export interface FakeKubernetesServer extends FakeApiServer {
  readonly fake: FakeKubernetes;
  /** Core Events as stored, by `namespace/name`. */
  readonly events: Map<string, StoredEvent>;
  /** Store an Event as another writer would (a new resourceVersion). */
  putEvent(event: StoredEvent): StoredEvent;
  /** Forget history: continue tokens and list/watch resourceVersions from before now answer 410 Gone. */
  compact(): void;
  /** Looks at each request first; an answer returned here is sent instead of the fake's (fault injection). */
  intercept: ((request: RecordedRequest) => FakeResponse | undefined) | undefined;
}

const notFound = (resource: string, name: string): FakeResponse => ({
  status: 404,
  body: status(404, 'NotFound', `${resource} "${name}" not found`),
});
const ok = (body: unknown): FakeResponse => ({ status: 200, body });

export async function startFakeKubernetesServer(
  fake: FakeKubernetes,
  options: FakeKubernetesServerOptions = {},
): Promise<FakeKubernetesServer> {
  const lists = new ListsAndWatches(fake);
  const events = new Events(fake);
  let intercept: FakeKubernetesServer['intercept'];
  const server = await startFakeApiServer(async (req) => {
    const injected = intercept?.(req);
    if (injected) return injected;
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    if (options.authenticate && !options.authenticate(token)) {
      return { status: 401, body: status(401, 'Unauthorized', 'Unauthorized') };
    }
    try {
      return await route(fake, lists, events, req);
    } catch (err) {
      if (err instanceof KubernetesApiError)
        return { status: err.statusCode, body: status(err.statusCode, err.reason, err.message) };
      throw err;
    }
  });
  return {
    ...server,
    fake,
    events: events.stored,
    putEvent: (event) => events.put(event),
    compact: () => lists.compact(),
    get intercept() {
      return intercept;
    },
    set intercept(value) {
      intercept = value;
    },
    close: async () => {
      lists.close();
      await server.close();
    },
  };
}

const NODES = /^\/api\/v1\/nodes(?:\/([^/]+)(\/status)?)?$/;
const SERVICES = /^\/api\/v1(?:\/namespaces\/([^/]+))?\/services(?:\/([^/]+)(\/status)?)?$/;
const SLICES = /^\/apis\/discovery\.k8s\.io\/v1(?:\/namespaces\/([^/]+))?\/endpointslices$/;
const EVENTS = /^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/;
const CONFIG_MAPS = /^\/api\/v1(?:\/namespaces\/([^/]+))?\/configmaps(?:\/([^/]+))?$/;

async function route(
  fake: FakeKubernetes,
  lists: ListsAndWatches,
  events: Events,
  req: RecordedRequest,
): Promise<FakeResponse> {
  const decode = (part: string | undefined) => (part === undefined ? undefined : decodeURIComponent(part));
  const { method, path, query } = req;
  const node = path.match(NODES);
  if (node) {
    const name = decode(node[1]);
    if (name === undefined) {
      if (method !== 'GET') return methodNotAllowed(method);
      const current = () => fake.listNodes();
      return lists.serve({ kind: 'Node', listKind: 'NodeList', apiVersion: 'v1', query, current });
    }
    return nodeRequest(fake, req, name, node[2] !== undefined);
  }
  const service = path.match(SERVICES);
  if (service) {
    const [namespace, name] = [decode(service[1]), decode(service[2])];
    if (name === undefined) {
      if (method !== 'GET') return methodNotAllowed(method);
      const current = () => fake.listServices();
      return lists.serve({ kind: 'Service', listKind: 'ServiceList', apiVersion: 'v1', namespace, query, current });
    }
    if (namespace === undefined) return notFound('services', name);
    return serviceRequest(fake, req, namespace, name, service[3] !== undefined);
  }
  const slices = path.match(SLICES);
  if (slices) {
    if (method !== 'GET') return methodNotAllowed(method);
    const namespace = decode(slices[1]);
    const byService = query.get('labelSelector')?.match(/^kubernetes\.io\/service-name=([^,!=]+)$/)?.[1];
    // The port's own read when the selector is the one it takes, so its call count and queued errors apply.
    const current = async () =>
      namespace !== undefined && byService !== undefined
        ? fake.listEndpointSlices(namespace, byService)
        : [...fake.endpointSlices.values()];
    const apiVersion = 'discovery.k8s.io/v1';
    return lists.serve({ kind: 'EndpointSlice', listKind: 'EndpointSliceList', apiVersion, namespace, query, current });
  }
  const event = path.match(EVENTS);
  if (event) return events.serve(req, decode(event[1])!, decode(event[2]));
  const configMap = path.match(CONFIG_MAPS);
  if (configMap) {
    if (method !== 'GET') return methodNotAllowed(method);
    const [namespace, name] = [decode(configMap[1]), decode(configMap[2])];
    if (name === undefined) {
      const current = async () => fake.configMaps.list();
      return lists.serve({ kind: 'ConfigMap', listKind: 'ConfigMapList', apiVersion: 'v1', namespace, query, current });
    }
    if (namespace === undefined) return notFound('configmaps', name);
    const found = await fake.getConfigMap(namespace, name);
    return found ? ok(found) : notFound('configmaps', name);
  }
  const gates = await serveGates(fake, lists, req);
  if (gates) return gates;
  const pods = await servePods(fake, lists, req);
  if (pods) return pods;
  return { status: 404, body: status(404, 'NotFound', 'the server could not find the requested resource') };
}

async function nodeRequest(fake: FakeKubernetes, req: RecordedRequest, name: string, sub: boolean) {
  const stored = fake.nodes.get(name);
  switch (req.method) {
    case 'GET': {
      const node = await fake.getNode(name);
      return node ? ok(node) : notFound('nodes', name);
    }
    case 'PATCH': {
      const { patch, guard } = mergePatch<Node>(req, stored?.metadata);
      return ok(await (sub ? fake.patchNodeStatus(name, patch, guard) : fake.patchNode(name, patch, guard)));
    }
    case 'DELETE': {
      if (sub) return methodNotAllowed(req.method);
      const options = req.body
        ? (JSON.parse(req.body) as { preconditions?: { uid?: string; resourceVersion?: string } })
        : {};
      await fake.deleteNode(name, options.preconditions ?? {});
      // With finalizers the object stays, marked for deletion, and the API server answers with it.
      const remaining = fake.nodes.get(name);
      return ok(remaining ?? success('nodes', name, stored?.metadata.uid));
    }
    default:
      return methodNotAllowed(req.method);
  }
}

async function serviceRequest(
  fake: FakeKubernetes,
  req: RecordedRequest,
  namespace: string,
  name: string,
  sub: boolean,
) {
  const key = `${namespace}/${name}`;
  const stored = fake.services.get(key);
  switch (req.method) {
    case 'GET': {
      const service = await fake.getService(namespace, name);
      return service ? ok(service) : notFound('services', name);
    }
    case 'PATCH': {
      const { patch, guard } = mergePatch<Service>(req, stored?.metadata);
      const write = sub ? fake.patchServiceStatus.bind(fake) : fake.patchService.bind(fake);
      return ok(await write(namespace, name, patch, guard));
    }
    case 'DELETE': {
      if (sub) return methodNotAllowed(req.method);
      if (!stored) return notFound('services', name);
      fake.deleteService(namespace, name);
      return ok(fake.services.get(key) ?? success('services', name, stored.metadata.uid));
    }
    default:
      return methodNotAllowed(req.method);
  }
}

function success(resource: string, name: string, uid: string | undefined) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: resource, uid } };
}

function methodNotAllowed(method: string): FakeResponse {
  return { status: 405, body: status(405, 'MethodNotAllowed', `the server does not allow this method: ${method}`) };
}

/**
 * Core Events: create (409 AlreadyExists on a taken name), read, and merge patch guarded by
 * resourceVersion. Every create, and every patch that raises `count`, is one more occurrence in the
 * fake's `events`, so tests read the same records whether the port is the fake or the adapter.
 */
class Events {
  readonly stored = new Map<string, StoredEvent>();

  constructor(private readonly fake: FakeKubernetes) {}

  put(event: StoredEvent): StoredEvent {
    const stored = structuredClone(event);
    stored.metadata.resourceVersion = String(this.fake.nextRevision());
    this.stored.set(`${stored.metadata.namespace}/${stored.metadata.name}`, stored);
    return structuredClone(stored);
  }

  async serve(req: RecordedRequest, namespace: string, name: string | undefined): Promise<FakeResponse> {
    if (name === undefined) {
      if (req.method !== 'POST') return methodNotAllowed(req.method);
      const body = JSON.parse(req.body) as StoredEvent;
      const eventName = body.metadata?.name;
      if (!eventName) {
        return { status: 422, body: status(422, 'Invalid', 'Event is invalid: metadata.name: Required value') };
      }
      if (this.stored.has(`${namespace}/${eventName}`)) {
        return { status: 409, body: status(409, 'AlreadyExists', `events "${eventName}" already exists`) };
      }
      await this.fake.recordEvent(record(body));
      return {
        status: 201,
        body: this.put({ ...body, metadata: { ...body.metadata, namespace, resourceVersion: '' } }),
      };
    }
    const stored = this.stored.get(`${namespace}/${name}`);
    if (!stored) return notFound('events', name);
    if (req.method === 'GET') return ok(stored);
    if (req.method !== 'PATCH') return methodNotAllowed(req.method);
    const { patch, guard } = mergePatch<StoredEvent>(req, stored.metadata);
    if (guard.resourceVersion !== stored.metadata.resourceVersion) {
      const message = `Operation cannot be fulfilled on events "${name}": the object has been modified; please apply your changes to the latest version and try again`;
      return { status: 409, body: status(409, 'Conflict', message) };
    }
    const next = applyMergePatch(stored, { ...patch, metadata: { ...patch.metadata, resourceVersion: undefined } });
    if ((next.count ?? 1) > (stored.count ?? 1)) await this.fake.recordEvent(record(next));
    return ok(this.put(next));
  }
}

function record(event: StoredEvent): EventRecord {
  const { involvedObject, type, reason, message } = event as unknown as EventRecord;
  return { involvedObject, type, reason, message };
}
