/**
 * Cluster ownership tags (docs/reference.md "AWS tags"). `owned` resources die with the
 * cluster; `shared` ones are used but never deleted. The legacy `KubernetesCluster` tag is still read.
 */
export const LEGACY_CLUSTER_TAG = 'KubernetesCluster';

export function clusterTagKey(clusterName: string): string {
  return `kubernetes.io/cluster/${clusterName}`;
}

export type Ownership = 'owned' | 'shared' | 'none';

export function clusterOwnership(tags: Readonly<Record<string, string>>, clusterName: string): Ownership {
  const value = tags[clusterTagKey(clusterName)];
  if (value === 'owned') return 'owned';
  if (value !== undefined) return 'shared';
  if (tags[LEGACY_CLUSTER_TAG] === clusterName) return 'owned';
  return 'none';
}

export function isClusterResource(tags: Readonly<Record<string, string>>, clusterName: string): boolean {
  return clusterOwnership(tags, clusterName) !== 'none';
}

/** The tags every resource we create carries, so a collector can find what no object owns any more. */
export function ownershipTags(clusterName: string): Record<string, string> {
  return { [clusterTagKey(clusterName)]: 'owned' };
}
