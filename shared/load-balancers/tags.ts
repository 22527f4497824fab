import { clusterTagKey } from '../aws/ownership.ts';
import type { AwsPorts, OwnerTag } from './context.ts';
import type { LoadBalancerModel } from './model.ts';

// Attributes and tags as maps: what to set, what to remove, and whose a resource is.

/**
 * The wanted entries (attributes to set, tags to add or overwrite) whose current value differs; entries not
 * wanted are left alone.
 */
export function changedEntries(
  desired: Readonly<Record<string, string>>,
  current: Readonly<Record<string, string>>,
): Record<string, string> {
  return Object.fromEntries(Object.entries(desired).filter(([key, value]) => current[key] !== value));
}

/**
 * Tag keys to remove: everything the resource carries that is not wanted (an entry dropped from
 * `additional-resource-tags`), except AWS's own `aws:` tags, which cannot be removed, and the keys another
 * tool manages (SERVICE_EXTERNAL_MANAGED_TAGS). This is the AWS Load Balancer Controller's rule, so tagging
 * tools that write to these resources need to be listed there.
 */
export function staleTagKeys(
  desired: Readonly<Record<string, string>>,
  current: Readonly<Record<string, string>>,
  externalManaged: readonly string[],
): string[] {
  return Object.keys(current)
    .filter((key) => !(key in desired) && !key.toLowerCase().startsWith('aws:') && !externalManaged.includes(key))
    .sort();
}

/** Whether the tags say the resource is the owner's: our cluster's `owned` tag, and the owner tag's value. */
export function isOwnedBy(
  tags: Readonly<Record<string, string>> | undefined,
  clusterName: string,
  owner: OwnerTag,
): boolean {
  return tags?.[clusterTagKey(clusterName)] === 'owned' && tags[owner.key] === owner.value;
}

/** Adds the tags a load balancer, target group or listener lacks and removes those no longer wanted. */
export async function keepTagsInLine(
  arn: string,
  current: Readonly<Record<string, string>>,
  model: Pick<LoadBalancerModel, 'tags' | 'externalManagedTags'>,
  ports: Pick<AwsPorts, 'elbv2'>,
): Promise<void> {
  const tagsToAdd = changedEntries(model.tags, current);
  if (Object.keys(tagsToAdd).length > 0) await ports.elbv2.addTags(arn, tagsToAdd);
  const stale = staleTagKeys(model.tags, current, model.externalManagedTags);
  if (stale.length > 0) await ports.elbv2.removeTags(arn, stale);
}
