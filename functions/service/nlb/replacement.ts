import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import { type ObservedLoadBalancer, observeLoadBalancer } from '../../../shared/load-balancers/observed.ts';
import { planLoadBalancerSubnets, type SubnetPlan } from '../../../shared/load-balancers/subnets.ts';
import { ANNOTATION, type LoadBalancerOptions, ownedByService } from '../annotations.ts';
import { resourceContext } from '../context.ts';
import { ingressHostname } from '../decide.ts';
import { AnnotationError } from '../deps.ts';
import type { SpecResult } from '../model/spec.ts';
import {
  acceptableNamesFor,
  loadBalancerNameFromHostname,
  preferredLoadBalancerName,
  REPLACES_TAG,
  referenceLoadBalancerName,
  type ServiceIdentity,
} from '../names.ts';
import type { Pass } from '../writes.ts';
import { replacementReason } from './load-balancer.ts';

/**
 * Which load balancer a pass builds or keeps in line, and which one serves meanwhile. The rule that keeps
 * traffic flowing: a load balancer the Service's status names is never deleted before its successor is
 * `active` and the status names the successor instead.
 */
export interface LoadBalancerChoice {
  /** The load balancer serving the Service now (its status names it, or found by name), when it is this Service's. */
  serving?: ObservedLoadBalancer;
  /** The name this pass builds or keeps in line. */
  name: string;
  /** The load balancer of that name, when it exists (`serving` itself when it is kept). */
  existing?: ObservedLoadBalancer;
  /** Why `serving` is being replaced (then `existing` is its successor, or absent until made). */
  replacing?: string;
  /** The successor needs the serving one's name (the name annotation pins it): the old one must go first. */
  deleteFirst?: boolean;
  /** The subnet changes `existing` needs in place. */
  subnets: SubnetPlan;
  /**
   * The load balancer `existing` replaced and took the status from, still there for its grace (its
   * successor's REPLACES_TAG names it); finish.ts deletes it once the grace is over.
   */
  retiring?: ObservedLoadBalancer;
  /** That one's name when it is gone already (deleted by a pass that crashed before finishing): what it left goes. */
  retiredName?: string;
}

const same = (a: string | undefined, b: string | undefined) => a !== undefined && a.toLowerCase() === b?.toLowerCase();

export async function chooseLoadBalancer(
  pass: Pass,
  options: LoadBalancerOptions,
  buildSpec: (name: string) => SpecResult,
): Promise<LoadBalancerChoice> {
  const { service } = pass;
  const identity: ServiceIdentity = {
    clusterName: pass.deps.clusterName,
    namespace: service.metadata.namespace ?? 'default',
    name: service.metadata.name,
  };
  const preferred = preferredLoadBalancerName(identity, options);
  const statusName = loadBalancerNameFromHostname(ingressHostname(service));
  let serving = statusName ? await findOurs(statusName, pass, same(statusName, preferred)) : undefined;
  if (!serving && !same(statusName, preferred)) serving = await findOurs(preferred, pass);
  if (!serving) return { name: preferred, subnets: { action: 'none' } };

  const acceptable = acceptableNamesFor(identity, service.metadata.uid, options);
  const built = buildSpec(serving.lb.name);
  const subnets =
    built.ok && serving.lb.state !== 'failed' && serving.lb.scheme === built.spec.scheme
      ? await planLoadBalancerSubnets(serving.lb, built.spec, resourceContext(pass))
      : ({ action: 'none' } as const);
  const why = built.ok ? replacementReason(serving, built.spec, subnets) : undefined;
  const keeps = acceptable.some((n) => same(n, serving.lb.name));
  if (keeps && !why)
    return { serving, name: serving.lb.name, existing: serving, subnets, ...(await replacedBy(serving, pass)) };

  // A successor: the Service asks for another name, or this load balancer cannot serve it in place.
  const reference = referenceLoadBalancerName(service.metadata.uid);
  const name = why ? acceptable.find((n) => !same(n, serving.lb.name) && !same(n, reference)) : preferred;
  const replacing = why ?? `the Service now asks for the name ${preferred}`;
  if (!name) return { serving, name: serving.lb.name, replacing, deleteFirst: true, subnets: { action: 'none' } };
  const existing = await findOurs(name, pass);
  return { serving, name, ...(existing ? { existing } : {}), replacing, subnets: { action: 'none' } };
}

/** The load balancer `successor` replaced (its REPLACES_TAG names it): still there and this Service's, or gone. */
async function replacedBy(
  successor: ObservedLoadBalancer,
  pass: Pass,
): Promise<Pick<LoadBalancerChoice, 'retiring' | 'retiredName'>> {
  const name = successor.tags.get(successor.lb.arn)?.[REPLACES_TAG];
  if (!name || same(name, successor.lb.name)) return {};
  const retiring = await findOurs(name, pass, false);
  return retiring ? { retiring } : { retiredName: name };
}

/**
 * The load balancer of that name with everything attached, when its tags say it is this Service's. One of
 * that name that is not (`toBuild`: a name this pass would create) is refused: never adopt or share another's.
 */
export async function findOurs(name: string, pass: Pass, toBuild = true): Promise<ObservedLoadBalancer | undefined> {
  const lb = await pass.elbv2.findLoadBalancer(name);
  if (!lb) return undefined;
  const observed = await observeLoadBalancer(lb, pass.elbv2);
  const tags = observed.tags.get(lb.arn);
  if (ownedByService(tags, pass.deps.clusterName, pass.serviceKey)) return observed;
  if (!toBuild) return undefined;
  throw new AnnotationError(
    `load balancer name ${name} is taken by ${tags?.[LABEL_SERVICE_NAME] ?? 'a load balancer this cluster does not own'}; set ${ANNOTATION.name} to another name`,
  );
}
