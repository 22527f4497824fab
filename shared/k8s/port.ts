import type { EventRecord, MergePatch, Node } from './types.ts';

/**
 * The Kubernetes API as the reconcilers need it. Writes are JSON merge patches guarded by
 * `metadata.resourceVersion`: the API server answers 409 Conflict when the object changed since it
 * was read, and the caller re-reads and re-diffs (see `errors.ts`).
 */
export interface KubernetesPort {
  getNode(name: string): Promise<Node | undefined>;
  /** Every Node, paged with limit/continue inside the adapter. */
  listNodes(): Promise<Node[]>;
  /** Patch metadata/spec. `resourceVersion` guards the write (409 when stale). */
  patchNode(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node>;
  /** Patch the status subresource. */
  patchNodeStatus(name: string, patch: MergePatch<Node>, guard: WriteGuard): Promise<Node>;
  /** Delete with preconditions, so a Node re-created under the same name is never deleted by mistake. */
  deleteNode(name: string, preconditions: { uid?: string; resourceVersion?: string }): Promise<void>;
  recordEvent(event: EventRecord): Promise<void>;
}

export interface WriteGuard {
  resourceVersion: string;
}
