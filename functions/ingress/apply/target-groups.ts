import { TAGS_ARNS_PER_CALL, type Target, type TargetGroup } from '../../../shared/aws/elbv2-port.ts';
import { RetryableError } from '../../../shared/errors.ts';
import { classifyKubernetesError } from '../../../shared/k8s/errors.ts';
import { healthCheckMatches } from '../../../shared/load-balancers/health-check.ts';
import type { DesiredTargetGroup } from '../../../shared/load-balancers/model.ts';
import { addNodeRules, nodeRules, targetNodeGroups } from '../../../shared/load-balancers/node-rules.ts';
import { registerByDifference } from '../../../shared/load-balancers/registration.ts';
import { changedEntries, keepTagsInLine } from '../../../shared/load-balancers/tags.ts';
import {
  eligibleNodes,
  instanceIdsOf,
  instanceTargets,
  ipTargets,
  withWaitingTargets,
} from '../../../shared/load-balancers/targets.ts';
import type { ModelTargetGroup } from '../model/types.ts';
import type { GroupPass } from './pass.ts';
import { alternateTargetGroupName } from './replacement.ts';
import { GateReads } from './stack-bindings.ts';
import { adoptionTags, isStackResource, stackTags, TAG } from './tags.ts';

/**
 * The group's target groups, one per (Ingress, Service, service port): found by the reference's name (so those it
 * made are found) among the load balancer's and then among all, adopted when their tracking tags say they are this
 * group's, created when missing, kept in line (health check, attributes, tags); then their targets, by
 * difference, and the Node rules that let the load balancer's backend group reach them.
 */

/** The shared modules' view of one of our target groups (targets and Node rules are computed the same way). */
export function asDesired(group: ModelTargetGroup): DesiredTargetGroup {
  return {
    name: group.name,
    listenerPort: 0,
    protocol: group.protocol,
    port: group.port,
    targetType: group.targetType,
    ipAddressType: group.ipAddressType,
    healthCheck: group.healthCheck,
    attributes: group.attributes,
    servicePorts: [group.service.port],
  };
}

export interface StackTargetGroups {
  /** The group's target groups, by resource ID. */
  wanted: Map<string, TargetGroup>;
  /** Target groups of the stack the load balancer had before this pass (by ARN), with their tags. */
  attached: TargetGroup[];
  tags: Map<string, Record<string, string>>;
}

export async function ensureTargetGroups(
  groups: readonly ModelTargetGroup[],
  lbArn: string | undefined,
  pass: GroupPass,
): Promise<StackTargetGroups> {
  const { elbv2 } = pass.deps;
  const attached = lbArn ? await elbv2.describeTargetGroupsOfLoadBalancer(lbArn) : [];
  const names = (model: ModelTargetGroup) => [model.name, alternateTargetGroupName(model.name)];
  const attachedByName = new Map(attached.map((g) => [g.name, g]));
  const onThis = (model: ModelTargetGroup) =>
    names(model)
      .map((n) => attachedByName.get(n))
      .find((g) => g);
  const missing = groups.filter((g) => !onThis(g)).flatMap(names);
  const elsewhere = missing.length > 0 ? await elbv2.findTargetGroups(missing) : [];
  const byName = new Map(elsewhere.map((g) => [g.name, g]));
  const tags = await tagsOf(
    [...attached, ...elsewhere].map((g) => g.arn),
    pass,
  );
  const wanted = new Map<string, TargetGroup>();
  for (const model of groups) {
    const found =
      onThis(model) ??
      names(model)
        .map((n) => byName.get(n))
        .find((g) => g && free(g, lbArn));
    if (found) {
      wanted.set(model.resourceId, await keepInLine(found, model, tags, pass));
      continue;
    }
    // A target group serves one Application Load Balancer: while another load balancer of the group (one being
    // replaced) holds the name, this one's takes the alternate name (replacement.ts).
    const taken = byName.get(model.name);
    wanted.set(model.resourceId, await create(model, taken ? alternateTargetGroupName(model.name) : model.name, pass));
  }
  return { wanted, attached, tags };
}

/** Not attached to another load balancer. */
function free(group: TargetGroup, lbArn: string | undefined): boolean {
  return group.loadBalancerArns.every((arn) => arn === lbArn);
}

/** Tags by ARN, 20 ARNs a call. */
export async function tagsOf(arns: readonly string[], pass: GroupPass): Promise<Map<string, Record<string, string>>> {
  const out = new Map<string, Record<string, string>>();
  for (let i = 0; i < arns.length; i += TAGS_ARNS_PER_CALL) {
    for (const [arn, t] of await pass.deps.elbv2.describeTags(arns.slice(i, i + TAGS_ARNS_PER_CALL))) out.set(arn, t);
  }
  return out;
}

function groupTags(model: ModelTargetGroup, pass: GroupPass): Record<string, string> {
  return { ...model.tags, ...stackTags(pass.deps.clusterName, pass.group, model.resourceId) };
}

async function keepInLine(
  group: TargetGroup,
  model: ModelTargetGroup,
  tags: Map<string, Record<string, string>>,
  pass: GroupPass,
): Promise<TargetGroup> {
  const { elbv2, clusterName } = pass.deps;
  const current = tags.get(group.arn) ?? {};
  if (!isStackResource(current, clusterName, pass.group)) {
    throw pass.ctx.userError(
      `target group name ${group.name} is taken by ${current[TAG.stack] ?? 'a target group this group does not own'}`,
    );
  }
  const adopt = adoptionTags(current, clusterName);
  if (Object.keys(adopt).length > 0) await elbv2.addTags(group.arn, adopt);
  if (!healthCheckMatches(group.healthCheck, model.healthCheck)) {
    await elbv2.modifyTargetGroupHealthCheck(group.arn, model.healthCheck);
  }
  await keepTagsInLine(
    group.arn,
    { ...current, ...adopt },
    { tags: groupTags(model, pass), externalManagedTags: pass.deps.externalManagedTags },
    pass.ctx,
  );
  if (Object.keys(model.attributes).length > 0) {
    const changed = changedEntries(model.attributes, await elbv2.describeTargetGroupAttributes(group.arn));
    if (Object.keys(changed).length > 0) await elbv2.modifyTargetGroupAttributes(group.arn, changed);
  }
  return group;
}

async function create(model: ModelTargetGroup, name: string, pass: GroupPass): Promise<TargetGroup> {
  const { elbv2 } = pass.deps;
  const result = await elbv2.createTargetGroup({
    name,
    protocol: model.protocol,
    port: model.port,
    targetType: model.targetType,
    ...(model.ipAddressType === 'ipv6' ? { ipAddressType: 'ipv6' as const } : {}),
    protocolVersion: model.protocolVersion,
    vpcId: pass.deps.vpcId,
    healthCheck: model.healthCheck,
    tags: groupTags(model, pass),
  });
  if (result === 'name-taken') {
    throw new RetryableError(`creating target group ${name}: the name is in use with other settings`);
  }
  if (Object.keys(model.attributes).length > 0) {
    await elbv2.modifyTargetGroupAttributes(result.arn, model.attributes);
  }
  return result;
}

/**
 * Every target group's wanted targets, by resource ID: eligible Nodes' running instances, or ready endpoints; with
 * stack bindings, also the endpoints whose Pod waits only for its target group's readiness gate (stack-bindings.ts).
 */
export async function wantedTargets(
  groups: readonly ModelTargetGroup[],
  pass: GroupPass,
): Promise<Map<string, Target[]>> {
  const out = new Map<string, Target[]>();
  let instanceIds: string[] | undefined;
  const gated = pass.deps.stackBindings ? new GateReads(pass.deps.stackBindings, pass) : undefined;
  for (const group of groups) {
    if (group.targetType === 'ip') {
      const { namespace, name } = group.service;
      let slices: Awaited<ReturnType<typeof pass.ctx.endpointSlices>>;
      try {
        slices = await pass.ctx.endpointSlices(namespace, name);
      } catch (err) {
        throw classifyKubernetesError(`listing endpoint slices of ${namespace}/${name}`, err);
      }
      const ready = ipTargets(asDesired(group), slices);
      out.set(group.resourceId, gated ? withWaitingTargets(ready, await gated.targets(group, slices)) : ready);
      continue;
    }
    if (!instanceIds) {
      const instances = await pass.reads.instances();
      // RegisterTargets refuses an instance that is not running, failing the whole call: leave those out.
      instanceIds = instanceIdsOf(eligibleNodes(await pass.reads.nodes())).filter(
        (id) => instances.get(id)?.state === 'running',
      );
    }
    out.set(group.resourceId, instanceTargets(asDesired(group), instanceIds));
  }
  return out;
}

/**
 * Registers what is missing and deregisters what is no longer wanted, per target group, through the registration
 * path every front end shares (shared/load-balancers/registration.ts); answers the writes.
 */
export async function ensureTargets(
  groups: readonly ModelTargetGroup[],
  ensured: StackTargetGroups,
  targets: ReadonlyMap<string, Target[]>,
  created: ReadonlySet<string>,
  pass: GroupPass,
): Promise<number> {
  let writes = 0;
  for (const model of groups) {
    const group = ensured.wanted.get(model.resourceId)!;
    const wanted = targets.get(model.resourceId) ?? [];
    writes += (
      await registerByDifference({ elbv2: pass.deps.elbv2 }, group.arn, wanted, { created: created.has(group.arn) })
    ).writes;
  }
  return writes;
}

/**
 * Rules on the target Nodes' cluster-tagged groups, from the backend group, on the target and health check ports
 * (shared with every load balancer of the cluster: only what is missing is added). False when there are target
 * Nodes but none has such a group: nothing lets the load balancer in, which the pass says.
 */
export async function ensureNodeAccess(
  groups: readonly ModelTargetGroup[],
  targets: ReadonlyMap<string, Target[]>,
  backendGroupId: string,
  pass: GroupPass,
): Promise<boolean> {
  if (groups.length === 0) return true;
  const desired = groups.map(asDesired);
  const byName = new Map(groups.map((g) => [g.name, targets.get(g.resourceId) ?? []]));
  const { groups: nodeGroups, nodes } = await targetNodeGroups({}, pass.ctx);
  if (nodeGroups.length === 0) return nodes === 0;
  const rules = nodeRules(
    { identity: { clusterName: pass.deps.clusterName, namespace: '', name: '' }, targetGroups: desired },
    byName,
    backendGroupId,
    pass.deps.nodePortRange,
  );
  await addNodeRules(nodeGroups, rules, pass.ctx);
  return true;
}
