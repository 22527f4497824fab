import { controller, RECONCILERS, type WatchedKind } from './controllers/index.ts';
import { type KindInfo, type KubeObject, objectKey, splitObjectKey } from './kube-object.ts';

export type { WatchedKind } from './controllers/index.ts';
export { compareResourceVersions, type KindInfo, type KubeObject } from './kube-object.ts';

/**
 * The kinds the relay lists and watches, and where the API serves them: every kind a controller module reads
 * (controllers/index.ts), in the order the table first names them. Each is declared once, by the module that reads
 * it (or in controllers/node-kind.ts for Nodes); a kind is never declared twice, so two controllers reading it
 * cannot disagree on how it is listed and watched.
 */
function watchedKinds(): Map<WatchedKind, KindInfo> {
  const kinds = new Map<WatchedKind, KindInfo>();
  for (const reconciler of RECONCILERS) {
    for (const { kind } of controller(reconciler).rules) {
      const known = kinds.get(kind.name as WatchedKind);
      if (known && known !== kind) {
        throw new Error(`relay: the kind ${kind.name} is declared twice (in ${reconciler}): declare it once, shared`);
      }
      kinds.set(kind.name as WatchedKind, kind);
    }
  }
  return kinds;
}

const KINDS = watchedKinds();

export const WATCHED_KINDS: readonly WatchedKind[] = [...KINDS.keys()];

export const KIND_INFO = Object.fromEntries(KINDS) as Readonly<Record<WatchedKind, KindInfo>>;

/** `namespace/name`, or `name` for cluster-scoped kinds: the relay's table key. */
export function tableKey(kind: WatchedKind, object: KubeObject): string | undefined {
  return objectKey(KIND_INFO[kind], object);
}

export function splitTableKey(kind: WatchedKind, key: string): { namespace?: string; name: string } {
  return splitObjectKey(KIND_INFO[kind], key);
}
