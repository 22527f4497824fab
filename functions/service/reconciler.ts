import { errorMessage, TerminalError, ThrottledError } from '../../shared/errors.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { keyString, type ObjectKey } from '../../shared/queue/message.ts';
import type { ReconcileResult, Reconciler } from '../../shared/queue/runner.ts';
import { describeProblems, parseAnnotations } from './annotations.ts';
import type { LoadBalancerBackend } from './backend.ts';
import { ServiceBatch } from './batch.ts';
import { decide } from './decide.ts';
import { AnnotationError, type ServiceDeps } from './deps.ts';
import { collectGarbage, isGarbageCollectionKey } from './gc.ts';
import { addFinalizer, EVENT, readService, recordServiceEvent } from './kube.ts';
import { loadBalancerName } from './names.ts';
import { networkLoadBalancers } from './nlb/backend.ts';
import { codeOf } from './resources.ts';
import { type Announcement, startPass } from './writes.ts';

export type { ServiceDeps };
export { ServiceBatch };

/**
 * `type: LoadBalancer` Services -> load balancers (docs/adr/0005-service-load-balancers.md). One key per
 * Service; the relay also sends a Service's key when its EndpointSlices change (IP targets) or the Node set
 * changes (instance targets), and the resync sends every Service plus the garbage collection key. This file
 * decides whether a Service is ours and which backend serves it; the backend does the AWS work.
 */
export const serviceReconciler: Reconciler<ServiceDeps, ServiceBatch> = {
  name: 'service',

  async prepareBatch(_keys, deps) {
    return new ServiceBatch(deps);
  },

  async reconcile(key, deps, batch, context) {
    if (isGarbageCollectionKey(key)) return collectGarbage(deps);
    if (key.kind !== 'Service' || !key.namespace) {
      throw new TerminalError(
        `the service queue takes Service keys with a namespace, or the garbage collection key (got ${keyString(key)})`,
      );
    }
    return reconcileService(key, deps, batch ?? new ServiceBatch(deps), context?.receiveCount ?? 1);
  },
};

/** The backend for a Service: Network Load Balancers today; Classic ELB and ALB plug in here. */
function backendFor(): LoadBalancerBackend {
  return networkLoadBalancers;
}

async function reconcileService(
  key: ObjectKey,
  deps: ServiceDeps,
  batch: ServiceBatch,
  receiveCount: number,
): Promise<ReconcileResult | undefined> {
  const service = await readService(deps, key.namespace!, key.name);
  // Gone without our finalizer (never ours, or cleaned up): whatever is left is the garbage collector's.
  if (!service) return undefined;
  const decision = decide(service, deps.loadBalancerClass);
  if (decision.action === 'ignore') {
    if (decision.why === 'classic' || decision.why === 'other-controller' || decision.why === 'other-class') {
      deps.metrics.count(MetricName.ServicesSkipped, { reason: decision.why });
    }
    deps.log.debug('service is not ours', { service: keyString(key), why: decision.why });
    return undefined;
  }
  const backend = backendFor();
  const { options, problems } = parseAnnotations(service.metadata.annotations);
  const name = loadBalancerName(
    { clusterName: deps.clusterName, namespace: key.namespace!, name: key.name },
    options.name,
  );
  try {
    if (decision.action === 'delete') {
      const pass = startPass(deps, service, batch, deletingAnnouncement(name), receiveCount);
      return await backend.remove(pass, decision.why);
    }
    if (problems.length > 0) throw new AnnotationError(`invalid annotations: ${describeProblems(problems)}`);
    // The finalizer before anything exists in AWS: a deletion then always waits for the cleanup.
    const withFinalizer = await addFinalizer(deps, service);
    if (!withFinalizer) return undefined;
    const pass = startPass(
      deps,
      withFinalizer,
      batch,
      { reason: EVENT.ensuring, message: `Ensuring load balancer ${name}` },
      receiveCount,
    );
    return await backend.ensure(pass, options);
  } catch (err) {
    await reportFailure(err, deps, service);
    throw err;
  }
}

function deletingAnnouncement(name: string): Announcement {
  return { reason: EVENT.deleting, message: `Deleting load balancer ${name}`, quiet: new Set(['deleteSecurityGroup']) };
}

/** Throttling is ours to absorb, not the user's to read about; everything else is said on the Service. */
async function reportFailure(err: unknown, deps: ServiceDeps, service: Parameters<typeof recordServiceEvent>[1]) {
  if (err instanceof ThrottledError) return;
  const reason = err instanceof AnnotationError ? 'InvalidAnnotation' : (codeOf(err) ?? 'Error');
  deps.metrics.count(MetricName.LoadBalancerSyncFailures, { reason });
  await recordServiceEvent(deps, service, 'Warning', EVENT.failed, `Error syncing load balancer: ${errorMessage(err)}`);
}
