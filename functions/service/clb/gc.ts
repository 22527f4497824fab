import type { SecurityGroup } from '../../../shared/aws/ec2-port.ts';
import type { ClassicLoadBalancer } from '../../../shared/aws/elb-port.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import { backendSecurityGroupName } from '../../../shared/load-balancers/security-groups.ts';
import type { ServiceDeps } from '../deps.ts';
import { securityGroupName } from '../names.ts';
import { classicNodeRule, referenceRuleSource, ruleStillNeeded } from './plans.ts';

/**
 * The garbage collector's Classic ELB part: the cluster's Classic ELBs in `VPC_ID` (never another VPC's), with
 * their tags, and the removal of one no Service wants.
 */
export interface ClassicInventory {
  /** Every Classic ELB of the region: a security group one of them uses is never deleted, whatever its VPC. */
  all: ClassicLoadBalancer[];
  inVpc: ClassicLoadBalancer[];
  tags: Map<string, Record<string, string>>;
}

export async function classicInventory(deps: ServiceDeps): Promise<ClassicInventory> {
  if (!deps.elb) return { all: [], inVpc: [], tags: new Map() };
  const all = await deps.elb.listLoadBalancers();
  const inVpc = all.filter((lb) => lb.vpcId === deps.vpcId);
  const tags = inVpc.length > 0 ? await deps.elb.describeTags(inVpc.map((lb) => lb.name)) : new Map();
  return { all, inVpc, tags };
}

/**
 * Removes a Classic ELB no Service wants: the all-traffic rule on the Nodes' groups from its managed group, or from
 * the user's group it was made with (unless another Classic ELB made the reference's way, in `others`, still uses
 * that group), then the load balancer. Its managed group is held by the load balancer's network interfaces for
 * minutes; a group the reference made carries only the cluster tag, so it is given its Service's tag first, and a
 * later collection, seeing that Service gone, deletes it once free.
 */
export async function deleteClassicGarbage(
  lb: ClassicLoadBalancer,
  owner: string,
  vpcGroups: readonly SecurityGroup[],
  others: readonly ClassicLoadBalancer[],
  deps: ServiceDeps,
): Promise<void> {
  const names = { managed: securityGroupName(lb.name), backend: backendSecurityGroupName(deps.clusterName) };
  const managed = vpcGroups.find((g) => g.groupName === names.managed && lb.securityGroups.includes(g.groupId));
  if (managed && managed.tags[LABEL_SERVICE_NAME] === undefined) {
    await deps.ec2.createTags([managed.groupId], { [LABEL_SERVICE_NAME]: owner });
  }
  // The Service is gone: the annotation's order is not known, so the user's group is the first, as AWS lists them.
  const source = referenceRuleSource(lb, vpcGroups, names);
  const backend = vpcGroups.find((g) => g.groupName === names.backend)?.groupId;
  // A user's group the cluster tags (in `vpcGroups`) is one of the cluster's own, the Nodes' group say: its
  // all-traffic rules are the cluster's, not the load balancer's.
  const userGroup = source !== undefined && source !== managed?.groupId;
  const keep = userGroup && (vpcGroups.some((g) => g.groupId === source) || ruleStillNeeded(source, others, backend));
  if (source && !keep) {
    const rule = classicNodeRule(source);
    for (const group of vpcGroups) {
      if (group.groupId === source) continue;
      const theirs = group.ingress.filter((r) => r.sourceGroupId === source && r.protocol === rule.protocol);
      if (theirs.length > 0) await deps.ec2.revokeSecurityGroupIngress(group.groupId, theirs);
    }
  }
  await deps.elb!.deleteLoadBalancer(lb.name);
}
