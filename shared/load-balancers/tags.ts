// Attributes and tags as maps: what to set, and what to remove.

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
