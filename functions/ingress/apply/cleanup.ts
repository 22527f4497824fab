import type { LoadBalancer, TargetGroup } from '../../../shared/aws/elbv2-port.ts';
import { codeOf } from '../../../shared/load-balancers/errors.ts';
import { deleteSecurityGroup } from '../../../shared/load-balancers/security-groups.ts';
import { deleteTargetGroup } from '../../../shared/load-balancers/target-groups.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import type { GroupPass } from './pass.ts';
import { deleteGroupBindings } from './stack-bindings.ts';
import { adoptionTags, isStackResource, RESOURCE, TAG } from './tags.ts';
import { type StackTargetGroups, tagsOf } from './target-groups.ts';

/**
 * What a group no longer needs goes once nothing uses it: target groups no rule forwards to any more (after the
 * rules moved off them), and, when the group has no member left, everything its stack owns: its TargetGroupBindings,
 * the load balancer (its listeners and rules with it), its target groups, its managed security group. A security
 * group the load balancer's interfaces still hold (for minutes after it goes) is tried again later: deletion never
 * waits on it.
 */

/** Deletes the stack's target groups the load balancer had that the pass no longer uses; answers how many must wait. */
export async function deleteUnusedTargetGroups(
  groups: StackTargetGroups,
  referenced: ReadonlySet<string>,
  pass: GroupPass,
): Promise<number> {
  const wanted = new Set([...groups.wanted.values()].map((g) => g.arn));
  let pending = 0;
  for (const group of groups.attached) {
    if (wanted.has(group.arn) || referenced.has(group.arn)) continue;
    if (!isStackResource(groups.tags.get(group.arn), pass.deps.clusterName, pass.group)) continue;
    if ((await deleteTargetGroup(group, pass.ctx)) === 'in-use') pending++;
  }
  if (pending > 0) pass.deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'ResourceInUse' }, pending);
  return pending;
}

/** Every resource of the stack, read from AWS by the stack's tracking tags. */
export interface StackInventory {
  loadBalancers: LoadBalancer[];
  targetGroups: TargetGroup[];
  securityGroups: { groupId: string; groupName: string; tags: Record<string, string> }[];
  /** The load balancers' and target groups' tags, by ARN. */
  tags: Map<string, Record<string, string>>;
}

/**
 * The stack's resources in the VPC: load balancers and target groups by their tags (one listing of each, and
 * DescribeTags per 20 of those in the VPC), security groups by the stack's tag.
 */
export async function stackInventory(pass: GroupPass): Promise<StackInventory> {
  const { elbv2, ec2, vpcId, clusterName } = pass.deps;
  const inVpc = <T extends { arn: string; vpcId?: string }>(items: T[]) => items.filter((i) => i.vpcId === vpcId);
  const loadBalancers = inVpc(await elbv2.listLoadBalancers()).filter((lb) => lb.type === 'application');
  const targetGroups = inVpc(await elbv2.listTargetGroups());
  const tags = await tagsOf(
    [...loadBalancers, ...targetGroups].map((r) => r.arn),
    pass,
  );
  const mine = (arn: string) => isStackResource(tags.get(arn), clusterName, pass.group);
  const groups = await ec2.findSecurityGroups({ vpcId, tags: { [TAG.stack]: pass.ctx.owner.value } });
  return {
    loadBalancers: loadBalancers.filter((lb) => mine(lb.arn)),
    targetGroups: targetGroups.filter((g) => mine(g.arn)),
    securityGroups: groups.filter(
      (g) => isStackResource(g.tags, clusterName, pass.group) && g.tags[TAG.resource] === RESOURCE.managedSecurityGroup,
    ),
    tags,
  };
}

export interface StackDeletion {
  /** The load balancers and target groups are gone: finalizers may go. */
  servingGone: boolean;
  /** Security groups still held by interfaces (tried again later). */
  pendingGroups: number;
}

/** Deletes what the stack owns, load balancers first (they hold the target groups and the security groups). */
export async function deleteStack(inventory: StackInventory, pass: GroupPass): Promise<StackDeletion> {
  // What the reference made and left is tagged ours first: IAM allows deletes on ours only.
  const { elbv2, ec2, clusterName } = pass.deps;
  for (const resource of [...inventory.loadBalancers, ...inventory.targetGroups]) {
    const missing = adoptionTags(inventory.tags.get(resource.arn) ?? {}, clusterName);
    if (Object.keys(missing).length > 0) await elbv2.addTags(resource.arn, missing);
  }
  for (const group of inventory.securityGroups) {
    const missing = adoptionTags(group.tags, clusterName);
    if (Object.keys(missing).length > 0) await ec2.createTags([group.groupId], missing);
  }
  // The bindings first: their finalizer lets the gated Pods go while their target groups still exist.
  await deleteGroupBindings(pass);
  for (const lb of inventory.loadBalancers) await deleteLoadBalancer(lb, pass);
  let servingGone = true;
  for (const group of inventory.targetGroups) {
    if ((await deleteTargetGroup(group, pass.ctx)) === 'in-use') servingGone = false;
  }
  let pendingGroups = 0;
  for (const group of inventory.securityGroups) {
    if ((await deleteSecurityGroup(group.groupId, pass.ctx)) === 'in-use') pendingGroups++;
  }
  if (!servingGone || pendingGroups > 0) {
    pass.deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'DependencyViolation' }, 1);
  }
  return { servingGone, pendingGroups };
}

/**
 * Deletes a load balancer of the stack. One with deletion protection on (set through the group's attributes) has
 * it turned off first, as the reference does: the group asked for deletion by losing its last member.
 */
export async function deleteLoadBalancer(lb: LoadBalancer, pass: GroupPass): Promise<void> {
  const { elbv2 } = pass.deps;
  try {
    await elbv2.deleteLoadBalancer(lb.arn);
  } catch (err) {
    if (codeOf(err) !== 'OperationNotPermitted') throw err;
    await elbv2.modifyLoadBalancerAttributes(lb.arn, { 'deletion_protection.enabled': 'false' });
    await elbv2.deleteLoadBalancer(lb.arn);
  }
}

/**
 * When to look again at security groups that are still held: after 5, 15 and 45 seconds (a deleted load
 * balancer's interfaces usually go within a minute), then every cleanup interval.
 */
export function cleanupRequeueSeconds(receiveCount: number, cleanupSeconds: number): number {
  const steps = [5, 15, 45];
  return steps[receiveCount - 1] ?? cleanupSeconds;
}
