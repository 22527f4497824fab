import type { WriteGuard } from './port.ts';
import type { Pod } from './types.ts';

/** core/v1 ConfigMap: only what the IP address manager reads (`kube-system/amazon-vpc-cni`). */
export interface ConfigMap {
  apiVersion?: 'v1';
  kind?: 'ConfigMap';
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string };
  data?: Record<string, string>;
}

/**
 * What the IP address manager needs from the Kubernetes API beyond the Node port (`KubernetesPort`: the Node,
 * its status capacity, Events): the Pods bound to a Node, their IP annotation, and the VPC CNI's ConfigMap.
 *
 * Errors: `KubernetesApiError` as the Node port throws them (a 409 on a guarded write means "re-read").
 */
export interface IpamKubernetesPort {
  /** The Pods bound to the Node, of every namespace (fieldSelector `spec.nodeName`), paged inside the adapter. */
  listPodsOnNode(nodeName: string): Promise<Pod[]>;
  /**
   * A merge patch of `metadata.annotations` (a `null` value removes the key), guarded by the Pod's
   * resourceVersion (409 when stale, as it is for a Pod re-created under the same name, which is so never
   * annotated by mistake) and uid (uid is immutable: another uid under the current resourceVersion is 422);
   * both travel in the patch's `metadata`. `gone`: the Pod no longer exists (404).
   * Returns the Pod as written (its new resourceVersion guards the next patch).
   */
  patchPodAnnotations(
    namespace: string,
    name: string,
    annotations: Readonly<Record<string, string | null>>,
    guard: WriteGuard & { uid: string },
  ): Promise<Pod | 'gone'>;
  /** One ConfigMap; undefined when it does not exist. */
  getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
}
