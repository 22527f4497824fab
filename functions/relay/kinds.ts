import { VPC_CNI_CONFIGMAP } from '../../shared/k8s/ipam-names.ts';

/**
 * The kinds the relay lists and watches, and where the API serves them. Objects travel as the API's
 * plain JSON (never client-node model classes), so a listed object and a watched one look the same
 * to the fingerprints.
 */
export const WATCHED_KINDS = ['Node', 'Service', 'EndpointSlice', 'Pod', 'ConfigMap'] as const;
export type WatchedKind = (typeof WATCHED_KINDS)[number];

export interface KindInfo {
  /** Collection path: across all namespaces, or in the one namespace the kind is watched in. */
  path: string;
  namespaced: boolean;
  /** Narrows list and watch on the server, so what the relay never needs is never sent. */
  fieldSelector?: string;
}

export const KIND_INFO: Record<WatchedKind, KindInfo> = {
  Node: { path: '/api/v1/nodes', namespaced: false },
  Service: { path: '/api/v1/services', namespaced: true },
  EndpointSlice: { path: '/apis/discovery.k8s.io/v1/endpointslices', namespaced: true },
  // Only Pods the scheduler has bound: IP allocation starts once a Pod has a Node. With a field
  // selector the watch reports a Pod as ADDED when it starts to match (bound), so no bind is missed.
  // https://kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/
  Pod: { path: '/api/v1/pods', namespaced: true, fieldSelector: 'spec.nodeName!=' },
  // Only the VPC CNI's ConfigMap, which switches Windows IPAM on and sizes its pool: RBAC grants list and
  // watch of that one name (deploy/relay/rbac-ipam.yaml), which the API server authorizes only for requests
  // selecting it by `metadata.name`.
  // https://kubernetes.io/docs/reference/access-authn-authz/rbac/#referring-to-resources
  ConfigMap: {
    path: `/api/v1/namespaces/${VPC_CNI_CONFIGMAP.namespace}/configmaps`,
    namespaced: true,
    fieldSelector: `metadata.name=${VPC_CNI_CONFIGMAP.name}`,
  },
};

/** The metadata every watched object has; the rest is read by the forwarding rules only. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    finalizers?: string[];
  };
  [field: string]: unknown;
}

/** `namespace/name`, or `name` for cluster-scoped kinds: the relay's table key. */
export function tableKey(kind: WatchedKind, object: KubeObject): string | undefined {
  const name = object.metadata?.name;
  if (!name) return undefined;
  return KIND_INFO[kind].namespaced ? `${object.metadata?.namespace ?? ''}/${name}` : name;
}

export function splitTableKey(kind: WatchedKind, key: string): { namespace?: string; name: string } {
  if (!KIND_INFO[kind].namespaced) return { name: key };
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/**
 * Order two resourceVersions: negative when `a` is older. Since Kubernetes 1.35 (KEP-5504) they are
 * decimal integers without leading zeros that may be compared for objects of one resource; etcd's
 * single revision counter made that true for every resource of one etcd long before. Undefined when
 * either is not such an integer (another storage): callers then fall back to arrival order.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions
 */
export function compareResourceVersions(a: string | undefined, b: string | undefined): number | undefined {
  if (!a || !b || !DECIMAL.test(a) || !DECIMAL.test(b)) return undefined;
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

const DECIMAL = /^[1-9][0-9]*$/;
