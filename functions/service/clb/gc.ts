import type { SecurityGroup } from '../../../shared/aws/ec2-port.ts';
import type { ClassicLoadBalancer } from '../../../shared/aws/elb-port.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import type { ServiceDeps } from '../deps.ts';
import { securityGroupName } from '../names.ts';
import { classicNodeRule } from './plans.ts';

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
 * Removes a Classic ELB no Service wants: the rule its managed group has on the Nodes' groups, then the load
 * balancer. Its managed group is held by the load balancer's network interfaces for minutes; a group the
 * reference made carries only the cluster tag, so it is given its Service's tag first, and a later
 * collection, seeing that Service gone, deletes it once free.
 */
export async function deleteClassicGarbage(
  lb: ClassicLoadBalancer,
  owner: string,
  vpcGroups: readonly SecurityGroup[],
  deps: ServiceDeps,
): Promise<void> {
  const managed = vpcGroups.find(
    (g) => g.groupName === securityGroupName(lb.name) && lb.securityGroups.includes(g.groupId),
  );
  if (managed) {
    if (managed.tags[LABEL_SERVICE_NAME] === undefined) {
      await deps.ec2.createTags([managed.groupId], { [LABEL_SERVICE_NAME]: owner });
    }
    const rule = classicNodeRule(managed.groupId);
    for (const group of vpcGroups) {
      const theirs = group.ingress.filter((r) => r.sourceGroupId === managed.groupId && r.protocol === rule.protocol);
      if (theirs.length > 0) await deps.ec2.revokeSecurityGroupIngress(group.groupId, theirs);
    }
  }
  await deps.elb!.deleteLoadBalancer(lb.name);
}
