import type { SecurityGroup } from '../../../shared/aws/ec2-port.ts';
import { errorMessage, RetryableError } from '../../../shared/errors.ts';
import { codeOf } from '../../../shared/load-balancers/errors.ts';
import { freshLoadBalancer, type ObservedLoadBalancer } from '../../../shared/load-balancers/observed.ts';
import { ensureLoadBalancerGroups, type LoadBalancerGroups } from '../../../shared/load-balancers/security-groups.ts';
import { sameMembers } from '../../../shared/load-balancers/security-rules.ts';
import { type SubnetPlan, wantedSubnets } from '../../../shared/load-balancers/subnets.ts';
import { changedEntries, keepTagsInLine } from '../../../shared/load-balancers/tags.ts';
import { resourceContext } from '../context.ts';
import { EVENT } from '../kube.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import type { Pass } from '../writes.ts';

/**
 * The Network Load Balancer itself: made with its subnets, groups and tags, or kept in line in two steps
 * around the listeners. Changes that widen what it accepts (security groups, zones, dual-stack) come before
 * the listeners and target groups that need them; changes that narrow it (back to IPv4 only) come after the
 * listeners have left what needed the wider setting, since AWS refuses them before.
 */

/** Why the load balancer cannot serve the spec in place, or undefined when it can. */
export function replacementReason(
  observed: ObservedLoadBalancer,
  spec: LoadBalancerSpec,
  subnets: SubnetPlan,
): string | undefined {
  const { lb } = observed;
  if (lb.state === 'failed') return `it failed to provision (${lb.stateReason ?? 'no reason given'})`;
  if (lb.scheme !== spec.scheme) return `scheme ${lb.scheme} -> ${spec.scheme} cannot be changed in place`;
  if (subnets.action === 'replace') {
    return `the subnet or address of every zone changes (${subnets.zones.join(', ')}), which AWS cannot do while the load balancer keeps a zone`;
  }
  return undefined;
}

/**
 * Its security groups (shared/load-balancers/security-groups.ts), the managed one described as the Service's.
 * `readFrom`: where the groups of ours are read, when not by one DescribeSecurityGroups of their own.
 */
export async function ensureNetworkLoadBalancerGroups(
  spec: LoadBalancerSpec,
  pass: Pass,
  readFrom?: (names: string[]) => Promise<SecurityGroup[]>,
): Promise<LoadBalancerGroups> {
  const { lbc } = spec;
  const groups = await ensureLoadBalancerGroups(
    lbc ? { ...spec, tags: { ...spec.tags, ...lbc.securityGroupTags } } : spec,
    resourceContext(pass),
    {
      // The AWS Load Balancer Controller's wording, for the groups of its Services.
      description: lbc
        ? '[k8s] Managed SecurityGroup for LoadBalancer'
        : `Load balancer ${spec.loadBalancerName} of Service ${spec.serviceKey} (cluster ${pass.deps.clusterName})`,
      kind: 'a Network Load Balancer',
      ...(readFrom ? { readFrom } : {}),
    },
  );
  // The user's groups alone, unless they ask for the backend rules (the reference's manage-backend-security-group-rules).
  if (lbc && !lbc.manageBackendSecurityGroupRules) {
    return { ...groups, lbGroups: groups.lbGroups.filter((g) => g !== groups.backendGroupId) };
  }
  return groups;
}

export async function createLoadBalancer(
  spec: LoadBalancerSpec,
  groups: LoadBalancerGroups,
  tags: Record<string, string>,
  pass: Pass,
): Promise<ObservedLoadBalancer> {
  const mappings = await wantedSubnets(spec, resourceContext(pass));
  const result = await pass.elbv2.createLoadBalancer({
    name: spec.loadBalancerName,
    scheme: spec.scheme,
    subnetMappings: mappings,
    securityGroups: groups.lbGroups,
    ...(spec.ipAddressType === 'dualstack' ? { ipAddressType: 'dualstack' as const } : {}),
    tags,
  });
  if (result === 'name-taken') {
    // It did not exist a moment ago: AWS has not caught up, or someone took the name in between.
    throw new RetryableError(`creating load balancer ${spec.loadBalancerName}: the name is in use with other settings`);
  }
  return freshLoadBalancer(result, tags);
}

/**
 * Before the listeners: security groups (none on a load balancer made without them: AWS cannot add any),
 * subnets, dual-stack turned on, tags.
 */
export async function widenLoadBalancer(
  observed: ObservedLoadBalancer,
  groups: LoadBalancerGroups | undefined,
  subnets: SubnetPlan,
  spec: LoadBalancerSpec,
  tags: Record<string, string>,
  pass: Pass,
): Promise<void> {
  const { lb } = observed;
  if (groups) {
    if (!sameMembers(groups.lbGroups, lb.securityGroups)) await pass.elbv2.setSecurityGroups(lb.arn, groups.lbGroups);
  }
  if (subnets.action === 'remove-first') {
    await pass.event(
      'Normal',
      EVENT.updated,
      `Removing zone(s) ${subnets.zones.join(', ')} from load balancer ${lb.name} to add them back with the new subnet or address (AWS cannot change a zone in place)`,
    );
  }
  if (subnets.action === 'set' || subnets.action === 'remove-first') {
    await pass.elbv2.setSubnets(lb.arn, subnets.mappings).catch((err: unknown) => {
      // Adding a zone back while AWS still removes its old subnet is refused for a few minutes.
      if (codeOf(err) === 'InvalidConfigurationRequest' && subnets.action === 'set') {
        throw new RetryableError(
          `setting subnets of load balancer ${lb.name} (a zone removed a moment ago may still be on its way out): ${errorMessage(err)}`,
        );
      }
      throw err;
    });
  }
  if (lb.ipAddressType !== 'dualstack' && spec.ipAddressType === 'dualstack') {
    await pass.elbv2.setIpAddressType(lb.arn, 'dualstack');
  }
  await keepTagsInLine(
    lb.arn,
    observed.tags.get(lb.arn) ?? {},
    { tags, externalManagedTags: spec.externalManagedTags },
    pass,
  );
}

/**
 * After the listeners: back to IPv4 only (AWS refuses it while a listener forwards to an IPv6 target group),
 * and the attributes: the Service's, and AWS's defaults for the switches it leaves unset.
 */
export async function narrowLoadBalancer(
  observed: ObservedLoadBalancer,
  spec: LoadBalancerSpec,
  pass: Pass,
): Promise<void> {
  const { lb } = observed;
  if (lb.ipAddressType === 'dualstack' && spec.ipAddressType === 'ipv4') {
    await pass.elbv2.setIpAddressType(lb.arn, 'ipv4');
  }
  const current = await pass.elbv2.describeLoadBalancerAttributes(lb.arn);
  const changed = changedEntries(spec.attributes, current);
  if (Object.keys(changed).length > 0) await pass.elbv2.modifyLoadBalancerAttributes(lb.arn, changed);
}
