import { TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import type { Cluster } from './cluster.ts';
import { endpointAddress, TGB_BINDINGS, TGB_NAMESPACE, type TgbTruth, targetPortOf } from './tgb-ops.ts';

/**
 * What the property checks of TargetGroupBindings at quiescence: each live binding's target group holds exactly the
 * targets wanted (the Service's ready endpoints on the named port, or the instances of the Nodes that may take
 * traffic on its node port), each deleted binding is gone (its finalizer let go) with its targets, and the user's
 * target groups are all still there. What is wanted is worked out here from the history and the cluster as it
 * stands, never with the controller's own code.
 */

const SCALE_DOWN_TAINT = 'ToBeDeletedByClusterAutoscaler';
const EXCLUDE_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** One of the target groups the history's bindings name (made by the user, never by the controller). */
export const isBoundTargetGroup = (name: string) => TGB_BINDINGS.some((b) => b.group === name);

/** The instances a binding with instance targets wants: Ready Nodes, not leaving, with a running instance. */
export function wantedInstances(c: Cluster): string[] {
  const ids: string[] = [];
  for (const node of c.kube.nodes.values()) {
    if (node.metadata.deletionTimestamp || EXCLUDE_LABEL in (node.metadata.labels ?? {})) continue;
    if (node.spec?.taints?.some((t) => t.key === SCALE_DOWN_TAINT)) continue;
    if (!node.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')) continue;
    const id = /^aws:\/\/\/[^/]+\/(i-[0-9a-f]+)$/.exec(node.spec?.providerID ?? '')?.[1];
    if (id && c.ec2.instances.get(id)?.state === 'running') ids.push(id);
  }
  return [...new Set(ids)].sort();
}

/** The targets (`id:port`) a live binding wants. */
export function wantedTargets(c: Cluster, truth: TgbTruth, b: number): string[] {
  const variant = truth.live.get(b)!;
  const port = targetPortOf(b, variant);
  const ids = TGB_BINDINGS[b]!.targetType === 'ip' ? truth.endpoints.map(endpointAddress) : wantedInstances(c);
  return ids.map((id) => `${id}:${port}`).sort();
}

/** A target group's targets (`id:port`), draining ones left out. */
export function registeredTargets(c: Cluster, arn: string): string[] {
  return c.elbv2
    .targetsOf(arn)
    .filter((t) => t.state !== 'draining')
    .map((t) => `${t.target.id}:${t.target.port}`)
    .sort();
}

/** The settled cluster's binding invariants. */
export function tgbViolations(c: Cluster, truth: TgbTruth): string[] {
  const out: string[] = [];
  for (const [b, group] of truth.groups) {
    const def = TGB_BINDINGS[b]!;
    if (!c.elbv2.targetGroups.has(group.arn)) {
      out.push(`target group ${group.name} of binding ${def.name} was deleted (it is the user's)`);
      continue;
    }
    const binding = c.bindings.bindings.get(`${TGB_NAMESPACE}/${def.name}`);
    const has = registeredTargets(c, group.arn);
    if (truth.deleted.has(b)) {
      if (binding) out.push(`binding ${def.name} deleted but still there (finalizer ${binding.metadata.finalizers})`);
      if (has.length > 0) out.push(`binding ${def.name} deleted but ${group.name} still holds ${has.join(', ')}`);
      continue;
    }
    if (!truth.live.has(b)) continue;
    if (!binding) {
      out.push(`binding ${def.name} lost`);
      continue;
    }
    if (!binding.metadata.finalizers?.includes(TGB_FINALIZER)) out.push(`binding ${def.name} has no finalizer`);
    const wanted = wantedTargets(c, truth, b);
    const missing = wanted.filter((t) => !has.includes(t));
    const leaked = has.filter((t) => !wanted.includes(t));
    if (missing.length > 0) out.push(`binding ${def.name}: ${group.name} misses ${missing.join(', ')}`);
    if (leaked.length > 0) out.push(`binding ${def.name}: ${group.name} leaks ${leaked.join(', ')}`);
    const ready = binding.status?.conditions?.find((x) => x.type === 'Ready');
    if (ready?.status !== 'True') out.push(`binding ${def.name} not Ready: ${ready?.reason} ${ready?.message}`);
  }
  return out;
}

/** The bindings as the projection compares them between runs (no times, uids or resourceVersions). */
export function tgbProjection(c: Cluster) {
  return [...c.bindings.bindings.values()]
    .map((x) => {
      const ready = x.status?.conditions?.find((k) => k.type === 'Ready');
      return {
        key: `${x.metadata.namespace}/${x.metadata.name}`,
        finalizers: [...(x.metadata.finalizers ?? [])].sort(),
        terminating: Boolean(x.metadata.deletionTimestamp),
        spec: { ...x.spec, targetGroupARN: x.spec.targetGroupARN ? 'set' : undefined },
        ready: ready ? `${ready.status} ${ready.reason} ${ready.message}` : undefined,
      };
    })
    .sort((x, y) => (x.key < y.key ? -1 : 1));
}
