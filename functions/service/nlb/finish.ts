import type { LoadBalancer, Target } from '../../../shared/aws/elbv2-port.ts';
import { deleteLoadBalancerAndListeners } from '../../../shared/load-balancers/listeners.ts';
import type { ObservedLoadBalancer } from '../../../shared/load-balancers/observed.ts';
import { deleteSecurityGroup } from '../../../shared/load-balancers/security-groups.ts';
import { deleteTargetGroup, type EnsuredGroups } from '../../../shared/load-balancers/target-groups.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import { ownedByService } from '../annotations.ts';
import { DEFAULT_REPLACEMENT_GRACE_SECONDS } from '../deps.ts';
import { EVENT, setIngressHostname } from '../kube.ts';
import { serviceAnnotations } from '../lbc/options.ts';
import { dropStackBindingsOnMove } from '../lbc/stack-bindings.ts';
import { type LoadBalancerSpec, loadBalancerSpec } from '../model/spec.ts';
import { REPLACED_AT_TAG, REPLACES_TAG, securityGroupName } from '../names.ts';
import type { Pass } from '../writes.ts';
import { revokeReferenceNodeRules } from './node-access.ts';
import { findOurs } from './replacement.ts';

export interface PassOutcome {
  spec: LoadBalancerSpec;
  observed: ObservedLoadBalancer;
  created: boolean;
  /** Another load balancer serves the Service meanwhile (the one being replaced). */
  serving: ObservedLoadBalancer | undefined;
  /** The one this load balancer replaced, serving out its grace after the status moved (replacement.ts). */
  retiring?: ObservedLoadBalancer;
  /** Its name when it is gone already, its target groups or security group perhaps not (a crashed pass). */
  retiredName?: string;
  /** The target groups this pass ensured, and the targets each should have, by desired name. */
  targetGroups: EnsuredGroups;
  targets: ReadonlyMap<string, readonly Target[]>;
  warning: string | undefined;
  /** Something waits for AWS (a target group still in use, zones on their way out). */
  pending: boolean;
}

/**
 * Status, the replaced load balancer, Events, and when to look again. While another load balancer serves, the
 * status keeps naming it until the new one serves; then the status moves, and the old one keeps serving for
 * SERVICE_REPLACEMENT_GRACE_SECONDS (clients still resolving its name, connections in flight) before it goes.
 * Every wait is a requeue, never a sleep.
 */
export async function finishPass(outcome: PassOutcome, pass: Pass): Promise<ReconcileResult | undefined> {
  const { spec, observed, serving, retiring, retiredName } = outcome;
  const { lb } = observed;
  const { deps } = pass;
  const replacing = serving !== undefined || pass.previous !== undefined;
  const waitsForSuccessor = replacing && !(await servesTraffic(outcome, pass));
  /** Seconds until the replaced load balancer goes, while it serves out its grace. */
  let graceLeft: number | undefined;
  if (!waitsForSuccessor) {
    const updated = await setIngressHostname(deps, pass.service, lb.dnsName);
    if (!updated) return undefined;
    pass.service = updated;
    if (serving) graceLeft = await startGrace(serving, lb, pass);
    if (pass.previous) await pass.previous.retire(lb.name);
    if (retiring) graceLeft = await endGrace(retiring, lb, pass);
    if (retiredName) await retireLeftovers(retiredName, pass);
    // It serves, and nothing it replaced is left: no longer anyone's successor (the garbage collector reads this tag).
    if ((replacing || retiring || retiredName) && graceLeft === undefined) {
      await pass.elbv2.removeTags(lb.arn, [REPLACES_TAG]);
    }
  }
  await announceChanges({ spec, lb, created: outcome.created, warning: outcome.warning }, pass);
  if (lb.state === 'provisioning' || waitsForSuccessor) return { requeueAfterSeconds: deps.provisioningRequeueSeconds };
  if (outcome.pending) return { requeueAfterSeconds: Math.min(deps.cleanupRequeueSeconds, graceLeft ?? Infinity) };
  // The queue caps one requeue at 12 hours (MAX_VISIBILITY_SECONDS): a longer grace is waited out in steps.
  if (graceLeft !== undefined) return { requeueAfterSeconds: graceLeft };
  return undefined;
}

/**
 * Whether the load balancer this pass built serves, so the status may move to it: `active`, and behind every
 * listener a healthy target, or no target wanted, or (when an NLB serves now) no healthy target behind the same port
 * of the one serving either, so nothing is lost by moving.
 */
async function servesTraffic(outcome: PassOutcome, pass: Pass): Promise<boolean> {
  const { spec, observed, serving, targetGroups, targets } = outcome;
  if (observed.lb.state !== 'active') return false;
  for (const listener of spec.listeners) {
    if ((targets.get(listener.targetGroupName) ?? []).length === 0) continue;
    const group = targetGroups.get(listener.targetGroupName)?.group;
    if (group && (await hasHealthyTarget(group.arn, pass))) continue;
    const before = serving?.listeners.find((l) => l.port === listener.port)?.targetGroupArn;
    if (serving && !(before && (await hasHealthyTarget(before, pass)))) continue;
    return false;
  }
  return true;
}

async function hasHealthyTarget(targetGroupArn: string, pass: Pass): Promise<boolean> {
  return (await pass.elbv2.describeTargetHealth(targetGroupArn)).some((t) => t.state === 'healthy');
}

function graceSeconds(pass: Pass): number {
  return pass.deps.replacementGraceSeconds ?? DEFAULT_REPLACEMENT_GRACE_SECONDS;
}

/**
 * The status has just moved from `old` to `successor`: `old` is marked with the time (REPLACED_AT_TAG), so the
 * grace counts from now whatever happens to this Lambda, and keeps serving until then. Answers the seconds left,
 * or undefined when there is no grace and it went at once.
 */
async function startGrace(old: ObservedLoadBalancer, successor: LoadBalancer, pass: Pass): Promise<number | undefined> {
  const grace = graceSeconds(pass);
  if (grace <= 0) {
    await retireServing(old, successor.name, pass, false, successor.securityGroups);
    return undefined;
  }
  await pass.elbv2.addTags(old.lb.arn, { [REPLACED_AT_TAG]: new Date(pass.deps.clock.now()).toISOString() });
  await pass.event(
    'Normal',
    EVENT.replacing,
    `Load balancer ${successor.name} serves the Service now; ${old.lb.name} keeps serving clients that still resolve its name for ${grace} s (SERVICE_REPLACEMENT_GRACE_SECONDS), then is deleted`,
  );
  return grace;
}

/**
 * A replaced load balancer serving out its grace: deleted once the grace since the status moved is over (seconds
 * left otherwise). One not marked yet (a crash right after the status moved) is marked now: its grace starts late,
 * never early.
 */
async function endGrace(old: ObservedLoadBalancer, successor: LoadBalancer, pass: Pass): Promise<number | undefined> {
  const grace = graceSeconds(pass);
  const now = pass.deps.clock.now();
  const movedAt = Date.parse(old.tags.get(old.lb.arn)?.[REPLACED_AT_TAG] ?? '');
  if (Number.isNaN(movedAt) && grace > 0) {
    await pass.elbv2.addTags(old.lb.arn, { [REPLACED_AT_TAG]: new Date(now).toISOString() });
    return grace;
  }
  // A time in the future (a clock that went back) never makes the grace longer than the setting.
  const left = Number.isNaN(movedAt) ? 0 : Math.min(grace, Math.ceil((movedAt + grace * 1000 - now) / 1000));
  if (left > 0) return left;
  await retireServing(old, successor.name, pass, false, successor.securityGroups);
  return undefined;
}

/**
 * The Events and log line of a pass that changed something (a new load balancer, new targets, a rule), none on a
 * quiet pass: `EnsuredLoadBalancer` after a configuration change, else `UpdatedLoadBalancer` for new targets, and
 * the Warning that no Node security group could be opened.
 */
export async function announceChanges(
  outcome: { spec: LoadBalancerSpec; lb: LoadBalancer; created: boolean; warning: string | undefined },
  pass: Pass,
): Promise<void> {
  const { spec, lb } = outcome;
  const { deps, changes } = pass;
  if (!changes.config && !changes.targets) return;
  if (outcome.warning) await pass.event('Warning', EVENT.noNodeSecurityGroup, outcome.warning);
  if (changes.config) {
    if (!outcome.created) deps.metrics.count(MetricName.LoadBalancersUpdated);
    await pass.event('Normal', EVENT.ensured, `Ensured load balancer ${lb.name} (${lb.dnsName})`);
  } else {
    await pass.event('Normal', EVENT.updated, `Updated load balancer ${lb.name} with new targets`);
  }
  deps.log.info('load balancer ensured', {
    serviceKey: spec.serviceKey,
    loadBalancer: lb.name,
    state: lb.state,
    created: outcome.created,
  });
}

/**
 * The load balancer a successor replaces: it, its target groups, its managed security group (unless its network
 * interfaces still hold it: then the garbage collector finishes the job) and, for one made without groups,
 * its rules on the Nodes' groups. `first`: it must go before its successor can have its name. `successorGroups`: the
 * successor's security groups, when known (a managed group it shares is kept).
 */
export async function retireServing(
  old: ObservedLoadBalancer,
  successor: string,
  pass: Pass,
  first: boolean,
  successorGroups?: readonly string[],
): Promise<void> {
  const { deps } = pass;
  const owned = (arn: string) => ownedByService(old.tags.get(arn), deps.clusterName, pass.serviceKey);
  await pass.event(
    first ? 'Warning' : 'Normal',
    EVENT.replacing,
    first
      ? `Deleting load balancer ${old.lb.name} before making it again: the name annotation pins the name, so traffic stops until the new one is active`
      : `Deleting load balancer ${old.lb.name}: the Service now uses ${successor}`,
  );
  await deleteLoadBalancerAndListeners(old.lb, pass);
  // Moving to the in-tree way: the reference's way's TargetGroupBindings go before its target groups.
  await dropStackBindingsOnMove(pass);
  for (const group of old.attached) if (owned(group.arn)) await deleteTargetGroup(group, pass);
  if (old.lb.securityGroups.length === 0) {
    await revokeReferenceNodeRules(old.lb.name, pass);
    return;
  }
  // Its successor of the same name uses the same managed group; so does any successor of the reference's naming (one
  // made in-tree before a move to the reference's way does not: the successor's groups tell).
  if (first || (pass.lbc && !successorGroups)) return;
  const managed = (await pass.ec2.findSecurityGroups({ groupIds: old.lb.securityGroups })).filter(
    (g) => ownedByService(g.tags, deps.clusterName, pass.serviceKey) && !successorGroups?.includes(g.groupId),
  );
  for (const group of managed) await deleteSecurityGroup(group.groupId, pass);
}

/**
 * What a replaced load balancer deleted by a pass that crashed right after may have left: the target groups of
 * its name and its managed security group (one its network interfaces still hold is the garbage collector's, as
 * after retireServing). With SERVICE_LBC_SERVICES, it may have been made the other way (the Service moved between the
 * in-tree way and the reference's): that way's names are looked for too.
 */
async function retireLeftovers(name: string, pass: Pass): Promise<void> {
  const lbc = pass.lbc === true;
  await dropStackBindingsOnMove(pass);
  await retireLeftoversOfWay(name, lbc, pass);
  if (pass.deps.lbcServices === true) await retireLeftoversOfWay(name, !lbc, pass);
}

async function retireLeftoversOfWay(name: string, lbc: boolean, pass: Pass): Promise<void> {
  const { deps } = pass;
  const owned = (tags: Readonly<Record<string, string>> | undefined) =>
    ownedByService(tags, deps.clusterName, pass.serviceKey);
  const { options } = serviceAnnotations(pass.service, lbc);
  const built = loadBalancerSpec(pass.service, options, { clusterName: deps.clusterName, loadBalancerName: name });
  const names = built.ok ? built.spec.targetGroups.map((g) => g.name) : [];
  const groups = names.length > 0 ? await pass.elbv2.findTargetGroups(names) : [];
  const tags = groups.length > 0 ? await pass.elbv2.describeTags(groups.map((g) => g.arn)) : new Map();
  for (const group of groups) if (owned(tags.get(group.arn))) await deleteTargetGroup(group, pass);
  // The reference's managed group is named for the Service, not the load balancer: a successor made its way holds it.
  if (options.lbc && pass.lbc) return;
  const groupName = options.lbc && built.ok ? built.spec.securityGroupName : securityGroupName(name);
  const managed = await pass.ec2.findSecurityGroups({ vpcId: deps.vpcId, groupNames: [groupName] });
  for (const group of managed) if (owned(group.tags)) await deleteSecurityGroup(group.groupId, pass);
}

/** Retires the Network Load Balancer of that name when it is the Service's: another kind has taken over. */
export async function retireNetworkLoadBalancer(pass: Pass, name: string, successor: string): Promise<void> {
  const observed = await findOurs(name, pass, false);
  if (observed) await retireServing(observed, successor, pass, false);
}
