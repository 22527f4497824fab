import type { ClassicLoadBalancer } from '../../../shared/aws/elb-port.ts';
import type { LoadBalancerOptions } from '../annotations.ts';
import { ingressHostname } from '../decide.ts';
import { acceptableNames } from '../names.ts';
import type { Pass } from '../writes.ts';
import { isOurPolicy, wantedInstances } from './load-balancer.ts';
import type { ClassicSpec } from './model.ts';
import {
  listenersInLine,
  planBackendPolicies,
  planClassicListeners,
  planListenerPolicies,
  sameHealthCheck,
} from './plans.ts';

/**
 * A resync's quick look at a Classic ELB (functions/service/resync-check.ts). One DescribeLoadBalancers
 * listing, shared by the batch, shows nearly all of it: listeners, health check, instances, policies in use,
 * scheme; the Nodes and their instances are the batch's too. Anything in doubt answers false: the full pass
 * then looks at everything, tags and ownership first. What this does not see (attributes, tags, security
 * groups and their rules, subnets, policy documents) the hourly full pass puts back. It writes nothing, so
 * answering from a load balancer the Service's status names, without its tags, never touches another's.
 */
export async function classicLooksInLine(
  spec: ClassicSpec,
  options: LoadBalancerOptions,
  pass: Pass,
): Promise<boolean> {
  const lb = await classicQuickLook(spec, options, pass);
  if (!lb) return false;
  const wanted = new Set(await wantedInstances(spec, pass));
  return lb.instanceIds.length === wanted.size && lb.instanceIds.every((id) => wanted.has(id));
}

/**
 * The quick look without the instances (what a Node-set change's pass puts right): the load balancer when all
 * else it shows is in line, undefined when anything differs or is in doubt.
 */
export async function classicQuickLook(
  spec: ClassicSpec,
  options: LoadBalancerOptions,
  pass: Pass,
): Promise<ClassicLoadBalancer | undefined> {
  if (pass.previous) return undefined;
  const { service } = pass;
  const identity = {
    clusterName: pass.deps.clusterName,
    namespace: service.metadata.namespace ?? 'default',
    name: service.metadata.name,
  };
  const name = spec.loadBalancerName.toLowerCase();
  if (!acceptableNames(identity, service.metadata.uid, options.name).some((n) => n.toLowerCase() === name)) {
    return undefined;
  }
  const lb = (await pass.batch.classicLoadBalancers()).get(name);
  if (!lb || lb.dnsName !== ingressHostname(service) || lb.scheme !== spec.scheme) return undefined;
  if (!listenersInLine(planClassicListeners(spec.listeners, lb.listeners))) return undefined;
  if (!sameHealthCheck(lb.healthCheck, spec.healthCheck)) return undefined;
  const { proxyProtocol, sslNegotiation } = spec.policies;
  const instancePorts = [...new Set(spec.listeners.map((l) => l.instancePort))];
  if (planBackendPolicies(lb, instancePorts, proxyProtocol !== undefined).length > 0) return undefined;
  if (planListenerPolicies(lb, sslNegotiation?.policyName, isOurPolicy).length > 0) return undefined;
  return lb;
}
