/**
 * What the relay knows of any watched object and of any watched kind, with no knowledge of which kinds there are.
 * The controller modules (controllers/) take their helpers from here, never from kinds.ts: kinds.ts derives the
 * list of watched kinds from the module table, and a module importing it would make the two wait on each other
 * while they load.
 */

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

/**
 * A kind the relay lists and watches, declared by the controller module that reads it (or, for a kind several
 * modules read, once for all of them: controllers/node-kind.ts). Objects travel as the API's plain JSON (never
 * client-node model classes), so a listed object and a watched one look the same to the fingerprints.
 */
export interface KindInfo {
  /** The API's kind name, e.g. `Node`. */
  name: string;
  /** Collection path: across all namespaces, or in the one namespace the kind is watched in. */
  path: string;
  namespaced: boolean;
  /** Narrows list and watch on the server, so what the relay never needs is never sent. */
  fieldSelector?: string;
  /**
   * The name of another object this one belongs to, kept per object (the only thing kept besides fingerprints):
   * a deletion a relist finds has no object left to read it from, and the keys it sends are that owner's.
   */
  owner?(object: KubeObject): string | undefined;
  /**
   * The API may not serve the kind at all (a custom resource whose CustomResourceDefinition is not installed): a
   * list answering 404 is taken as an empty list and made again later (list-watch.ts), instead of failing forever.
   */
  optional?: boolean;
}

/** `namespace/name`, or `name` for cluster-scoped kinds: the relay's table key. */
export function objectKey(info: KindInfo, object: KubeObject): string | undefined {
  const name = object.metadata?.name;
  if (!name) return undefined;
  return info.namespaced ? `${object.metadata?.namespace ?? ''}/${name}` : name;
}

export function splitObjectKey(info: KindInfo, key: string): { namespace?: string; name: string } {
  if (!info.namespaced) return { name: key };
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
