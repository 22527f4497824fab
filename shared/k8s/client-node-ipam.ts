import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { apiConfiguration, listPodsBoundTo, MERGE_PATCH, toPlainJson, translated } from './client-node-adapter.ts';
import { isNotFound } from './errors.ts';
import type { ConfigMap, IpamKubernetesPort } from './ipam-port.ts';
import type { WriteGuard } from './port.ts';
import type { Pod } from './types.ts';

/**
 * The IpamKubernetesPort over @kubernetes/client-node 2.x, built like `client-node-drain.ts`: the one
 * client-node configuration (`apiConfiguration`: one connection pool per KubeConfig), plain API JSON out,
 * `KubernetesApiError` for API errors. `createIpamKubernetesPort` (lambda-access.ts) wraps it with the
 * credential refresh.
 */
export class ClientNodeIpam implements IpamKubernetesPort {
  private readonly core: CoreV1Api;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string } = {}) {
    this.core = new CoreV1Api(apiConfiguration(kubeConfig, options.userAgent));
  }

  async listPodsOnNode(nodeName: string): Promise<Pod[]> {
    return listPodsBoundTo<Pod>(this.core, nodeName);
  }

  /**
   * A JSON merge patch of `metadata.annotations` carrying the guard in `metadata`: the API server applies it
   * only to that resourceVersion (409 Conflict otherwise), and a uid that is not the stored Pod's (the Pod
   * was deleted and re-created under its name) is refused too, since uid cannot change.
   * https://kubernetes.io/docs/reference/using-api/api-concepts/#concurrency-control-and-consistency
   */
  async patchPodAnnotations(
    namespace: string,
    name: string,
    annotations: Readonly<Record<string, string | null>>,
    guard: WriteGuard & { uid: string },
  ): Promise<Pod | 'gone'> {
    const body = { metadata: { annotations, resourceVersion: guard.resourceVersion, uid: guard.uid } };
    try {
      return await translated(
        async () => toPlainJson(await this.core.patchNamespacedPod({ name, namespace, body }, MERGE_PATCH)) as Pod,
      );
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    try {
      return await translated(
        async () => toPlainJson(await this.core.readNamespacedConfigMap({ name, namespace })) as ConfigMap,
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
