import type { TargetGroup } from '../../../shared/aws/elbv2-port.ts';
import { RetryableError } from '../../../shared/errors.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import { ownedByService } from '../annotations.ts';
import { AnnotationError } from '../deps.ts';
import { healthCheckMatches } from '../model/health-check.ts';
import type { DesiredTargetGroup, LoadBalancerSpec } from '../model/spec.ts';
import { changedEntries, staleTagKeys } from '../model/tags.ts';
import { deleteTargetGroup } from '../resources.ts';
import type { Pass } from '../writes.ts';
import type { ObservedLoadBalancer } from './observed.ts';

/**
 * Target groups: one per listener, found by name (or, for a load balancer adopted from another controller,
 * the compatible one its listener already uses), created or kept in line (health check, attributes, tags).
 * Usable by any Elastic Load Balancing v2 backend.
 */

export interface EnsuredGroup {
  group: TargetGroup;
  /** Created in this pass: it has no targets yet (no need to ask). */
  created: boolean;
}

/** The ensured target group of each desired one, by the desired name. */
export type EnsuredGroups = Map<string, EnsuredGroup>;

export async function ensureTargetGroups(
  spec: LoadBalancerSpec,
  observed: ObservedLoadBalancer,
  pass: Pass,
): Promise<EnsuredGroups> {
  const found = await existingTargetGroups(spec, observed, pass);
  const out: EnsuredGroups = new Map();
  for (const wanted of spec.targetGroups) {
    let group = found.get(wanted.name);
    let created = false;
    if (!group) {
      group = await createTargetGroup(wanted, spec, pass);
      created = true;
    } else {
      if (!healthCheckMatches(group.healthCheck, wanted.healthCheck)) {
        await pass.elbv2.modifyTargetGroupHealthCheck(group.arn, wanted.healthCheck);
      }
      await keepTagsInLine(group.arn, observed.tags.get(group.arn) ?? {}, spec, pass);
    }
    const current = await pass.elbv2.describeTargetGroupAttributes(group.arn);
    const changed = changedEntries(wanted.attributes, current);
    if (Object.keys(changed).length > 0) await pass.elbv2.modifyTargetGroupAttributes(group.arn, changed);
    out.set(wanted.name, { group, created });
  }
  return out;
}

/**
 * The existing target group for each desired one: by name among those attached, else the one the listener of
 * its port forwards to when it is this Service's and AWS could serve the desired one with it (same protocol,
 * target type and address family: a group another controller made, adopted with its load balancer), else by
 * name among the unattached (made in an earlier pass that crashed before its listener).
 */
async function existingTargetGroups(
  spec: LoadBalancerSpec,
  observed: ObservedLoadBalancer,
  pass: Pass,
): Promise<Map<string, TargetGroup>> {
  const { deps } = pass;
  const owned = (group: TargetGroup) => ownedByService(observed.tags.get(group.arn), deps.clusterName, spec.serviceKey);
  const byName = new Map(observed.attached.map((g) => [g.name, g]));
  const out = new Map<string, TargetGroup>();
  for (const wanted of spec.targetGroups) {
    const named = byName.get(wanted.name);
    const listener = observed.listeners.find((l) => l.port === wanted.listenerPort);
    const inUse = observed.attached.find((g) => g.arn === listener?.targetGroupArn);
    if (named) out.set(wanted.name, named);
    else if (inUse && owned(inUse) && compatible(inUse, wanted)) out.set(wanted.name, inUse);
  }
  const unattached = spec.targetGroups.filter((g) => !out.has(g.name)).map((g) => g.name);
  if (unattached.length > 0) {
    const found = await pass.elbv2.findTargetGroups(unattached);
    if (found.length > 0) {
      for (const [arn, t] of await pass.elbv2.describeTags(found.map((g) => g.arn))) observed.tags.set(arn, t);
    }
    for (const group of found) out.set(group.name, group);
  }
  for (const [name, group] of out) {
    if (!owned(group)) {
      throw new AnnotationError(
        `target group name ${name} is taken by ${observed.tags.get(group.arn)?.['kubernetes.io/service-name'] ?? 'a target group this cluster does not own'}`,
      );
    }
  }
  return out;
}

/** What AWS cannot change on a target group: a group that differs in these must be replaced. */
function compatible(group: TargetGroup, wanted: DesiredTargetGroup): boolean {
  return (
    group.protocol === wanted.protocol &&
    group.targetType === wanted.targetType &&
    group.ipAddressType === wanted.ipAddressType
  );
}

async function createTargetGroup(wanted: DesiredTargetGroup, spec: LoadBalancerSpec, pass: Pass): Promise<TargetGroup> {
  const result = await pass.elbv2.createTargetGroup({
    name: wanted.name,
    protocol: wanted.protocol,
    port: wanted.port,
    targetType: wanted.targetType,
    ...(wanted.ipAddressType === 'ipv6' ? { ipAddressType: 'ipv6' as const } : {}),
    vpcId: pass.deps.vpcId,
    healthCheck: wanted.healthCheck,
    tags: spec.tags,
  });
  if (result === 'name-taken') {
    throw new RetryableError(`creating target group ${wanted.name}: the name is in use with other settings`);
  }
  return result;
}

/** Adds the tags a load balancer, target group or listener lacks and removes those no longer wanted. */
export async function keepTagsInLine(
  arn: string,
  current: Readonly<Record<string, string>>,
  spec: Pick<LoadBalancerSpec, 'tags' | 'externalManagedTags'>,
  pass: Pass,
): Promise<void> {
  const tagsToAdd = changedEntries(spec.tags, current);
  if (Object.keys(tagsToAdd).length > 0) await pass.elbv2.addTags(arn, tagsToAdd);
  const stale = staleTagKeys(spec.tags, current, spec.externalManagedTags);
  if (stale.length > 0) await pass.elbv2.removeTags(arn, stale);
}

/**
 * Target groups the load balancer used before this pass and no longer uses (a port removed, a protocol
 * changed), once the listeners have moved off them. Answers how many must wait (a listener AWS has not let go of).
 */
export async function deleteStaleTargetGroups(
  spec: LoadBalancerSpec,
  observed: ObservedLoadBalancer,
  groups: EnsuredGroups,
  pass: Pass,
): Promise<number> {
  const inUse = new Set([...groups.values()].map((g) => g.group.arn));
  let pending = 0;
  for (const group of observed.attached) {
    if (inUse.has(group.arn)) continue;
    if (!ownedByService(observed.tags.get(group.arn), pass.deps.clusterName, spec.serviceKey)) continue;
    if ((await deleteTargetGroup(group, pass)) === 'in-use') pending++;
  }
  if (pending > 0) {
    pass.deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'ResourceInUse' }, pending);
  }
  return pending;
}
