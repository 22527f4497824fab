import { classifyKubernetesError, KubernetesApiError } from './errors.ts';
import type { WriteGuard } from './port.ts';
import type { Node, Pod } from './types.ts';

/**
 * What draining a Node needs from the Kubernetes API, for the interruption controller (cordon, then
 * evict through the Eviction API, which respects PodDisruptionBudgets, until nothing is left).
 * https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/
 *
 * Errors: `listPodsOnNode` and `cordonNode` throw `KubernetesApiError` as the Node port does (a stale
 * cordon is 409, for `syncNodeWithConflictRetry` to re-read and run again). `evictPod` and `deletePod`
 * turn the answers a drain expects into results and throw every other error already classified
 * (`classifyKubernetesError`: retryable, throttled or terminal), except 401: that one stays a
 * `KubernetesApiError`, because the credential refresh around every port (`refreshingPort` in
 * refreshing-port.ts) retries once on it, and would not recognise it classified.
 */
export interface DrainPort {
  /** The Pods bound to the Node, of every namespace (fieldSelector `spec.nodeName`), paged inside the adapter. */
  listPodsOnNode(nodeName: string): Promise<Pod[]>;
  /**
   * POST an Eviction (policy/v1) for the Pod: a DELETE the API server allows only when no
   * PodDisruptionBudget would be violated. Never falls back to a plain delete.
   */
  evictPod(namespace: string, name: string, options?: EvictOptions): Promise<EvictionResult>;
  /** A plain DELETE, for finished Pods (no budget counts them). */
  deletePod(namespace: string, name: string, options?: { uid?: string }): Promise<PodDeleteResult>;
  /** `spec.unschedulable: true` as a merge patch guarded by the Node's resourceVersion (409 when stale). */
  cordonNode(name: string, guard: WriteGuard): Promise<Node>;
}

export interface EvictOptions {
  /** Overrides the Pod's own terminationGracePeriodSeconds (0 is an immediate delete). */
  gracePeriodSeconds?: number;
  /** Precondition: evict only this incarnation of the Pod (a StatefulSet Pod comes back under the same name). */
  uid?: string;
}

/**
 * - `evicted`: the API server accepted it; the Pod is now terminating (deletionTimestamp set) and goes
 *   once its containers stop or its grace period ends;
 * - `blocked`: 429 TooManyRequests: a PodDisruptionBudget allows no disruption now; try again later
 *   (a 429 can also be API priority and fairness asking to slow down: trying later is right for both);
 * - `gone`: 404, or the uid precondition failed: the Pod that was listed no longer exists.
 * https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/#how-api-initiated-eviction-works
 */
export type EvictionResult = 'evicted' | 'blocked' | 'gone';

export type PodDeleteResult = 'deleted' | 'gone';

/** The merge patch that cordons a Node (what `kubectl cordon` sets). */
export const CORDON_PATCH = { spec: { unschedulable: true } } as const;

/**
 * The API server's answer to an eviction as a result; shared by the client-node adapter and
 * FakeKubernetes so both speak the same. `request` throws `KubernetesApiError` for a refused request.
 */
export async function evictionOutcome(
  namespace: string,
  name: string,
  options: EvictOptions,
  request: () => Promise<unknown>,
): Promise<EvictionResult> {
  try {
    await request();
    return 'evicted';
  } catch (err) {
    if (err instanceof KubernetesApiError && err.statusCode === 429) return 'blocked';
    if (isGone(err, options.uid)) return 'gone';
    throw classified(`evicting pod ${namespace}/${name}`, err);
  }
}

/** The API server's answer to a Pod delete as a result (see evictionOutcome). */
export async function deleteOutcome(
  namespace: string,
  name: string,
  options: { uid?: string },
  request: () => Promise<unknown>,
): Promise<PodDeleteResult> {
  try {
    await request();
    return 'deleted';
  } catch (err) {
    if (isGone(err, options.uid)) return 'gone';
    throw classified(`deleting pod ${namespace}/${name}`, err);
  }
}

/**
 * 404, or 409 on a request whose only precondition is the uid: a Pod of that name exists but is
 * another one (`kubectl drain` also counts a Pod with a new uid as deleted).
 */
function isGone(err: unknown, uid: string | undefined): boolean {
  if (!(err instanceof KubernetesApiError)) return false;
  return err.statusCode === 404 || (err.statusCode === 409 && uid !== undefined);
}

function classified(doing: string, err: unknown): unknown {
  return err instanceof KubernetesApiError && err.statusCode === 401 ? err : classifyKubernetesError(doing, err);
}
