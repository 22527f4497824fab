import type { IngressesPort } from '../k8s/ingress-port.ts';
import type { Ingress, IngressClass, IngressClassParams } from '../k8s/ingress-types.ts';
import { type ClassLookup, classOf, type GroupId, groupOf, groupsOfFinalizers } from './membership.ts';

/**
 * What the Ingress controller, its garbage collector and the resync read to resolve classes: every IngressClass and
 * the IngressClassParams the classes name (one read each; none when the CustomResourceDefinition is not installed).
 */
export async function readClasses(
  source: Pick<IngressesPort, 'listIngressClasses' | 'getIngressClassParams'>,
): Promise<{ classes: IngressClass[]; params: Map<string, IngressClassParams> }> {
  const classes = await source.listIngressClasses();
  const params = new Map<string, IngressClassParams>();
  const named = new Set(classes.flatMap((c) => (c.spec?.parameters ? [c.spec.parameters.name] : [])));
  for (const name of [...named].sort()) {
    const found = await source.getIngressClassParams(name);
    if (found) params.set(name, found);
  }
  return { classes, params };
}

/**
 * The groups an Ingress names: its group when it is ours (its own implicit group when its group name is invalid,
 * whose pass says so on it), and every group its finalizers name (one it left, or whose class it can no longer use).
 */
export function groupsNamedBy(ingress: Ingress, lookup: ClassLookup): GroupId[] {
  const found = classOf(ingress, lookup);
  const grouped = found.managed === true ? groupOf(ingress, found.params) : undefined;
  const own: GroupId = {
    explicit: false,
    namespace: ingress.metadata.namespace ?? 'default',
    name: ingress.metadata.name,
  };
  return [...(grouped ? [grouped.ok ? grouped.group : own] : []), ...groupsOfFinalizers(ingress)];
}
