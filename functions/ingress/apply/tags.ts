import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { type GroupId, stackName } from '../../../shared/ingress/membership.ts';

/**
 * The tags that say which group's stack a resource belongs to: the AWS Load Balancer Controller's tracking tags
 * (so resources it made are found and adopted, and its tooling still reads ours), plus this project's cluster
 * ownership tag (so the garbage collector and IAM conditions treat them as every other load balancer of ours).
 */
export const TAG = {
  cluster: 'elbv2.k8s.aws/cluster',
  stack: 'ingress.k8s.aws/stack',
  resource: 'ingress.k8s.aws/resource',
  /** The reference's tag of older versions, still matched when finding resources. */
  legacyCluster: 'ingress.k8s.aws/cluster',
  /** Ours: the member whose rule it is (`namespace/name`), so a member that cannot be built keeps its rules. */
  member: 'serverless-ccm/ingress',
  /** Ours: when a load balancer was replaced by its successor (ISO time), for its grace period. */
  replacedAt: 'serverless-ccm/replaced-at',
} as const;

/** Resource IDs of the `ingress.k8s.aws/resource` tag. */
export const RESOURCE = {
  loadBalancer: 'LoadBalancer',
  managedSecurityGroup: 'ManagedLBSecurityGroup',
  listener: (port: number) => String(port),
} as const;

/** The tracking tags of one resource of the stack, with ours. */
export function stackTags(clusterName: string, group: GroupId, resource: string): Record<string, string> {
  return {
    [clusterTagKey(clusterName)]: 'owned',
    [TAG.cluster]: clusterName,
    [TAG.stack]: stackName(group),
    [TAG.resource]: resource,
  };
}

/**
 * Whether a resource is the stack's: made by us or by the reference controller for this cluster and group. The
 * cluster is matched by the reference's tag (or its legacy one), so what it made is ours to adopt.
 */
export function isStackResource(
  tags: Readonly<Record<string, string>> | undefined,
  clusterName: string,
  group: GroupId,
): boolean {
  if (!tags) return false;
  const cluster = tags[TAG.cluster] ?? tags[TAG.legacyCluster];
  return cluster === clusterName && tags[TAG.stack] === stackName(group);
}

/** The tags our ownership checks need on an adopted resource (the reference did not put them): none when present. */
export function adoptionTags(tags: Readonly<Record<string, string>>, clusterName: string): Record<string, string> {
  const wanted: Record<string, string> = { [clusterTagKey(clusterName)]: 'owned', [TAG.cluster]: clusterName };
  return Object.fromEntries(Object.entries(wanted).filter(([k, v]) => tags[k] !== v));
}
