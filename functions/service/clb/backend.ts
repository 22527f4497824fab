import type { ClassicLoadBalancer } from '../../../shared/aws/elb-port.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import { describeProblems, type LoadBalancerOptions, ownedByService } from '../annotations.ts';
import type { LoadBalancerBackend } from '../backend.ts';
import { ingressHostname } from '../decide.ts';
import { AnnotationError, type ServiceDeps } from '../deps.ts';
import { EVENT, setIngressHostname } from '../kube.ts';
import { acceptableNames, REPLACES_TAG, referenceLoadBalancerName } from '../names.ts';
import type { Pass } from '../writes.ts';
import { deleteClassicLoadBalancer, retireClassic } from './cleanup.ts';
import { elbOf, ensureClassicLoadBalancer, ensureInstancesAndNodeAccess } from './load-balancer.ts';
import { type ClassicSpec, classicSpec } from './model.ts';
import { findClassic, type ObservedClassic } from './observed.ts';
import { classicNameFromHostname } from './plans.ts';
import { classicLooksInLine, classicQuickLook } from './quick-check.ts';

/**
 * Classic ELBs: Services moved over from the reference cloud controller keep theirs (same name, same DNS
 * name), and new ones get one when asked. The order of a pass: choose (which one serves, which one is built),
 * then the load balancer with its groups, listeners, settings, instances and Node rule (load-balancer.ts),
 * then the status (once a successor has an instance in service), then the one it replaces (cleanup.ts).
 */
export const classicLoadBalancers: LoadBalancerBackend = {
  kind: 'classic',
  ensure: ensureClassic,
  remove: deleteClassicLoadBalancer,
  retire: retireClassicNamed,
};

/** Retires the Classic ELB of that name when it is the Service's: another kind has taken over. */
async function retireClassicNamed(pass: Pass, name: string, successor: string): Promise<void> {
  const found = await findClassic(
    elbOf(pass),
    { clusterName: pass.deps.clusterName, serviceKey: pass.serviceKey },
    name,
    false,
  );
  if (found) await retireClassic(found.lb, successor, pass, false);
}

interface ClassicChoice {
  serving?: ObservedClassic;
  name: string;
  existing?: ObservedClassic;
  replacing?: string;
  deleteFirst?: boolean;
}

async function ensureClassic(pass: Pass, options: LoadBalancerOptions): Promise<ReconcileResult | undefined> {
  const { deps } = pass;
  const build = (name: string) =>
    classicSpec(pass.service, options, {
      clusterName: deps.clusterName,
      loadBalancerName: name,
      externalManagedTags: deps.externalManagedTags ?? [],
    });
  const status = pass.shortPass ? classicNameFromHostname(ingressHostname(pass.service)) : undefined;
  const preferred = status ? build(status) : undefined;
  if (preferred?.ok && pass.shortPass === 'resync') {
    // Nothing differs that a quick look can see: the hourly full pass looks at the rest.
    if (await classicLooksInLine(preferred.spec, options, pass)) return undefined;
  } else if (preferred?.ok) {
    const done = await instancesOnly(preferred.spec, options, pass);
    if (done) return done.result;
  }
  const choice = await chooseClassic(pass, options, build);
  const built = build(choice.name);
  if (!built.ok) throw new AnnotationError(`cannot build the Classic ELB: ${describeProblems(built.problems)}`);
  const spec = built.spec;
  if (choice.replacing && choice.serving && !choice.existing) {
    await pass.event(
      'Normal',
      EVENT.replacing,
      `Replacing load balancer ${choice.serving.lb.name} with ${spec.loadBalancerName}: ${choice.replacing}`,
    );
  }
  if (choice.deleteFirst && choice.serving) await retireClassic(choice.serving.lb, spec.loadBalancerName, pass, true);
  const existing = choice.deleteFirst ? undefined : choice.existing;
  const successorOf = choice.replacing && !choice.deleteFirst ? choice.serving : undefined;
  const replaces = successorOf?.lb.name ?? pass.previous?.name;
  const tags = replaces ? { ...spec.tags, [REPLACES_TAG]: replaces } : spec.tags;
  const ensured = await ensureClassicLoadBalancer(spec, existing?.lb, tags, existing?.tags ?? {}, pass);
  return finishClassic(spec, ensured.lb, ensured.created, successorOf, pass);
}

/**
 * A Node-set change's pass (functions/service/resync-check.ts): after the quick look, and a look at the tags since
 * this writes, only the instances and the Node rules, as the full pass makes them. Undefined, having written
 * nothing, when anything is off: the full pass follows.
 */
async function instancesOnly(
  spec: ClassicSpec,
  options: LoadBalancerOptions,
  pass: Pass,
): Promise<{ result: ReconcileResult | undefined } | undefined> {
  const lb = await classicQuickLook(spec, options, pass);
  if (!lb) return undefined;
  const tags = await pass.batch.classicLoadBalancerTags(lb.name);
  if (!tags || !ownedByService(tags, pass.deps.clusterName, pass.serviceKey) || REPLACES_TAG in tags) return undefined;
  if (!(await ensureInstancesAndNodeAccess(spec, lb, pass))) return undefined;
  return { result: await finishClassic(spec, lb, false, undefined, pass) };
}

/** Status, the replaced one, Events. A successor takes the status once one of its instances is in service. */
async function finishClassic(
  spec: ClassicSpec,
  lb: ClassicLoadBalancer,
  created: boolean,
  replaced: ObservedClassic | undefined,
  pass: Pass,
): Promise<ReconcileResult | undefined> {
  const { deps, changes } = pass;
  if ((replaced || pass.previous) && !(await servesTraffic(lb, pass))) {
    return { requeueAfterSeconds: deps.provisioningRequeueSeconds };
  }
  const updated = await setIngressHostname(deps, pass.service, lb.dnsName);
  if (!updated) return undefined;
  pass.service = updated;
  if (replaced) await retireClassic(replaced.lb, spec.loadBalancerName, pass, false);
  if (pass.previous) await pass.previous.retire(lb.name);
  if (replaced || pass.previous) await elbOf(pass).removeTags(lb.name, [REPLACES_TAG]);
  if (changes.config) {
    if (!created) deps.metrics.count(MetricName.LoadBalancersUpdated);
    await pass.event('Normal', EVENT.ensured, `Ensured load balancer ${lb.name} (${lb.dnsName})`);
  } else if (changes.targets) {
    await pass.event('Normal', EVENT.updated, `Updated load balancer ${lb.name} with new targets`);
  }
  return undefined;
}

/** A load balancer serves once an instance is in service, or at once when there is no instance to serve. */
async function servesTraffic(lb: ClassicLoadBalancer, pass: Pass): Promise<boolean> {
  if (lb.instanceIds.length === 0) return true;
  const health = await elbOf(pass).describeInstanceHealth(lb.name);
  return health.some((h) => h.state === 'InService');
}

/**
 * The one serving (the status names it, or it has the reference's `a<uid>` name with this Service's tags),
 * and the one to build: the same when it can stay; else a successor beside it (its scheme changed, or the
 * Service asks for another name).
 */
async function chooseClassic(
  pass: Pass,
  options: LoadBalancerOptions,
  build: (name: string) => ReturnType<typeof classicSpec>,
): Promise<ClassicChoice> {
  const { service, deps } = pass;
  const identity = {
    clusterName: deps.clusterName,
    namespace: service.metadata.namespace ?? 'default',
    name: service.metadata.name,
  };
  const acceptable = acceptableNames(identity, service.metadata.uid, options.name);
  const preferred = options.name ?? acceptable[0]!;
  const reference = referenceLoadBalancerName(service.metadata.uid);
  const statusName = classicNameFromHostname(ingressHostname(service));
  const owner = { clusterName: deps.clusterName, serviceKey: pass.serviceKey };
  let serving: ObservedClassic | undefined;
  for (const name of new Set([statusName, reference, preferred].filter((n): n is string => n !== undefined))) {
    serving = await findClassic(elbOf(pass), owner, name, name === preferred);
    if (serving) break;
  }
  if (!serving) return { name: preferred };
  const built = build(serving.lb.name);
  const why =
    built.ok && serving.lb.scheme !== built.spec.scheme
      ? `scheme ${serving.lb.scheme} -> ${built.spec.scheme} cannot be changed in place`
      : undefined;
  const keeps = acceptable.some((n) => n.toLowerCase() === serving.lb.name.toLowerCase());
  if (keeps && !why) return { serving, name: serving.lb.name, existing: serving };
  const name = why ? acceptable.find((n) => n !== serving.lb.name && n !== reference) : preferred;
  const replacing = why ?? `the Service now asks for the name ${preferred}`;
  if (!name) return { serving, name: serving.lb.name, replacing, deleteFirst: true };
  const existing = await findClassic(elbOf(pass), owner, name, true);
  return { serving, name, ...(existing ? { existing } : {}), replacing };
}

/** Whether a Classic ELB under the reference name carries this Service's tags: a migrated Service whose status was lost. */
export async function hasReferenceClassic(deps: ServiceDeps, service: Service): Promise<boolean> {
  const name = referenceLoadBalancerName(service.metadata.uid);
  if (!name || !deps.elb) return false;
  const serviceKey = `${service.metadata.namespace ?? 'default'}/${service.metadata.name}`;
  return (await findClassic(deps.elb, { clusterName: deps.clusterName, serviceKey }, name, false)) !== undefined;
}
