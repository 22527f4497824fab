import type { Node } from '../../../shared/k8s/types.ts';
import { ChangeRouter, type RoutedKey } from '../change-router.ts';
import { RECONCILERS, type Reconciler } from '../controllers/index.ts';
import type { KubeObject } from '../kinds.ts';

/**
 * The change router in isolation, for the router's tests and each controller module's (fingerprints in, keys out):
 * a module's routing is only ever driven by a router, so its tests drive one too.
 */

export function router(options: { reconcilers?: Reconciler[]; held?: Set<Reconciler>; now?: () => number } = {}) {
  const keys: RoutedKey[] = [];
  let nodeSetSignals = 0;
  const r = new ChangeRouter({
    reconcilers: new Set(options.reconcilers ?? RECONCILERS),
    allows: (reconciler) => !options.held?.has(reconciler),
    emit: (key) => keys.push(key),
    nodeSetChanged: () => nodeSetSignals++,
    ...(options.now ? { now: options.now } : {}),
  });
  return { r, keys, nodeSetSignals: () => nodeSetSignals };
}

let revision = 100;

/** The object at the next resourceVersion of this test file (one counter, as one etcd), with a uid. */
export function at<T extends { metadata?: object }>(object: T, uid = 'uid'): T {
  return { ...object, metadata: { uid, ...object.metadata, resourceVersion: String(++revision) } } as T;
}

/** The resourceVersion `at` gave last. */
export const lastRevision = () => revision;

export const asObject = (node: Node) => node as unknown as KubeObject;

export const short = (keys: RoutedKey[]) =>
  keys.map((k) => `${k.reconciler}:${k.message.kind}/${k.message.namespace ?? ''}/${k.message.name}`);
