import type { SecurityGroup } from '../../../shared/aws/ec2-port.ts';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { TerminalError } from '../../../shared/errors.ts';
import { ANNOTATION, ownedByService } from '../annotations.ts';
import { AnnotationError } from '../deps.ts';
import { planRules } from '../model/security-rules.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import { changedEntries, staleTagKeys } from '../model/tags.ts';
import { backendSecurityGroupName } from '../names.ts';
import { NotVisibleYetError, type Pass } from '../writes.ts';

/**
 * The load balancer's security groups: its own managed group (listener ports from the source ranges), the
 * cluster's backend group (the one source the Nodes' groups allow), and the groups the Service names.
 */

/** A Network Load Balancer takes at most five security groups. */
const MAX_LOAD_BALANCER_GROUPS = 5;

/** Marks the backend group; a group of that name without it (and our cluster tag) is someone else's. */
export const BACKEND_ROLE_TAG = 'serverless-ccm/security-group-role';

export interface LoadBalancerGroups {
  /** In order: the managed one or the user's, the backend group, the extra ones. */
  lbGroups: string[];
  backendGroupId: string;
}

/**
 * `readFrom`: where the groups of ours are read (default: one DescribeSecurityGroups for both); a Node-set
 * change's pass reads them from the batch (`ServiceBatch.securityGroupsNamed`).
 */
export async function ensureLoadBalancerGroups(
  spec: LoadBalancerSpec,
  pass: Pass,
  readFrom: (names: string[]) => Promise<SecurityGroup[]> = (names) =>
    pass.ec2.findSecurityGroups({ vpcId: pass.deps.vpcId, groupNames: names }),
): Promise<LoadBalancerGroups> {
  const { deps } = pass;
  const extra = await resolveGroups(spec.extraSecurityGroups, ANNOTATION.extraSecurityGroups, pass);
  const found = await readFrom(ourGroupNames(spec, deps.clusterName));
  const backendName = backendSecurityGroupName(deps.clusterName);
  const backendGroupId = await ensureBackendGroup(
    found.find((g) => g.groupName === backendName),
    pass,
  );
  const frontend = spec.userSecurityGroups
    ? await resolveGroups(spec.userSecurityGroups, ANNOTATION.securityGroups, pass)
    : [
        await ensureManagedGroup(
          spec,
          found.find((g) => g.groupName === spec.securityGroupName),
          pass,
        ),
      ];
  const lbGroups = [...new Set([...frontend, backendGroupId, ...extra])];
  if (lbGroups.length > MAX_LOAD_BALANCER_GROUPS) {
    throw new AnnotationError(
      `${lbGroups.length} security groups for one load balancer (${spec.userSecurityGroups ? ANNOTATION.securityGroups : 'the managed one'}, the cluster's backend group and ${ANNOTATION.extraSecurityGroups}); a Network Load Balancer takes ${MAX_LOAD_BALANCER_GROUPS}`,
    );
  }
  return { lbGroups, backendGroupId };
}

/** The names of the groups of ours a load balancer has: its managed group (unless the Service names its own), the backend group. */
export function ourGroupNames(
  spec: Pick<LoadBalancerSpec, 'securityGroupName' | 'userSecurityGroups'>,
  clusterName: string,
): string[] {
  const backendName = backendSecurityGroupName(clusterName);
  return spec.userSecurityGroups ? [backendName] : [spec.securityGroupName, backendName];
}

/** Tags of the cluster's backend group: owned by the cluster, and no Service (so no Service's cleanup takes it). */
function backendTags(clusterName: string): Record<string, string> {
  return { [clusterTagKey(clusterName)]: 'owned', [BACKEND_ROLE_TAG]: 'backend' };
}

/** The cluster's backend group's ID (the group found by its name, or made now). */
export async function ensureBackendGroup(existing: SecurityGroup | undefined, pass: Pass): Promise<string> {
  const { deps } = pass;
  const name = backendSecurityGroupName(deps.clusterName);
  if (existing) {
    if (existing.tags[clusterTagKey(deps.clusterName)] !== 'owned' || existing.tags[BACKEND_ROLE_TAG] !== 'backend') {
      throw new TerminalError(
        `security group ${name} (${existing.groupId}) exists but is not this cluster's backend group (tags ${clusterTagKey(deps.clusterName)}=owned, ${BACKEND_ROLE_TAG}=backend)`,
      );
    }
    return existing.groupId;
  }
  const created = await pass.ec2.createSecurityGroup({
    groupName: name,
    description: `Load balancers of cluster ${deps.clusterName}: the source the Nodes' security groups allow`,
    vpcId: deps.vpcId,
    tags: backendTags(deps.clusterName),
  });
  if (created === 'name-taken') {
    throw new NotVisibleYetError(`creating security group ${name}: EC2 says it exists but does not show it yet`);
  }
  return created.groupId;
}

/** What a load balancer's managed group is made from, whatever the kind of load balancer. */
export type ManagedGroupSpec = Pick<
  LoadBalancerSpec,
  'securityGroupName' | 'loadBalancerName' | 'serviceKey' | 'tags' | 'externalManagedTags' | 'managedIngress'
>;

export interface ManagedGroupOptions {
  /** The description it is created with. */
  description?: string;
  /**
   * A group of that name the cluster owns but that names no Service may be taken over: the reference
   * controller tagged its Classic ELB groups with the cluster alone.
   */
  adoptClusterOwned?: boolean;
}

/** The load balancer's own group: inbound listener ports from the source ranges, nothing else. */
export async function ensureManagedGroup(
  spec: ManagedGroupSpec,
  existing: SecurityGroup | undefined,
  pass: Pass,
  options: ManagedGroupOptions = {},
): Promise<string> {
  const { deps } = pass;
  let group = existing;
  const adoptable =
    options.adoptClusterOwned &&
    group?.tags[clusterTagKey(deps.clusterName)] === 'owned' &&
    group.tags['kubernetes.io/service-name'] === undefined;
  if (group && !adoptable && !ownedByService(group.tags, deps.clusterName, spec.serviceKey)) {
    throw new AnnotationError(
      `security group name ${spec.securityGroupName} is taken by ${group.tags['kubernetes.io/service-name'] ?? `${group.groupId}, which this cluster does not own`}`,
    );
  }
  if (!group) {
    const created = await pass.ec2.createSecurityGroup({
      groupName: spec.securityGroupName,
      description:
        options.description ??
        `Load balancer ${spec.loadBalancerName} of Service ${spec.serviceKey} (cluster ${deps.clusterName})`,
      vpcId: deps.vpcId,
      tags: spec.tags,
    });
    if (created === 'name-taken') {
      throw new NotVisibleYetError(
        `creating security group ${spec.securityGroupName}: EC2 says it exists but does not show it yet`,
      );
    }
    group = {
      groupId: created.groupId,
      groupName: spec.securityGroupName,
      vpcId: deps.vpcId,
      description: '',
      tags: spec.tags,
      ingress: [],
    };
  }
  // Every rule of the managed group is ours. Revoke first: it frees room under the rules-per-group quota.
  const plan = planRules(spec.managedIngress, group.ingress, () => true);
  if (plan.revoke.length > 0) await pass.ec2.revokeSecurityGroupIngress(group.groupId, plan.revoke);
  if (plan.authorize.length > 0) await pass.ec2.authorizeSecurityGroupIngress(group.groupId, plan.authorize);
  const tagsToAdd = changedEntries(spec.tags, group.tags);
  if (Object.keys(tagsToAdd).length > 0) await pass.ec2.createTags([group.groupId], tagsToAdd);
  const stale = staleTagKeys(spec.tags, group.tags, spec.externalManagedTags);
  if (stale.length > 0) await pass.ec2.deleteTags([group.groupId], stale);
  return group.groupId;
}

/** Security groups named in an annotation (IDs or names) as IDs; one that does not exist is the user's to fix. */
export async function resolveGroups(refs: readonly string[], annotation: string, pass: Pass): Promise<string[]> {
  if (refs.length === 0) return [];
  const { vpcId } = pass.deps;
  const ids = refs.filter((r) => /^sg-[0-9a-f]+$/.test(r));
  const names = refs.filter((r) => !ids.includes(r));
  const found = [
    ...(ids.length > 0 ? await pass.ec2.findSecurityGroups({ groupIds: ids }) : []),
    ...(names.length > 0 ? await pass.ec2.findSecurityGroups({ vpcId, groupNames: names }) : []),
  ];
  return refs.map((ref) => {
    const group = found.find((g) => g.groupId === ref || (g.groupName === ref && g.vpcId === vpcId));
    if (!group) throw new AnnotationError(`${annotation}: no security group "${ref}" in ${vpcId}`);
    return group.groupId;
  });
}
