import { errorMessage, TerminalError, ThrottledError } from '../../shared/errors.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { codeOf } from '../../shared/load-balancers/errors.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { keyString, type ObjectKey } from '../../shared/queue/message.ts';
import type { ReconcileContext, ReconcileResult, Reconciler } from '../../shared/queue/runner.ts';
import { describeProblems, type LoadBalancerOptions } from './annotations.ts';
import type { LoadBalancerBackend } from './backend.ts';
import { type BatchService, ServiceBatch } from './batch.ts';
import { classicLoadBalancers, hasReferenceClassic } from './clb/backend.ts';
import { classicNameFromHostname } from './clb/plans.ts';
import { decide, ingressHostname, isClassicHostname } from './decide.ts';
import { AnnotationError, type ServiceDeps } from './deps.ts';
import { collectGarbage, isGarbageCollectionKey } from './gc.ts';
import {
  addFinalizer,
  EVENT,
  hasFinalizer,
  readService,
  recordServiceEvent,
  removeFinalizer,
  setIngressHostname,
} from './kube.ts';
import { waitWhileLbcRuns } from './lbc/lease.ts';
import { LBC_SERVICE_FINALIZER } from './lbc/names.ts';
import { serviceAnnotations } from './lbc/options.ts';
import { loadBalancerNameFromHostname, preferredLoadBalancerName } from './names.ts';
import { networkLoadBalancers } from './nlb/backend.ts';
import { shortPassFor } from './resync-check.ts';
import { type Announcement, type Pass, type PreviousLoadBalancer, startPass } from './writes.ts';

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

  async prepareBatch(keys, deps, contexts) {
    const services = keys.flatMap((k, i): BatchService[] => {
      if (k.kind !== 'Service' || !k.namespace) return [];
      // The newest hint naming a uid: the Service's (a guess for reading ahead; the pass checks ownership by tags).
      const uid = contexts?.[i]?.hints.findLast((h) => h.uid !== undefined)?.uid;
      return [{ namespace: k.namespace, name: k.name, ...(uid ? { uid } : {}) }];
    });
    return new ServiceBatch(deps, services);
  },

  async reconcile(key, deps, batch, context) {
    if (isGarbageCollectionKey(key)) return collectGarbage(deps);
    if (key.kind !== 'Service' || !key.namespace) {
      throw new TerminalError(
        `the service queue takes Service keys with a namespace, or the garbage collection key (got ${keyString(key)})`,
      );
    }
    return reconcileService(key, deps, batch ?? new ServiceBatch(deps), context);
  },
};

/**
 * The kinds of load balancer a Service may have: a Classic ELB when its status names one (made by the
 * reference controller), when its type annotation asks for one (any value but `nlb`, `external` and
 * `nlb-ip`, as in the reference), when a Service that already carries the cleanup finalizer but no status has
 * one under the reference's name, or when new Services get Classic ELBs by default
 * (SERVICE_DEFAULT_LOAD_BALANCER_TYPE); a Network Load Balancer otherwise. Several on a deletion whose kind
 * cannot be told.
 */
async function backendsFor(
  service: Service,
  options: LoadBalancerOptions,
  deps: ServiceDeps,
  deleting: boolean,
): Promise<LoadBalancerBackend[]> {
  const hostname = ingressHostname(service);
  if (options.type === 'classic') return [classicLoadBalancers];
  if (options.type === 'nlb') return [networkLoadBalancers];
  if (isClassicHostname(hostname)) return [classicLoadBalancers];
  if (loadBalancerNameFromHostname(hostname)) return [networkLoadBalancers];
  if (deleting) return deps.elb ? [networkLoadBalancers, classicLoadBalancers] : [networkLoadBalancers];
  if (deps.defaultLoadBalancerType === 'classic') return [classicLoadBalancers];
  if (deps.elb && hasFinalizer(service) && (await hasReferenceClassic(deps, service))) return [classicLoadBalancers];
  return [networkLoadBalancers];
}

async function reconcileService(
  key: ObjectKey,
  deps: ServiceDeps,
  batch: ServiceBatch,
  context: ReconcileContext | undefined,
): Promise<ReconcileResult | undefined> {
  const receiveCount = context?.receiveCount ?? 1;
  const service = await readService(deps, key.namespace!, key.name);
  // Gone without our finalizer (never ours, or cleaned up): whatever is left is the garbage collector's.
  if (!service) return undefined;
  const decision = decide(service, deps.loadBalancerClass, deps.lbcServices === true);
  if (decision.action === 'ignore') return skip(decision.why, key, deps);
  const lbc = decision.lbc === true;
  const { options, problems } = serviceAnnotations(service, lbc);
  const name = preferredLoadBalancerName(
    { clusterName: deps.clusterName, namespace: key.namespace!, name: key.name },
    options,
  );
  try {
    // The AWS Load Balancer Controller's Services are left to it while it runs: nothing is written.
    if (lbc) {
      const waiting = await waitWhileLbcRuns(deps, service, batch, receiveCount);
      if (waiting) return waiting;
    }
    const backends = lbc
      ? [networkLoadBalancers]
      : await backendsFor(service, options, deps, decision.action === 'delete');
    // Classic ELBs need the Classic ELB API; without it such a Service is left as it is, as before.
    if (backends.includes(classicLoadBalancers) && !deps.elb) return skip('classic', key, deps);
    if (decision.action === 'delete') {
      const pass = startPass(deps, service, batch, deletingAnnouncement(name), receiveCount);
      if (lbc) pass.lbc = true;
      const removed = await removeAll(backends, pass, decision.why);
      // Caught in the middle of a move (the other way's finalizer too): that way's removal follows.
      return removed ?? (otherWay(service, lbc, deps) ? { requeueAfterSeconds: 1 } : undefined);
    }
    if (problems.length > 0) throw new AnnotationError(`invalid annotations: ${describeProblems(problems)}`);
    // The finalizer before anything exists in AWS: a deletion then always waits for the cleanup.
    const finalizer = lbc ? LBC_SERVICE_FINALIZER : FINALIZER_LOAD_BALANCER_CLEANUP;
    const withFinalizer = await addFinalizer(deps, service, finalizer);
    if (!withFinalizer) return undefined;
    const announcement = { reason: EVENT.ensuring, message: `Ensuring load balancer ${name}` };
    const pass = startPass(deps, withFinalizer, batch, announcement, receiveCount);
    if (lbc) pass.lbc = true;
    const previous = previousOfAnotherKind(withFinalizer, backends[0]!, pass);
    if (previous) pass.previous = previous;
    const moving = otherWay(withFinalizer, lbc, deps);
    if (deps.resyncQuickCheck === true) {
      pass.shortPass = shortPassFor(context?.hints ?? [], receiveCount, pass.serviceKey, deps.clock.now());
    }
    const result = await backends[0]!.ensure(pass, options);
    // Said with the pass that builds or changes the load balancer (not again on every look that finds it in line).
    if (lbc && pass.changes.config) await warnUnsupported(options, pass);
    // Nothing left to wait for (a quick look never finds in line a load balancer still replacing another): the new
    // load balancer serves and the old way's is retired, so the old way's finalizer goes.
    if (moving && result === undefined) await removeFinalizer(deps, pass.service, moving);
    return result;
  } catch (err) {
    await reportFailure(err, deps, service);
    throw err;
  }
}

/**
 * The load balancer the status names, when it is of another kind than the backend now chosen (the type
 * annotation moved the Service from a Classic ELB to an NLB, or back): it keeps serving until the new one
 * does, then its own backend retires it.
 */
function previousOfAnotherKind(
  service: Service,
  backend: LoadBalancerBackend,
  pass: Pass,
): PreviousLoadBalancer | undefined {
  const hostname = ingressHostname(service);
  const classic = classicNameFromHostname(hostname);
  const network = loadBalancerNameFromHostname(hostname);
  const [name, owner] =
    backend === networkLoadBalancers && classic
      ? [classic, classicLoadBalancers]
      : backend === classicLoadBalancers && network
        ? [network, networkLoadBalancers]
        : [undefined, undefined];
  if (!name || !owner) return undefined;
  return { name, retire: (successor) => owner.retire(pass, name, successor) };
}

/**
 * The other way's finalizer, when the Service still carries it: it is moving between the in-tree way and the AWS Load
 * Balancer Controller's (SERVICE_LBC_SERVICES), and the old way's load balancer may still exist. The new way's pass
 * replaces it as any successor replaces a load balancer (the old one serves until the new one does, then for the
 * grace); once that pass has nothing left to wait for, the old way's finalizer goes.
 */
function otherWay(service: Service, lbc: boolean, deps: ServiceDeps): string | undefined {
  if (deps.lbcServices !== true) return undefined;
  const other = lbc ? FINALIZER_LOAD_BALANCER_CLEANUP : LBC_SERVICE_FINALIZER;
  return hasFinalizer(service, other) ? other : undefined;
}

function skip(why: string, key: ObjectKey, deps: ServiceDeps): undefined {
  if (why === 'classic' || why === 'other-controller' || why === 'other-class') {
    deps.metrics.count(MetricName.ServicesSkipped, { reason: why });
  }
  deps.log.debug('service is not ours', { serviceKey: keyString(key), why });
  return undefined;
}

/** Every backend removes what it made; the finalizer goes once all are done, and last. */
async function removeAll(
  backends: readonly LoadBalancerBackend[],
  pass: Pass,
  why: 'deleting' | 'not-ours-any-more',
): Promise<ReconcileResult | undefined> {
  const { deps } = pass;
  const results = [];
  for (const backend of backends) results.push(await backend.remove(pass));
  const waiting = results.filter((r) => !r.done);
  if (waiting.length > 0) return { requeueAfterSeconds: Math.min(...waiting.map((r) => r.requeueAfterSeconds)) };
  const name = results.find((r) => r.done)?.name ?? '';
  await pass.event('Normal', EVENT.deleted, `Deleted load balancer ${name}`);
  let current = pass.service;
  // A Service that stays (no longer a load balancer) keeps no stale address.
  if (why === 'not-ours-any-more') current = (await setIngressHostname(deps, current, undefined)) ?? current;
  await removeFinalizer(deps, current, pass.lbc ? LBC_SERVICE_FINALIZER : FINALIZER_LOAD_BALANCER_CLEANUP);
  deps.log.info('load balancer deleted', {
    serviceKey: `${current.metadata.namespace}/${current.metadata.name}`,
    loadBalancer: name,
    why,
  });
  return undefined;
}

/** The reference's annotations this controller does not carry out, named in a Warning. */
async function warnUnsupported(options: LoadBalancerOptions, pass: Pass): Promise<void> {
  const unsupported = options.lbc?.unsupported ?? [];
  if (unsupported.length === 0) return;
  await pass.event(
    'Warning',
    EVENT.unsupportedAnnotation,
    `Annotation(s) not supported, ignored: ${unsupported.join(', ')}`,
  );
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
