import type { LoadBalancer, TargetGroup } from '../../../shared/aws/elbv2-port.ts';
import { healthCheckMatches } from '../../../shared/load-balancers/health-check.ts';
import { changedEntries } from '../../../shared/load-balancers/tags.ts';
import { ownedByService } from '../annotations.ts';
import { ingressHostname } from '../decide.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import { loadBalancerNameFromHostname, REPLACES_TAG } from '../names.ts';
import type { Pass } from '../writes.ts';

/** What the quick look read, when everything it saw was in line with the model. */
export interface QuickLook {
  lb: LoadBalancer;
  /** The target groups the load balancer's listeners forward to, one per desired group (same names). */
  attached: TargetGroup[];
}

/**
 * A resync's quick look at a Network Load Balancer (functions/service/resync-check.ts): whether what a few
 * cheap reads show matches the model. The load balancer, its tags and the target groups its listeners forward
 * to come from reads the batch shares (the target groups by load balancer when the batch is small), so a deleted
 * listener, a deleted or replaced target group and a changed health check show here.
 * Anything in doubt answers false: the full pass then looks at everything. What this does not see (attributes,
 * listener attributes and certificates, targets, security group rules, subnets) the hourly full pass puts back.
 */
export async function looksInLine(spec: LoadBalancerSpec, pass: Pass): Promise<boolean> {
  return (await quickLook(spec, pass)) !== undefined;
}

/** The quick look, with what it read; undefined when anything differs or is in doubt. */
export async function quickLook(spec: LoadBalancerSpec, pass: Pass): Promise<QuickLook | undefined> {
  // Being replaced, or moving from another kind: the full pass does that work.
  if (pass.previous) return undefined;
  const status = loadBalancerNameFromHostname(ingressHostname(pass.service));
  if (status?.toLowerCase() !== spec.loadBalancerName.toLowerCase()) return undefined;
  const lb = (await pass.batch.loadBalancers()).get(spec.loadBalancerName.toLowerCase());
  if (lb?.state !== 'active' || lb.dnsName !== ingressHostname(pass.service)) return undefined;
  if (lb.scheme !== spec.scheme || lb.ipAddressType !== spec.ipAddressType) return undefined;
  const tags = await pass.batch.loadBalancerTags(lb.arn);
  if (!tags || !ownedByService(tags, pass.deps.clusterName, pass.serviceKey) || REPLACES_TAG in tags) return undefined;
  if (Object.keys(changedEntries(spec.tags, tags)).length > 0) return undefined;
  const attached = await pass.batch.targetGroupsOf(lb.arn);
  if (attached.length !== spec.targetGroups.length) return undefined;
  const inLine = spec.targetGroups.every((wanted) => {
    const group = attached.find((g) => g.name === wanted.name);
    return (
      group !== undefined &&
      group.protocol === wanted.protocol &&
      group.port === wanted.port &&
      group.targetType === wanted.targetType &&
      group.ipAddressType === wanted.ipAddressType &&
      healthCheckMatches(group.healthCheck, wanted.healthCheck)
    );
  });
  return inLine ? { lb, attached } : undefined;
}
