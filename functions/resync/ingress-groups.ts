import { type ClassLookup, groupKey, stackName } from '../../shared/ingress/membership.ts';
import { groupsNamedBy, readClasses } from '../../shared/ingress/named-groups.ts';
import type { IngressesPort } from '../../shared/k8s/ingress-port.ts';
import type { KeyHint, KeyMessage } from '../../shared/queue/message.ts';

/** What the resync reads to name the cluster's IngressGroups. */
export type IngressGroupSources = Pick<IngressesPort, 'listIngresses' | 'listIngressClasses' | 'getIngressClassParams'>;

/**
 * Every IngressGroup of the cluster, each once: the group of each Ingress of ours (its class resolved as the Ingress
 * controller resolves it, shared/ingress/membership.ts), and every group an Ingress's finalizers name (a member that
 * left, or whose class can no longer be used, is still that group's to let go). The IngressClassParams are read by
 * the names the classes give (none when the CustomResourceDefinition is not installed). An IngressClassParams'
 * namespaceSelector is not applied (no Namespace is read): a group it empties still gets its key, which finds no
 * member, a key too many rather than one too few.
 */
export async function ingressGroupKeys(sources: IngressGroupSources, hint: KeyHint): Promise<KeyMessage[]> {
  const [ingresses, { classes, params }] = await Promise.all([sources.listIngresses(), readClasses(sources)]);
  const lookup: ClassLookup = { classes, params: (name) => params.get(name) };
  const keys = new Map<string, KeyMessage>();
  for (const ingress of ingresses) {
    const groups = groupsNamedBy(ingress, lookup);
    for (const group of groups) {
      const id = `${group.explicit ? 'explicit' : 'implicit'}:${stackName(group)}`;
      if (!keys.has(id)) keys.set(id, { ...groupKey(group), hint });
    }
  }
  return [...keys.values()];
}
