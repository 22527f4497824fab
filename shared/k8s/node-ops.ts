import type { Log } from '../observability/log.ts';
import { classifyKubernetesError, isConflict, KubernetesApiError } from './errors.ts';
import { isTerminating } from './node-helpers.ts';
import type { KubernetesPort } from './port.ts';
import { type Node, nodeRef } from './types.ts';

export async function readNode(kube: KubernetesPort, name: string): Promise<Node | undefined> {
  try {
    return await kube.getNode(name);
  } catch (err) {
    throw classifyKubernetesError(`reading node ${name}`, err);
  }
}

/** Events are best effort: losing one must neither fail nor repeat a reconcile. */
export async function recordNodeEvent(
  deps: { kube: KubernetesPort; log: Log },
  node: Node,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): Promise<void> {
  try {
    await deps.kube.recordEvent({ involvedObject: nodeRef(node), type, reason, message });
  } catch (err) {
    deps.log.warn('could not record event', { node: node.metadata.name, reason, error: String(err) });
  }
}

/**
 * Run `sync` on the Node; when a guarded write answers 409 (someone wrote the Node since we read
 * it), re-read and run again, up to `attempts` times. A missing or terminating Node is left alone.
 * Kubernetes errors leave as controller errors (retryable, throttled or terminal).
 */
export async function syncNodeWithConflictRetry(
  kube: KubernetesPort,
  name: string,
  initial: Node | undefined,
  sync: (node: Node) => Promise<void>,
  attempts = 3,
): Promise<void> {
  let node = initial;
  for (let attempt = 1; ; attempt++) {
    if (!node || isTerminating(node)) return;
    try {
      await sync(node);
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= attempts) {
        throw err instanceof KubernetesApiError ? classifyKubernetesError(`syncing node ${name}`, err) : err;
      }
      node = await readNode(kube, name);
    }
  }
}
