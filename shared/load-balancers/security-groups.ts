import type { SecurityGroup } from '../aws/ec2-port.ts';
import { clusterTagKey } from '../aws/ownership.ts';
import { TerminalError } from '../errors.ts';
import type { AwsPorts, LoadBalancerContext } from './context.ts';
import { codeOf, NotVisibleYetError } from './errors.ts';
import type { LoadBalancerModel } from './model.ts';
import { planRules } from './security-rules.ts';
import { changedEntries, isOwnedBy, staleTagKeys } from './tags.ts';

/**
 * A load balancer's security groups: its own managed group (listener ports from the source ranges), the
 * cluster's backend group (the one source the Nodes' groups allow), and the groups the user names.
 */

/** Marks the backend group; a group of that name without it (and our cluster tag) is someone else's. */
export const BACKEND_ROLE_TAG = 'serverless-ccm/security-group-role';

/**
 * The cluster's backend security group: attached to every load balancer of the cluster, and the one source
 * the Nodes' groups allow. One group for all load balancers keeps the Nodes' groups far below their 60-rule
 * quota however many load balancers there are (a rule per load balancer exhausts it at a few dozen).
 */
export function backendSecurityGroupName(clusterName: string): string {
  return `k8s-traffic-${clusterName}`;
}

/** A load balancer takes at most five security groups (Network, Application and Classic alike). */
export const MAX_LOAD_BALANCER_GROUPS = 5;

export interface LoadBalancerGroups {
  /** In order: the managed one or the user's, the backend group, the extra ones. */
  lbGroups: string[];
  backendGroupId: string;
}

export interface LoadBalancerGroupsOptions {
  /** The description a new managed group gets. */
  description: string;
  /** The kind of load balancer, as the error for too many groups names it (`a Network Load Balancer`). */
  kind: string;
  /**
   * Where the groups of ours are read (default: one DescribeSecurityGroups for both); a Node-set change's pass
   * reads them from the batch (`ServiceBatch.securityGroupsNamed`).
   */
  readFrom?: (names: string[]) => Promise<SecurityGroup[]>;
}

/** The user's groups, or the managed one; then the backend group; then the extra ones. */
export async function ensureLoadBalancerGroups(
  model: ManagedGroupModel & Pick<LoadBalancerModel, 'userSecurityGroups' | 'extraSecurityGroups'>,
  ctx: LoadBalancerContext,
  options: LoadBalancerGroupsOptions,
): Promise<LoadBalancerGroups> {
  const { settings } = ctx;
  const readFrom = options.readFrom ?? ((names) => ctx.ec2.findSecurityGroups({ vpcId: ctx.vpcId, groupNames: names }));
  const extra = await resolveGroups(model.extraSecurityGroups, settings.extraSecurityGroups, ctx);
  const found = await readFrom(ourGroupNames(model, ctx.clusterName));
  const backendName = backendSecurityGroupName(ctx.clusterName);
  const backendGroupId = await ensureBackendGroup(
    found.find((g) => g.groupName === backendName),
    ctx,
  );
  const frontend = model.userSecurityGroups
    ? await resolveGroups(model.userSecurityGroups, settings.securityGroups, ctx)
    : [
        await ensureManagedGroup(
          model,
          found.find((g) => g.groupName === model.securityGroupName),
          ctx,
          { description: options.description },
        ),
      ];
  const lbGroups = [...new Set([...frontend, backendGroupId, ...extra])];
  if (lbGroups.length > MAX_LOAD_BALANCER_GROUPS) {
    throw ctx.userError(
      `${lbGroups.length} security groups for one load balancer (${model.userSecurityGroups ? settings.securityGroups : 'the managed one'}, the cluster's backend group and ${settings.extraSecurityGroups}); ${options.kind} takes ${MAX_LOAD_BALANCER_GROUPS}`,
    );
  }
  return { lbGroups, backendGroupId };
}

/** The names of the groups of ours a load balancer has: its managed group (unless the user names their own), the backend group. */
export function ourGroupNames(
  model: Pick<LoadBalancerModel, 'securityGroupName' | 'userSecurityGroups'>,
  clusterName: string,
): string[] {
  const backendName = backendSecurityGroupName(clusterName);
  return model.userSecurityGroups ? [backendName] : [model.securityGroupName, backendName];
}

/** Tags of the cluster's backend group: owned by the cluster, and no owner (so no owner's cleanup takes it). */
function backendTags(clusterName: string): Record<string, string> {
  return { [clusterTagKey(clusterName)]: 'owned', [BACKEND_ROLE_TAG]: 'backend' };
}

/** The cluster's backend group's ID (the group found by its name, or made now). */
export async function ensureBackendGroup(
  existing: SecurityGroup | undefined,
  ctx: LoadBalancerContext,
): Promise<string> {
  const { clusterName } = ctx;
  const name = backendSecurityGroupName(clusterName);
  if (existing) {
    if (existing.tags[clusterTagKey(clusterName)] !== 'owned' || existing.tags[BACKEND_ROLE_TAG] !== 'backend') {
      throw new TerminalError(
        `security group ${name} (${existing.groupId}) exists but is not this cluster's backend group (tags ${clusterTagKey(clusterName)}=owned, ${BACKEND_ROLE_TAG}=backend)`,
      );
    }
    return existing.groupId;
  }
  const created = await ctx.ec2.createSecurityGroup({
    groupName: name,
    description: `Load balancers of cluster ${clusterName}: the source the Nodes' security groups allow`,
    vpcId: ctx.vpcId,
    tags: backendTags(clusterName),
  });
  if (created === 'name-taken') {
    throw new NotVisibleYetError(`creating security group ${name}: EC2 says it exists but does not show it yet`);
  }
  return created.groupId;
}

/** What a load balancer's managed group is made from, whatever the kind of load balancer. */
export type ManagedGroupModel = Pick<
  LoadBalancerModel,
  'securityGroupName' | 'tags' | 'externalManagedTags' | 'managedIngress'
>;

export interface ManagedGroupOptions {
  /** The description it is created with. */
  description: string;
  /**
   * A group of that name the cluster owns but that names no owner may be taken over: the reference
   * controller tagged its Classic ELB groups with the cluster alone.
   */
  adoptClusterOwned?: boolean;
}

/** The load balancer's own group: inbound listener ports from the source ranges, nothing else. */
export async function ensureManagedGroup(
  model: ManagedGroupModel,
  existing: SecurityGroup | undefined,
  ctx: LoadBalancerContext,
  options: ManagedGroupOptions,
): Promise<string> {
  const { clusterName, owner } = ctx;
  let group = existing;
  const adoptable =
    options.adoptClusterOwned &&
    group?.tags[clusterTagKey(clusterName)] === 'owned' &&
    group.tags[owner.key] === undefined;
  if (group && !adoptable && !isOwnedBy(group.tags, clusterName, owner)) {
    throw ctx.userError(
      `security group name ${model.securityGroupName} is taken by ${group.tags[owner.key] ?? `${group.groupId}, which this cluster does not own`}`,
    );
  }
  if (!group) {
    const created = await ctx.ec2.createSecurityGroup({
      groupName: model.securityGroupName,
      description: options.description,
      vpcId: ctx.vpcId,
      tags: model.tags,
    });
    if (created === 'name-taken') {
      throw new NotVisibleYetError(
        `creating security group ${model.securityGroupName}: EC2 says it exists but does not show it yet`,
      );
    }
    group = {
      groupId: created.groupId,
      groupName: model.securityGroupName,
      vpcId: ctx.vpcId,
      description: '',
      tags: model.tags,
      ingress: [],
    };
  }
  // Every rule of the managed group is ours. Revoke first: it frees room under the rules-per-group quota.
  const plan = planRules(model.managedIngress, group.ingress, () => true);
  if (plan.revoke.length > 0) await ctx.ec2.revokeSecurityGroupIngress(group.groupId, plan.revoke);
  if (plan.authorize.length > 0) await ctx.ec2.authorizeSecurityGroupIngress(group.groupId, plan.authorize);
  const tagsToAdd = changedEntries(model.tags, group.tags);
  if (Object.keys(tagsToAdd).length > 0) await ctx.ec2.createTags([group.groupId], tagsToAdd);
  const stale = staleTagKeys(model.tags, group.tags, model.externalManagedTags);
  if (stale.length > 0) await ctx.ec2.deleteTags([group.groupId], stale);
  return group.groupId;
}

/**
 * Security groups the user names (IDs or names) as IDs; one that does not exist is the user's to fix.
 * `setting`: where the user named them, for the error.
 */
export async function resolveGroups(
  refs: readonly string[],
  setting: string,
  ctx: LoadBalancerContext,
): Promise<string[]> {
  if (refs.length === 0) return [];
  const { vpcId } = ctx;
  const ids = refs.filter((r) => /^sg-[0-9a-f]+$/.test(r));
  const names = refs.filter((r) => !ids.includes(r));
  const found = [
    ...(ids.length > 0 ? await ctx.ec2.findSecurityGroups({ groupIds: ids }) : []),
    ...(names.length > 0 ? await ctx.ec2.findSecurityGroups({ vpcId, groupNames: names }) : []),
  ];
  return refs.map((ref) => {
    const group = found.find((g) => g.groupId === ref || (g.groupName === ref && g.vpcId === vpcId));
    if (!group) throw ctx.userError(`${setting}: no security group "${ref}" in ${vpcId}`);
    return group.groupId;
  });
}

/**
 * `in-use`: DependencyViolation, i.e. the network interfaces of a deleted load balancer still use it (for
 * minutes), or another group's rule references it.
 */
export async function deleteSecurityGroup(groupId: string, ports: AwsPorts): Promise<'deleted' | 'in-use'> {
  try {
    await ports.ec2.deleteSecurityGroup(groupId);
    return 'deleted';
  } catch (err) {
    if (codeOf(err) === 'DependencyViolation') return 'in-use';
    throw err;
  }
}
