import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { ANNOTATION } from './annotations.ts';
import { LBC_SERVICE_FINALIZER } from './lbc/names.ts';
import { isLbcService } from './lbc/options.ts';

// Which Services are the service controller's, and what to do with them.

export type ServiceDecision =
  | { action: 'ensure'; lbc?: true }
  | {
      action: 'delete';
      why: 'deleting' | 'not-ours-any-more';
      /** What is removed was made the AWS Load Balancer Controller's way (its finalizer). */
      lbc?: true;
    }
  | { action: 'ignore'; why: 'not-a-load-balancer' | 'other-class' | 'other-controller' | 'classic' | 'deleting' };

/**
 * What to do with a Service. Ours: `type: LoadBalancer`, no `loadBalancerClass` or the configured one, and
 * not handed to the AWS Load Balancer Controller (`aws-load-balancer-type: external` / `nlb-ip`). A Service
 * that carries the cleanup finalizer but is no longer ours (type changed, handed over, being deleted) has its
 * load balancer removed. Which kind of load balancer (Network, Classic) is the reconciler's choice.
 *
 * With `lbcServices` (SERVICE_LBC_SERVICES), the AWS Load Balancer Controller's Services are ours too, served its
 * way (functions/service/lbc/), under its finalizer `service.k8s.aws/resources`; off, they are left alone, as is one
 * that carries that finalizer. A Service whose type annotation moves it from one way to the other is ensured the new
 * way while it still carries the old way's finalizer: its load balancer is replaced without an outage (the
 * reconciler removes that finalizer once the old load balancer is retired).
 */
export function decide(service: Service, loadBalancerClass: string | undefined, lbcServices = false): ServiceDecision {
  const finalizers = service.metadata.finalizers ?? [];
  const hasFinalizer = finalizers.includes(FINALIZER_LOAD_BALANCER_CLEANUP);
  const hasLbcFinalizer = lbcServices && finalizers.includes(LBC_SERVICE_FINALIZER);
  if (service.metadata.deletionTimestamp) {
    if (hasLbcFinalizer) return { action: 'delete', why: 'deleting', lbc: true };
    return hasFinalizer ? { action: 'delete', why: 'deleting' } : { action: 'ignore', why: 'deleting' };
  }
  // Served in-tree until now (the in-tree finalizer) or not: built the reference's way, the old one kept until it serves.
  if (lbcServices && service.spec?.type === 'LoadBalancer' && isLbcService(service))
    return { action: 'ensure', lbc: true };
  const type = service.metadata.annotations?.[ANNOTATION.type]?.trim().toLowerCase();
  const isLoadBalancer = service.spec?.type === 'LoadBalancer';
  const serviceClass = service.spec?.loadBalancerClass;
  const ourClass = serviceClass === undefined || serviceClass === loadBalancerClass;
  const otherController = type === 'external' || type === 'nlb-ip';
  // Served the reference's way until now or not: built in-tree, the old one kept until the new one serves.
  if (isLoadBalancer && ourClass && !otherController) return { action: 'ensure' };
  if (hasLbcFinalizer) return { action: 'delete', why: 'not-ours-any-more', lbc: true };
  if (hasFinalizer) return { action: 'delete', why: 'not-ours-any-more' };
  if (!isLoadBalancer) return { action: 'ignore', why: 'not-a-load-balancer' };
  return { action: 'ignore', why: ourClass ? 'other-controller' : 'other-class' };
}

export function ingressHostname(service: Service): string | undefined {
  return service.status?.loadBalancer?.ingress?.[0]?.hostname;
}

/** Classic ELB DNS names are `<name>-<n>.<region>.elb.amazonaws.com`; NLBs are `<name>-<id>.elb.<region>.amazonaws.com`. */
export function isClassicHostname(hostname: string | undefined): boolean {
  return hostname !== undefined && /\.[a-z]{2}(-[a-z]+)+-\d\.elb\.amazonaws\.com(\.cn)?$/.test(hostname);
}
