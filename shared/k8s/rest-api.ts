import { KubernetesApiError } from './errors.ts';
import { type KubernetesRestClient, LIST_PAGE_SIZE, MERGE_PATCH_TYPE, path } from './rest-client.ts';

/** https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/ */
export const STRATEGIC_MERGE_PATCH_TYPE = 'application/strategic-merge-patch+json';

/**
 * The Kubernetes API requests the Lambdas make, one method each, named as client-node's generated API
 * classes name them (`CoreV1Api.patchNodeStatus`): test/helpers/code-usage.ts finds the calls either client
 * makes by these names, and stacks/iam-usage.test.ts holds the documented RBAC to them. Patches are JSON
 * merge patches; lists return one page (`KubernetesRestClient.listAll` pages).
 */

type Query = Record<string, string | number | undefined>;

export interface ListPage<T> {
  items?: T[];
  metadata?: { continue?: string };
}

export class CoreV1Api {
  constructor(private readonly api: KubernetesRestClient) {}

  readNode<T>(name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: path('api', 'v1', 'nodes', name) });
  }

  listNode<T>(query: Query): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: '/api/v1/nodes', query });
  }

  patchNode<T>(name: string, body: object): Promise<T> {
    return mergePatch(this.api, path('api', 'v1', 'nodes', name), body);
  }

  patchNodeStatus<T>(name: string, body: object): Promise<T> {
    return mergePatch(this.api, `${path('api', 'v1', 'nodes', name)}/status`, body);
  }

  deleteNode(name: string, body: object): Promise<unknown> {
    return this.api.send({ method: 'DELETE', path: path('api', 'v1', 'nodes', name), body });
  }

  createNamespacedEvent<T>(namespace: string, body: object): Promise<T> {
    return this.api.send({ method: 'POST', path: path('api', 'v1', 'namespaces', namespace, 'events'), body });
  }

  readNamespacedEvent<T>(namespace: string, name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: path('api', 'v1', 'namespaces', namespace, 'events', name) });
  }

  patchNamespacedEvent<T>(namespace: string, name: string, body: object): Promise<T> {
    return mergePatch(this.api, path('api', 'v1', 'namespaces', namespace, 'events', name), body);
  }

  readNamespacedService<T>(namespace: string, name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: servicePath(namespace, name) });
  }

  listServiceForAllNamespaces<T>(query: Query): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: '/api/v1/services', query });
  }

  patchNamespacedService<T>(namespace: string, name: string, body: object): Promise<T> {
    return mergePatch(this.api, servicePath(namespace, name), body);
  }

  patchNamespacedServiceStatus<T>(namespace: string, name: string, body: object): Promise<T> {
    return mergePatch(this.api, `${servicePath(namespace, name)}/status`, body);
  }

  listPodForAllNamespaces<T>(query: Query): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: '/api/v1/pods', query });
  }

  patchNamespacedPod<T>(namespace: string, name: string, body: object): Promise<T> {
    return mergePatch(this.api, podPath(namespace, name), body);
  }

  /** A policy/v1 Eviction: https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ */
  createNamespacedPodEviction(namespace: string, name: string, body: object): Promise<unknown> {
    return this.api.send({ method: 'POST', path: `${podPath(namespace, name)}/eviction`, body });
  }

  deleteNamespacedPod(namespace: string, name: string, body: object): Promise<unknown> {
    return this.api.send({ method: 'DELETE', path: podPath(namespace, name), body });
  }

  readNamespacedConfigMap<T>(namespace: string, name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: path('api', 'v1', 'namespaces', namespace, 'configmaps', name) });
  }

  readNamespace<T>(name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: path('api', 'v1', 'namespaces', name) });
  }

  readNamespacedPod<T>(namespace: string, name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: podPath(namespace, name) });
  }

  listNamespacedPod<T>(namespace: string, query: Query): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: path('api', 'v1', 'namespaces', namespace, 'pods'), query });
  }

  /** A strategic merge patch: lists such as `status.conditions` merge by their key (a condition's `type`). */
  patchNamespacedPodStatus<T>(namespace: string, name: string, body: object): Promise<T> {
    const status = `${podPath(namespace, name)}/status`;
    return this.api.send({ method: 'PATCH', path: status, body, contentType: STRATEGIC_MERGE_PATCH_TYPE });
  }
}

/** Leases (https://kubernetes.io/docs/concepts/architecture/leases/). */
export class CoordinationV1Api {
  constructor(private readonly api: KubernetesRestClient) {}

  readNamespacedLease<T>(namespace: string, name: string): Promise<T> {
    const lease = path('apis', 'coordination.k8s.io', 'v1', 'namespaces', namespace, 'leases', name);
    return this.api.send({ method: 'GET', path: lease });
  }
}

/** Ingresses and IngressClasses (https://kubernetes.io/docs/reference/kubernetes-api/service-resources/ingress-v1/). */
export class NetworkingV1Api {
  constructor(private readonly api: KubernetesRestClient) {}

  listIngressForAllNamespaces<T>(query: Query): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: '/apis/networking.k8s.io/v1/ingresses', query });
  }

  readNamespacedIngress<T>(namespace: string, name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: ingressPath(namespace, name) });
  }

  patchNamespacedIngress<T>(namespace: string, name: string, body: object): Promise<T> {
    return mergePatch(this.api, ingressPath(namespace, name), body);
  }

  patchNamespacedIngressStatus<T>(namespace: string, name: string, body: object): Promise<T> {
    return mergePatch(this.api, `${ingressPath(namespace, name)}/status`, body);
  }

  listIngressClass<T>(query: Query): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: '/apis/networking.k8s.io/v1/ingressclasses', query });
  }
}

/** Custom resources (the IngressClassParams and TargetGroupBindings of deploy/crds/). */
export class CustomObjectsApi {
  constructor(private readonly api: KubernetesRestClient) {}

  getClusterCustomObject<T>(group: string, version: string, plural: string, name: string): Promise<T> {
    return this.api.send({ method: 'GET', path: path('apis', group, version, plural, name) });
  }

  listCustomObjectForAllNamespaces<T>(
    group: string,
    version: string,
    plural: string,
    query: Query,
  ): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: path('apis', group, version, plural), query });
  }

  listNamespacedCustomObject<T>(
    group: string,
    version: string,
    namespace: string,
    plural: string,
    query: Query,
  ): Promise<ListPage<T>> {
    return this.api.send({ method: 'GET', path: path('apis', group, version, 'namespaces', namespace, plural), query });
  }

  getNamespacedCustomObject<T>(group: string, version: string, namespace: string, plural: string, name: string) {
    return this.api.send<T>({
      method: 'GET',
      path: path('apis', group, version, 'namespaces', namespace, plural, name),
    });
  }

  patchNamespacedCustomObject<T>(
    group: string,
    version: string,
    namespace: string,
    plural: string,
    name: string,
    body: object,
  ): Promise<T> {
    return mergePatch(this.api, path('apis', group, version, 'namespaces', namespace, plural, name), body);
  }

  createNamespacedCustomObject<T>(
    group: string,
    version: string,
    namespace: string,
    plural: string,
    body: object,
  ): Promise<T> {
    return this.api.send({ method: 'POST', path: path('apis', group, version, 'namespaces', namespace, plural), body });
  }

  /** `body` (DeleteOptions) left out when there is none: the request then has no body. */
  deleteNamespacedCustomObject<T>(
    group: string,
    version: string,
    namespace: string,
    plural: string,
    name: string,
    body?: object,
  ): Promise<T> {
    const object = path('apis', group, version, 'namespaces', namespace, plural, name);
    return this.api.send({ method: 'DELETE', path: object, body });
  }

  patchNamespacedCustomObjectStatus<T>(
    group: string,
    version: string,
    namespace: string,
    plural: string,
    name: string,
    body: object,
  ): Promise<T> {
    return mergePatch(this.api, `${path('apis', group, version, 'namespaces', namespace, plural, name)}/status`, body);
  }
}

/** Not a method: every method of the API classes is one request that needs an RBAC rule of its own. */
function mergePatch<T>(api: KubernetesRestClient, objectPath: string, body: object): Promise<T> {
  return api.send({ method: 'PATCH', path: objectPath, body, contentType: MERGE_PATCH_TYPE });
}

export class DiscoveryV1Api {
  constructor(private readonly api: KubernetesRestClient) {}

  listNamespacedEndpointSlice<T>(namespace: string, query: Query): Promise<ListPage<T>> {
    const slices = path('apis', 'discovery.k8s.io', 'v1', 'namespaces', namespace, 'endpointslices');
    return this.api.send({ method: 'GET', path: slices, query });
  }
}

const servicePath = (namespace: string, name: string) => path('api', 'v1', 'namespaces', namespace, 'services', name);
const podPath = (namespace: string, name: string) => path('api', 'v1', 'namespaces', namespace, 'pods', name);
const ingressPath = (namespace: string, name: string) =>
  path('apis', 'networking.k8s.io', 'v1', 'namespaces', namespace, 'ingresses', name);

/**
 * Every item of a paged list, 500 at a time; a continue token that expired (410 Gone: the list took longer
 * than etcd keeps the revision) starts the list again, once, when `relistOnExpired`.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
 */
export async function listAll<T>(
  fetchPage: (query: Query) => Promise<ListPage<T>>,
  { relistOnExpired = true } = {},
): Promise<T[]> {
  const pages = async () => {
    const out: T[] = [];
    let token: string | undefined;
    do {
      const page = await fetchPage({ limit: LIST_PAGE_SIZE, continue: token });
      out.push(...(page.items ?? []));
      token = page.metadata?.continue || undefined;
    } while (token);
    return out;
  };
  try {
    return await pages();
  } catch (err) {
    if (relistOnExpired && err instanceof KubernetesApiError && err.statusCode === 410) return pages();
    throw err;
  }
}
