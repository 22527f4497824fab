import { TerminalError } from '../../../shared/errors.ts';
import { classifyKubernetesError } from '../../../shared/k8s/errors.ts';
import {
  gateRequeue,
  LBC_ACTIVE_REASON,
  LBC_LEASE,
  lbcActiveMessage,
  lbcLeaseState,
} from '../../../shared/k8s/lbc-lease.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import type { ServiceBatch } from '../batch.ts';
import type { ServiceDeps } from '../deps.ts';
import { recordServiceEvent } from '../kube.ts';

/**
 * The AWS Load Balancer Controller's Services are left to it while one of its instances holds its leader Lease
 * (shared/k8s/lbc-lease.ts): two controllers writing one load balancer fight. Answers what the pass ends with (a
 * requeue that looks again, or done after LBC_GATE_REQUEUES; nothing written but a Warning on the Service), or
 * undefined when the Lease is free and the pass may go on. A Lease that cannot be read stops the pass: it is never
 * taken as free.
 */
export async function waitWhileLbcRuns(
  deps: ServiceDeps,
  service: Service,
  batch: ServiceBatch,
  receiveCount: number,
): Promise<ReconcileResult | undefined> {
  const { kube } = deps;
  if (!kube.getLease) {
    throw new TerminalError(
      `the AWS Load Balancer Controller's Services need the service controller to read its leader Lease ${LBC_LEASE.namespace}/${LBC_LEASE.name}, and this deployment cannot`,
    );
  }
  let state: Awaited<ReturnType<typeof lbcLeaseState>>;
  try {
    // One read a batch: its Services are looked at within moments of each other.
    state = await batch.lbcLease(() =>
      lbcLeaseState({ getLease: (namespace, name) => kube.getLease!(namespace, name) }, deps.clock.now()),
    );
  } catch (err) {
    throw classifyKubernetesError(`reading lease ${LBC_LEASE.namespace}/${LBC_LEASE.name}`, err);
  }
  if (!state.held) return undefined;
  deps.metrics.count(MetricName.ServicesSkipped, { reason: 'lbc-active' });
  await recordServiceEvent(deps, service, 'Warning', LBC_ACTIVE_REASON, lbcActiveMessage(state));
  deps.log.info('the AWS Load Balancer Controller runs: service left to it', {
    serviceKey: `${service.metadata.namespace}/${service.metadata.name}`,
    holder: state.holder,
  });
  // Requeued a bounded number of times, then let go (`{}`: done, nothing more) and left to the resync
  // (shared/k8s/lbc-lease.ts): never walked into the DLQ.
  return gateRequeue(state, receiveCount) ?? {};
}
