import { CoreV1Api, type KubeConfig, type V1DeleteOptions } from '@kubernetes/client-node';
import {
  apiConfiguration,
  guardedPatch,
  listPodsBoundTo,
  MERGE_PATCH,
  toPlainJson,
  translated,
} from './client-node-adapter.ts';
import {
  CORDON_PATCH,
  type DrainPort,
  deleteOutcome,
  type EvictionResult,
  type EvictOptions,
  evictionOutcome,
  type PodDeleteResult,
} from './drain-port.ts';
import type { WriteGuard } from './port.ts';
import type { Node, Pod } from './types.ts';

/**
 * The DrainPort over @kubernetes/client-node 2.x, built like `client-node-services.ts`: the one
 * client-node configuration (`apiConfiguration`: one connection pool per KubeConfig), plain API JSON
 * out, `KubernetesApiError` for API errors, and the eviction and delete answers turned into results
 * by the same functions FakeKubernetes uses (`drain-port.ts`).
 */
export class ClientNodeDrain implements DrainPort {
  private readonly core: CoreV1Api;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string } = {}) {
    this.core = new CoreV1Api(apiConfiguration(kubeConfig, options.userAgent));
  }

  async listPodsOnNode(nodeName: string): Promise<Pod[]> {
    return listPodsBoundTo<Pod>(this.core, nodeName);
  }

  /**
   * POST /api/v1/namespaces/<ns>/pods/<name>/eviction with a policy/v1 Eviction: the API server checks
   * the Pod's PodDisruptionBudget before it deletes, and answers 429 instead when the budget allows
   * no disruption now. https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/
   */
  async evictPod(namespace: string, name: string, options: EvictOptions = {}): Promise<EvictionResult> {
    const body = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
      deleteOptions: deleteOptions(options),
    };
    return evictionOutcome(namespace, name, options, () =>
      this.call(() => this.core.createNamespacedPodEviction({ name, namespace, body })),
    );
  }

  async deletePod(namespace: string, name: string, options: { uid?: string } = {}): Promise<PodDeleteResult> {
    const body = deleteOptions(options);
    return deleteOutcome(namespace, name, options, () =>
      this.call(() => this.core.deleteNamespacedPod({ name, namespace, body })),
    );
  }

  async cordonNode(name: string, guard: WriteGuard): Promise<Node> {
    const body = guardedPatch(structuredClone(CORDON_PATCH), guard);
    return this.call(async () => toPlainJson(await this.core.patchNode({ name, body }, MERGE_PATCH)) as Node);
  }

  private call<T>(request: () => Promise<T>): Promise<T> {
    return translated(request);
  }
}

/**
 * The uid goes in as a precondition, so a Pod re-created under the same name (a StatefulSet's) is
 * never evicted or deleted by a pass that listed its predecessor.
 * https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/
 */
function deleteOptions(options: EvictOptions): V1DeleteOptions {
  const body: V1DeleteOptions = {};
  if (options.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = options.gracePeriodSeconds;
  if (options.uid !== undefined) body.preconditions = { uid: options.uid };
  return body;
}
