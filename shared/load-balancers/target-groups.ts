import type { TargetGroup } from '../aws/elbv2-port.ts';
import { RetryableError } from '../errors.ts';
import { MetricName } from '../observability/metrics.ts';
import type { AwsPorts, LoadBalancerContext } from './context.ts';
import { codeOf } from './errors.ts';
import { healthCheckMatches } from './health-check.ts';
import type { DesiredTargetGroup, Elbv2LoadBalancerModel } from './model.ts';
import type { ObservedLoadBalancer } from './observed.ts';
import { changedEntries, isOwnedBy, keepTagsInLine } from './tags.ts';

/**
 * Target groups: one per listener, found by name (or, for a load balancer adopted from another controller,
 * the compatible one its listener already uses), created or kept in line (health check, attributes, tags).
 * Usable by any Elastic Load Balancing v2 front end.
 */

export interface EnsuredGroup {
  group: TargetGroup;
  /** Created in this pass: it has no targets yet (no need to ask). */
  created: boolean;
}

/** The ensured target group of each desired one, by the desired name. */
export type EnsuredGroups = Map<string, EnsuredGroup>;

/** What the target groups are made from. */
export type TargetGroupModel = Pick<Elbv2LoadBalancerModel, 'targetGroups' | 'tags' | 'externalManagedTags'>;

export async function ensureTargetGroups(
  model: TargetGroupModel,
  observed: ObservedLoadBalancer,
  ctx: LoadBalancerContext,
): Promise<EnsuredGroups> {
  const found = await existingTargetGroups(model, observed, ctx);
  const out: EnsuredGroups = new Map();
  for (const wanted of model.targetGroups) {
    let group = found.get(wanted.name);
    let created = false;
    if (!group) {
      group = await createTargetGroup(wanted, model, ctx);
      created = true;
    } else {
      if (!healthCheckMatches(group.healthCheck, wanted.healthCheck)) {
        await ctx.elbv2.modifyTargetGroupHealthCheck(group.arn, wanted.healthCheck);
      }
      await keepTagsInLine(group.arn, observed.tags.get(group.arn) ?? {}, tagsOf(model, wanted), ctx);
    }
    const current = await ctx.elbv2.describeTargetGroupAttributes(group.arn);
    const changed = changedEntries(wanted.attributes, current);
    if (Object.keys(changed).length > 0) await ctx.elbv2.modifyTargetGroupAttributes(group.arn, changed);
    out.set(wanted.name, { group, created });
  }
  return out;
}

/**
 * The existing target group for each desired one: by name among those attached, else the one the listener of
 * its port forwards to when it is the owner's and AWS could serve the desired one with it (same protocol,
 * target type and address family: a group another controller made, adopted with its load balancer), else by
 * name among the unattached (made in an earlier pass that crashed before its listener).
 */
async function existingTargetGroups(
  model: TargetGroupModel,
  observed: ObservedLoadBalancer,
  ctx: LoadBalancerContext,
): Promise<Map<string, TargetGroup>> {
  const owned = (group: TargetGroup) => isOwnedBy(observed.tags.get(group.arn), ctx.clusterName, ctx.owner);
  const byName = new Map(observed.attached.map((g) => [g.name, g]));
  const out = new Map<string, TargetGroup>();
  for (const wanted of model.targetGroups) {
    const named = byName.get(wanted.name);
    const listener = observed.listeners.find((l) => l.port === wanted.listenerPort);
    const inUse = observed.attached.find((g) => g.arn === listener?.targetGroupArn);
    if (named) out.set(wanted.name, named);
    else if (inUse && owned(inUse) && compatible(inUse, wanted)) out.set(wanted.name, inUse);
  }
  const unattached = model.targetGroups.filter((g) => !out.has(g.name)).map((g) => g.name);
  if (unattached.length > 0) {
    const found = await ctx.elbv2.findTargetGroups(unattached);
    if (found.length > 0) {
      for (const [arn, t] of await ctx.elbv2.describeTags(found.map((g) => g.arn))) observed.tags.set(arn, t);
    }
    for (const group of found) out.set(group.name, group);
  }
  for (const [name, group] of out) {
    if (!owned(group)) {
      throw ctx.userError(
        `target group name ${name} is taken by ${observed.tags.get(group.arn)?.[ctx.owner.key] ?? 'a target group this cluster does not own'}`,
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

async function createTargetGroup(
  wanted: DesiredTargetGroup,
  model: TargetGroupModel,
  ctx: LoadBalancerContext,
): Promise<TargetGroup> {
  const result = await ctx.elbv2.createTargetGroup({
    name: wanted.name,
    protocol: wanted.protocol,
    port: wanted.port,
    targetType: wanted.targetType,
    ...(wanted.ipAddressType === 'ipv6' ? { ipAddressType: 'ipv6' as const } : {}),
    vpcId: ctx.vpcId,
    healthCheck: wanted.healthCheck,
    tags: tagsOf(model, wanted).tags,
  });
  if (result === 'name-taken') {
    throw new RetryableError(`creating target group ${wanted.name}: the name is in use with other settings`);
  }
  return result;
}

/** The model's tags with the group's own over them. */
function tagsOf(
  model: TargetGroupModel,
  wanted: DesiredTargetGroup,
): Pick<TargetGroupModel, 'tags' | 'externalManagedTags'> {
  return { tags: { ...model.tags, ...wanted.tags }, externalManagedTags: model.externalManagedTags };
}

/** `in-use`: a listener still forwards to it (or AWS has not caught up with one just deleted). */
export async function deleteTargetGroup(group: TargetGroup, ports: AwsPorts): Promise<'deleted' | 'in-use'> {
  try {
    await ports.elbv2.deleteTargetGroup(group.arn);
    return 'deleted';
  } catch (err) {
    if (codeOf(err) === 'ResourceInUse') return 'in-use';
    throw err;
  }
}

/**
 * Target groups the load balancer used before this pass and no longer uses (a port removed, a protocol
 * changed), once the listeners have moved off them. Answers how many must wait (a listener AWS has not let go of).
 */
export async function deleteStaleTargetGroups(
  observed: ObservedLoadBalancer,
  groups: EnsuredGroups,
  ctx: LoadBalancerContext,
): Promise<number> {
  const inUse = new Set([...groups.values()].map((g) => g.group.arn));
  let pending = 0;
  for (const group of observed.attached) {
    if (inUse.has(group.arn)) continue;
    if (!isOwnedBy(observed.tags.get(group.arn), ctx.clusterName, ctx.owner)) continue;
    if ((await deleteTargetGroup(group, ctx)) === 'in-use') pending++;
  }
  if (pending > 0) {
    ctx.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'ResourceInUse' }, pending);
  }
  return pending;
}
