import { KubernetesApiError } from '../errors.ts';
import type { Ingress, IngressLoadBalancerIngress } from '../ingress-types.ts';
import type { MergePatch } from '../types.ts';
import {
  type FakeApiServer,
  type FakeResponse,
  type RecordedRequest,
  startFakeApiServer,
  status,
} from './api-server.ts';
import type { FakeIngresses } from './ingresses.ts';
import { requestMergePatch } from './writes.ts';

/**
 * FakeIngresses served over HTTPS (on `startFakeApiServer`), for the adapter tests of the IngressesPort
 * (client-node-ingresses.test.ts): the paths, pages and answers of the API server for what the port requests.
 * Lists are paged by `limit` and an opaque `continue` token; a list item has no `kind` or `apiVersion`; a merge
 * patch carries its guard in `metadata.resourceVersion` (writes.ts); IngressClassParams with the CRD missing is
 * the API server's 404 for an unknown resource. Each answer goes through the fake's own port methods, so the
 * fake's call counters and queued errors hold for requests too.
 */

export interface FakeIngressesServer extends FakeApiServer {
  readonly fake: FakeIngresses;
  /** Looks at each request first; an answer returned here is sent instead of the fake's (fault injection). */
  intercept: ((request: RecordedRequest) => FakeResponse | undefined) | undefined;
}

const INGRESSES = /^\/apis\/networking\.k8s\.io\/v1\/ingresses$/;
const INGRESS = /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/ingresses\/([^/]+)(\/status)?$/;
const CLASSES = /^\/apis\/networking\.k8s\.io\/v1\/ingressclasses$/;
const PARAMS = /^\/apis\/elbv2\.k8s\.aws\/v1beta1\/ingressclassparams\/([^/]+)$/;
const NAMESPACE = /^\/api\/v1\/namespaces\/([^/]+)$/;

export async function startFakeIngressesServer(fake: FakeIngresses): Promise<FakeIngressesServer> {
  let intercept: FakeIngressesServer['intercept'];
  const server = await startFakeApiServer(async (req) => {
    const injected = intercept?.(req);
    if (injected) return injected;
    try {
      return await route(fake, req);
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
  };
}

async function route(fake: FakeIngresses, req: RecordedRequest): Promise<FakeResponse> {
  const { method, path, query } = req;
  const decode = decodeURIComponent;
  if (INGRESSES.test(path) && method === 'GET') {
    return page('IngressList', await fake.listIngresses(), query);
  }
  if (CLASSES.test(path) && method === 'GET') {
    return page('IngressClassList', await fake.listIngressClasses(), query);
  }
  const ingress = INGRESS.exec(path);
  if (ingress) {
    const [namespace, name] = [decode(ingress[1]!), decode(ingress[2]!)];
    if (method === 'GET' && !ingress[3]) {
      return found(await fake.getIngress(namespace, name), 'ingresses.networking.k8s.io', name);
    }
    if (method === 'PATCH') {
      const current = fake.ingresses.get(`${namespace}/${name}`);
      const { patch, guard } = requestMergePatch<Ingress>(req, current?.metadata);
      return { status: 200, body: await portWrite(fake, namespace, name, patch, guard, ingress[3] !== undefined) };
    }
  }
  const params = PARAMS.exec(path);
  if (params && method === 'GET') {
    const name = decode(params[1]!);
    if (!fake.paramsCrdInstalled) {
      return { status: 404, body: status(404, 'NotFound', 'the server could not find the requested resource') };
    }
    return found(await fake.getIngressClassParams(name), 'ingressclassparams.elbv2.k8s.aws', name);
  }
  const namespace = NAMESPACE.exec(path);
  if (namespace && method === 'GET') {
    const name = decode(namespace[1]!);
    return found(await fake.getNamespace(name), 'namespaces', name);
  }
  return { status: 404, body: status(404, 'NotFound', `the fake API server does not serve ${method} ${path}`) };
}

/**
 * A PATCH served by the port method it stands for (so its call is counted and a queued error answered): the port
 * writes only the finalizers (guarded) and the status's load balancer entries; anything else in a patch is refused.
 */
async function portWrite(
  fake: FakeIngresses,
  namespace: string,
  name: string,
  patch: MergePatch<Ingress>,
  guard: { resourceVersion: string },
  statusWrite: boolean,
): Promise<Ingress> {
  const { metadata, status: statusPatch, ...rest } = patch as { metadata?: Record<string, unknown>; status?: unknown };
  const { finalizers, resourceVersion: _rv, ...otherMetadata } = metadata ?? {};
  if (statusWrite) {
    const entries = (statusPatch as { loadBalancer?: { ingress?: unknown } } | undefined)?.loadBalancer?.ingress;
    if (metadata || Object.keys(rest).length > 0 || entries === undefined) throw unserved(patch);
    return fake.setIngressStatus(namespace, name, (entries ?? []) as IngressLoadBalancerIngress[]);
  }
  if (
    statusPatch ||
    Object.keys(rest).length > 0 ||
    Object.keys(otherMetadata).length > 0 ||
    finalizers === undefined
  ) {
    throw unserved(patch);
  }
  return fake.setIngressFinalizers(namespace, name, (finalizers ?? []) as string[], guard);
}

function unserved(patch: unknown): KubernetesApiError {
  return new KubernetesApiError(422, 'Invalid', `the fake API server serves no such patch: ${JSON.stringify(patch)}`);
}

function found(object: unknown, resource: string, name: string): FakeResponse {
  if (object === undefined) return { status: 404, body: status(404, 'NotFound', `${resource} "${name}" not found`) };
  return { status: 200, body: object };
}

/** One page of a list: `continue` is the offset of the next item, opaque to the client. */
function page(kind: string, items: unknown[], query: URLSearchParams): FakeResponse {
  const limit = Number(query.get('limit') ?? 0) || items.length;
  const token = query.get('continue');
  const start = token ? Number(Buffer.from(token, 'base64url').toString('utf8')) : 0;
  const next = start + limit;
  return {
    status: 200,
    body: {
      kind,
      apiVersion: 'networking.k8s.io/v1',
      metadata: {
        resourceVersion: '1',
        ...(next < items.length ? { continue: Buffer.from(String(next)).toString('base64url') } : {}),
      },
      items: items.slice(start, next),
    },
  };
}
