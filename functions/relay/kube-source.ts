import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import type { KubeObject, WatchedKind } from './kinds.ts';

/**
 * List and watch as the relay needs them, in the API's own terms
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes).
 * Objects are plain JSON. `rest-source.ts` (in a Pod) and `client-node-source.ts` (from a kubeconfig)
 * talk to a real API server.
 */

/** The relay's User-Agent on every request to the API server (audit logs, API priority and fairness). */
export const RELAY_USER_AGENT = 'serverless-ccm-relay';

export interface ListPage {
  items: KubeObject[];
  /** The collection's resourceVersion: a watch from it sees every change after this list. */
  resourceVersion: string;
  /** Present when more pages follow. */
  continueToken?: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  /** The object; for BOOKMARK only `metadata.resourceVersion`; for ERROR a `Status`. */
  object: KubeObject & { code?: number; reason?: string; message?: string };
}

export interface WatchOptions {
  /** Watch changes after this revision (from a list, the last event or a bookmark). */
  resourceVersion: string;
  /** The server ends the watch after this long: watches are renewed regularly, as client-go's reflector does. */
  timeoutSeconds: number;
  /**
   * End the watch with `WatchInactivityError` when nothing at all (not even a bookmark) arrived for
   * this long, connecting included: a half-open connection otherwise looks like a quiet kind forever.
   */
  inactivityMs: number;
}

export interface WatchHandle {
  /** Close the watch; `onEnd` is not called for a watch the relay closed itself. */
  stop(): void;
}

export interface ListWatchSource {
  /** One page of a paged list (`limit`/`continue`), served by the API server from etcd. */
  list(kind: WatchedKind, options: { limit: number; continueToken?: string }): Promise<ListPage>;
  /**
   * Open a watch with bookmarks. Events arrive in order through `onEvent`; `onEnd` is called once
   * when the watch ends by itself: without an error when the server closed it (its timeout),
   * otherwise with the reason (`WatchInactivityError`, `KubernetesApiError`, a network error).
   */
  watch(
    kind: WatchedKind,
    options: WatchOptions,
    onEvent: (event: WatchEvent) => void,
    onEnd: (error?: unknown) => void,
  ): Promise<WatchHandle>;
}

/** Nothing arrived on a watch for longer than its inactivity limit. */
export class WatchInactivityError extends Error {
  constructor(kind: WatchedKind, milliseconds: number) {
    super(`${kind} watch received nothing for ${Math.round(milliseconds / 1000)} s`);
    this.name = 'WatchInactivityError';
  }
}

/**
 * The revision asked for is older than the server keeps (`410 Gone`, reason `Expired`): the client
 * must list again. It arrives as an HTTP status, or as a watch event of type ERROR.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#410-gone-responses
 */
export function isGone(error: unknown): boolean {
  return error instanceof KubernetesApiError && error.statusCode === 410;
}
