import { applyMergePatch } from '../shared/k8s/merge-patch.ts';
import type { KubernetesPort } from '../shared/k8s/port.ts';
import type { Node } from '../shared/k8s/types.ts';
import type { Log } from '../shared/observability/log.ts';

/**
 * Reads go to the real API server; writes are logged and not sent. For a first look at what the
 * controllers would do to a real cluster before letting them act.
 */
export function dryRunKubernetes(kube: KubernetesPort, log: Log): KubernetesPort {
  const wouldPatch = async (what: string, name: string, patch: unknown): Promise<Node> => {
    log.info(`dry run: would ${what} node ${name}`, { patch });
    const current = await kube.getNode(name);
    return applyMergePatch(current ?? ({ metadata: { name } } as Node), patch);
  };
  return {
    getNode: (name) => kube.getNode(name),
    listNodes: () => kube.listNodes(),
    patchNode: (name, patch) => wouldPatch('patch', name, patch),
    patchNodeStatus: (name, patch) => wouldPatch('patch the status of', name, patch),
    deleteNode: async (name) => log.info(`dry run: would delete node ${name}`),
    recordEvent: async (event) =>
      log.info(`dry run: would record event ${event.type} ${event.reason} on ${event.involvedObject.name}`, {
        message: event.message,
      }),
  };
}
