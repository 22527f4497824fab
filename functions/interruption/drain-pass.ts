import { errorMessage } from '../../shared/errors.ts';
import { planDrain } from '../../shared/k8s/drain.ts';
import type { DrainPort } from '../../shared/k8s/drain-port.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { recordNodeEvent } from '../../shared/k8s/node-ops.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Node, Pod } from '../../shared/k8s/types.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';

export interface DrainPassDeps {
  kube: KubernetesPort;
  drain: DrainPort;
  log: Log;
  metrics: MetricsPort;
}

/**
 * One drain pass: evict what may go (a PodDisruptionBudget's 429 waits for the next pass), delete finished Pods,
 * wait for the terminating. Answers the Pods still on the Node (`namespace/name`).
 *
 * Each Pod stands alone, as in `kubectl drain`: an answer other than 429 or 404 for one Pod (the 500 of a Pod under
 * two PodDisruptionBudgets, the 403 of a namespace being deleted, a webhook's refusal, a network error) names that
 * Pod in a Warning and leaves it for the next pass; the Pods after it are still evicted, and the drain goes on to
 * its end or its deadline, where a waiting hook is completed. One refusal ending the pass (or, as a 403, the drain)
 * would keep every other Pod on the Node until the instance went.
 */
export async function drainPass(node: Node, secondsLeft: number | undefined, deps: DrainPassDeps): Promise<string[]> {
  const pods = await deps.drain.listPodsOnNode(node.metadata.name);
  const plan = planDrain(pods, secondsLeft === undefined ? {} : { maxGracePeriodSeconds: secondsLeft });
  const left = plan.wait.map(nameOf);
  for (const pod of plan.delete) {
    left.push(nameOf(pod));
    try {
      await deps.drain.deletePod(namespaceOf(pod), pod.metadata.name, { uid: pod.metadata.uid });
    } catch (err) {
      await refused(node, pod, 'delete', err, deps);
    }
  }
  for (const { pod, gracePeriodSeconds } of plan.evict) {
    let result: Awaited<ReturnType<DrainPort['evictPod']>>;
    try {
      result = await deps.drain.evictPod(namespaceOf(pod), pod.metadata.name, {
        gracePeriodSeconds,
        ...(pod.metadata.uid ? { uid: pod.metadata.uid } : {}),
      });
    } catch (err) {
      left.push(nameOf(pod));
      await refused(node, pod, 'evict', err, deps);
      continue;
    }
    if (result === 'gone') continue;
    if (result === 'evicted') deps.metrics.count(MetricName.PodsEvicted);
    else deps.metrics.count(MetricName.PdbWaits);
    left.push(nameOf(pod));
  }
  return left;
}

/** A Pod the API server would not let go this pass: said in a Warning on the Node (identical ones aggregate). */
async function refused(node: Node, pod: Pod, verb: 'evict' | 'delete', err: unknown, deps: DrainPassDeps) {
  const why = answerOf(err);
  deps.log.warn(`could not ${verb} a Pod; trying again on the next pass`, {
    node: node.metadata.name,
    pod: nameOf(pod),
    error: why,
  });
  const reason = verb === 'evict' ? 'EvictionFailed' : 'DeletionFailed';
  await recordNodeEvent(
    deps,
    node,
    'Warning',
    reason,
    `Cannot ${verb} ${nameOf(pod)}: ${why}; trying again on the next pass`,
  );
}

/** The API server's answer (status, reason, message) when there was one, else the error's message. */
function answerOf(err: unknown): string {
  const api = err instanceof KubernetesApiError ? err : err instanceof Error ? err.cause : undefined;
  return api instanceof KubernetesApiError ? `${api.statusCode} ${api.reason}: ${api.message}` : errorMessage(err);
}

const namespaceOf = (pod: Pod) => pod.metadata.namespace ?? 'default';
const nameOf = (pod: Pod) => `${namespaceOf(pod)}/${pod.metadata.name}`;
