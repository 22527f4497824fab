import type { SecurityGroup } from '../../../shared/aws/ec2-port.ts';
import type { ClassicLoadBalancer, ElbPort } from '../../../shared/aws/elb-port.ts';
import { TerminalError } from '../../../shared/errors.ts';
import { NotVisibleYetError } from '../../../shared/load-balancers/errors.ts';
import { addNodeRules, backendRulesForPorts, batchNodeGroups } from '../../../shared/load-balancers/node-rules.ts';
import {
  backendSecurityGroupName,
  ensureBackendGroup,
  ensureManagedGroup,
  MAX_LOAD_BALANCER_GROUPS,
  ourGroupNames,
  resolveGroups,
} from '../../../shared/load-balancers/security-groups.ts';
import { sameMembers } from '../../../shared/load-balancers/security-rules.ts';
import { wantedSubnets } from '../../../shared/load-balancers/subnets.ts';
import { changedEntries, staleTagKeys } from '../../../shared/load-balancers/tags.ts';
import { eligibleNodes, instanceIdsOf } from '../../../shared/load-balancers/targets.ts';
import { ANNOTATION } from '../annotations.ts';
import { resourceContext } from '../context.ts';
import { AnnotationError } from '../deps.ts';
import type { Pass } from '../writes.ts';
import type { ClassicSpec } from './model.ts';
import { PROXY_PROTOCOL_POLICY, sslNegotiationPolicyName } from './model.ts';
import {
  type ClassicListenerPlan,
  classicNodeRule,
  groupsMissingRule,
  listenersInLine,
  planBackendPolicies,
  planClassicListeners,
  planClassicSubnets,
  planListenerPolicies,
  sameAttributes,
  sameHealthCheck,
} from './plans.ts';

/**
 * One Classic ELB made or kept in line: security groups first (it is created with them), then the load
 * balancer, its listeners, subnets, health check, attributes, policies, tags, instances, and the rule that
 * lets its group reach the Nodes.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-security-groups.html
 */

export function elbOf(pass: Pass): ElbPort {
  if (!pass.elb)
    throw new TerminalError('this Service has a Classic ELB, and this deployment has no Classic ELB access');
  return pass.elb;
}

/**
 * Its groups: the managed one (or the user's), then, for one this controller made, the cluster's backend group
 * (the one source the Nodes' groups allow, so the Nodes' 60-rule quota is never reached however many load
 * balancers there are), then the extra ones. A Classic ELB the reference made keeps its way: its first group
 * is allowed every protocol on the Nodes' groups.
 */
async function ensureClassicGroups(
  spec: ClassicSpec,
  existing: ClassicLoadBalancer | undefined,
  pass: Pass,
  read?: SecurityGroup[],
): Promise<{ groups: string[]; backend?: string }> {
  const ctx = resourceContext(pass);
  const extra = await resolveGroups(spec.extraSecurityGroups, ANNOTATION.extraSecurityGroups, ctx);
  const backendName = backendSecurityGroupName(pass.deps.clusterName);
  // One DescribeSecurityGroups finds both groups of ours (or the batch's one read of them: `read`).
  const names = ourGroupNames(spec, pass.deps.clusterName);
  const found = read ?? (await pass.ec2.findSecurityGroups({ vpcId: pass.deps.vpcId, groupNames: names }));
  const foundBackend = found.find((g) => g.groupName === backendName);
  let front: string[];
  if (spec.userSecurityGroups) {
    front = await resolveGroups(spec.userSecurityGroups, ANNOTATION.securityGroups, ctx);
  } else {
    const groupId = await ensureManagedGroup(
      spec,
      found.find((g) => g.groupName === spec.securityGroupName),
      ctx,
      {
        description: `Security group for Kubernetes ELB ${spec.loadBalancerName} (${spec.serviceKey})`,
        adoptClusterOwned: true,
      },
    );
    front = [groupId];
  }
  const referenceWay = existing !== undefined && !existing.securityGroups.includes(foundBackend?.groupId ?? '');
  const backend = referenceWay ? undefined : await ensureBackendGroup(foundBackend, ctx);
  const groups = [...new Set([...front, ...(backend ? [backend] : []), ...extra])];
  if (groups.length > MAX_LOAD_BALANCER_GROUPS) {
    throw new AnnotationError(
      `${groups.length} security groups for one Classic ELB; it takes ${MAX_LOAD_BALANCER_GROUPS}`,
    );
  }
  return backend ? { groups, backend } : { groups };
}

export interface EnsuredClassic {
  lb: ClassicLoadBalancer;
  created: boolean;
  /** The group the Nodes' groups allow. */
  sourceGroupId: string;
}

export async function ensureClassicLoadBalancer(
  spec: ClassicSpec,
  existing: ClassicLoadBalancer | undefined,
  tags: Record<string, string>,
  currentTags: Record<string, string>,
  pass: Pass,
): Promise<EnsuredClassic> {
  const elb = elbOf(pass);
  const { groups, backend } = await ensureClassicGroups(spec, existing, pass);
  let lb = existing;
  if (!lb) {
    const subnets = (await wantedSubnets({ ...spec, ipAddressType: 'ipv4' }, resourceContext(pass))).map(
      (m) => m.subnetId,
    );
    const result = await elb.createLoadBalancer({
      name: spec.loadBalancerName,
      scheme: spec.scheme,
      subnets,
      securityGroups: groups,
      listeners: spec.listeners,
      tags,
    });
    if (result === 'name-taken') {
      throw new NotVisibleYetError(
        `creating Classic ELB ${spec.loadBalancerName}: the name is in use with other settings`,
      );
    }
    lb = await elb.findLoadBalancer(spec.loadBalancerName);
    if (!lb) throw new NotVisibleYetError(`Classic ELB ${spec.loadBalancerName} was created but is not visible yet`);
  } else {
    await keepInLine(spec, lb, groups, tags, currentTags, pass);
  }
  await keepSettingsInLine(spec, lb, pass);
  await ensureInstances(spec, lb, pass);
  await ensureNodeAccess(spec, { groups, backend }, pass);
  return { lb, created: !existing, sourceGroupId: backend ?? groups[0]! };
}

/**
 * What a Node-set change's pass does to a Classic ELB the quick look found in line (functions/service/resync-check.ts):
 * its instances, and the rules that let it reach the Nodes' groups, as the full pass makes them. Its groups of
 * ours come from the batch's one read (`ServiceBatch.securityGroupsNamed`) where it has them: its managed group
 * only this Service's pass makes, and the cluster's backend group, when the read is older than an earlier pass
 * of the batch that made it, is only missing for a load balancer that does not have it attached (so its groups
 * differ below). False, having written at most a security group the full pass would make too, when its groups are
 * not the ones the full pass would give it: the full pass then follows.
 */
export async function ensureInstancesAndNodeAccess(
  spec: ClassicSpec,
  lb: ClassicLoadBalancer,
  pass: Pass,
): Promise<boolean> {
  const read = await pass.batch.securityGroupsNamed(ourGroupNames(spec, pass.deps.clusterName));
  const access = await ensureClassicGroups(spec, lb, pass, read);
  if (!sameMembers(access.groups, lb.securityGroups)) return false;
  await ensureInstances(spec, lb, pass);
  await ensureNodeAccess(spec, access, pass);
  return true;
}

/** The rules on the target Nodes' groups: from the backend group, or (made by the reference) from the first group. */
async function ensureNodeAccess(
  spec: ClassicSpec,
  { groups, backend }: { groups: string[]; backend?: string },
  pass: Pass,
): Promise<void> {
  if (backend) await ensureBackendRules(spec, backend, pass);
  else await ensureNodeRule(spec, groups[0]!, pass);
}

/** What CreateLoadBalancer set, on one made before: listeners, subnets, groups, tags. */
async function keepInLine(
  spec: ClassicSpec,
  lb: ClassicLoadBalancer,
  groups: readonly string[],
  tags: Record<string, string>,
  currentTags: Record<string, string>,
  pass: Pass,
): Promise<void> {
  const elb = elbOf(pass);
  const listeners = planClassicListeners(spec.listeners, lb.listeners);
  await applyListeners(lb.name, listeners, pass);
  const requested = spec.requestedSubnets
    ? (await wantedSubnets({ ...spec, ipAddressType: 'ipv4' }, resourceContext(pass))).map((m) => m.subnetId)
    : undefined;
  const subnets = planClassicSubnets(requested, lb.subnets);
  // Attach first: a load balancer is never left without a subnet.
  if (subnets.attach.length > 0) await elb.attachSubnets(lb.name, subnets.attach);
  if (subnets.detach.length > 0) await elb.detachSubnets(lb.name, subnets.detach);
  if (!sameMembers(groups, lb.securityGroups)) await elb.applySecurityGroups(lb.name, groups);
  const add = changedEntries(tags, currentTags);
  if (Object.keys(add).length > 0) await elb.addTags(lb.name, add);
  const stale = staleTagKeys(tags, currentTags, spec.externalManagedTags);
  if (stale.length > 0) await elb.removeTags(lb.name, stale);
  if (!listenersInLine(listeners)) {
    const fresh = await elb.findLoadBalancer(lb.name);
    if (fresh) Object.assign(lb, fresh);
  }
}

/**
 * The listener plan applied so that no port loses its listener to one AWS will not take. The spec's listeners are
 * ones AWS accepts (model.ts refuses the others before anything is written); what only AWS can tell (a certificate
 * it does not have) is found by the first call that names it: new ports first, in one call, before anything is
 * deleted; then each changed port on its own, its old listener (and that listener's policies) put back at once if
 * AWS refuses the new one; ports no longer wanted last.
 */
async function applyListeners(name: string, plan: ClassicListenerPlan, pass: Pass): Promise<void> {
  const elb = elbOf(pass);
  if (plan.add.length > 0) await elb.createListeners(name, plan.add);
  for (const { from, to } of plan.replace) {
    await elb.deleteListeners(name, [from.loadBalancerPort]);
    try {
      await elb.createListeners(name, [to]);
    } catch (err) {
      const { policyNames, ...previous } = from;
      await elb.createListeners(name, [previous]);
      if (policyNames?.length) await elb.setListenerPolicies(name, from.loadBalancerPort, policyNames);
      throw err;
    }
  }
  if (plan.remove.length > 0) await elb.deleteListeners(name, plan.remove);
}

/** Health check, attributes and policies: read back each pass, written only when they differ. */
async function keepSettingsInLine(spec: ClassicSpec, lb: ClassicLoadBalancer, pass: Pass): Promise<void> {
  const elb = elbOf(pass);
  if (!sameHealthCheck(lb.healthCheck, spec.healthCheck)) await elb.configureHealthCheck(lb.name, spec.healthCheck);
  const attributes = await elb.describeAttributes(lb.name);
  if (!sameAttributes(attributes, spec.attributes)) await elb.modifyAttributes(lb.name, spec.attributes);
  const { proxyProtocol, sslNegotiation } = spec.policies;
  const wanted = [proxyProtocol, sslNegotiation].filter((p) => p !== undefined);
  const existing =
    wanted.length > 0 ? new Set((await elb.describePolicies(lb.name)).map((p) => p.policyName)) : undefined;
  for (const policy of wanted) if (!existing?.has(policy.policyName)) await elb.createPolicy(lb.name, policy);
  const instancePorts = [...new Set(spec.listeners.map((l) => l.instancePort))];
  const backends = planBackendPolicies(lb, instancePorts, proxyProtocol !== undefined);
  for (const change of backends) await elb.setBackendPolicies(lb.name, change.instancePort, change.policyNames);
  const listeners = planListenerPolicies(lb, sslNegotiation?.policyName, isOurPolicy);
  for (const change of listeners) await elb.setListenerPolicies(lb.name, change.loadBalancerPort, change.policyNames);
  // A policy of ours nothing uses any more (the negotiation policy changed, proxy protocol turned off) goes.
  if (backends.length > 0 || listeners.length > 0) {
    const keep = new Set(wanted.map((p) => p.policyName));
    for (const policy of await elb.describePolicies(lb.name)) {
      if (isOurPolicy(policy.policyName) && !keep.has(policy.policyName))
        await elb.deletePolicy(lb.name, policy.policyName);
    }
  }
}

/** The policies this controller (and the reference) name: proxy protocol, and SSL negotiation by policy. */
export function isOurPolicy(name: string): boolean {
  return name === PROXY_PROTOCOL_POLICY || name.startsWith(sslNegotiationPolicyName(''));
}

/** Eligible Nodes' running instances, registered and deregistered by difference only. */
export function wantedInstances(spec: ClassicSpec, pass: Pass): Promise<string[]> {
  return Promise.all([pass.batch.nodes(), pass.batch.instances()]).then(([all, instances]) =>
    instanceIdsOf(eligibleNodes(all, spec.targetNodeLabels)).filter((id) => instances.get(id)?.state === 'running'),
  );
}

async function ensureInstances(spec: ClassicSpec, lb: ClassicLoadBalancer, pass: Pass): Promise<void> {
  const elb = elbOf(pass);
  const wanted = await wantedInstances(spec, pass);
  const register = wanted.filter((id) => !lb.instanceIds.includes(id));
  const deregister = lb.instanceIds.filter((id) => !wanted.includes(id));
  if (deregister.length > 0) await elb.deregisterInstances(lb.name, deregister);
  if (register.length > 0) await elb.registerInstances(lb.name, register);
  lb.instanceIds = wanted;
}

/** The instance ports and the health check port, from the backend group, on the target Nodes' cluster-tagged groups. */
async function ensureBackendRules(spec: ClassicSpec, backend: string, pass: Pass): Promise<void> {
  const healthPort = Number(/^[A-Z]+:(\d+)/.exec(spec.healthCheck.target)?.[1]);
  const ports = [...spec.listeners.map((l) => l.instancePort), ...(Number.isFinite(healthPort) ? [healthPort] : [])];
  const rules = backendRulesForPorts(ports, pass.deps.clusterName, backend, pass.deps.nodePortRange);
  await addNodeRules(await batchNodeGroups(spec.targetNodeLabels, resourceContext(pass)), rules, pass);
}

/** Every protocol from the load balancer's first group, on the target Nodes' cluster-tagged groups. */
async function ensureNodeRule(spec: ClassicSpec, sourceGroupId: string, pass: Pass): Promise<void> {
  const rule = classicNodeRule(sourceGroupId);
  for (const group of groupsMissingRule(await batchNodeGroups(spec.targetNodeLabels, resourceContext(pass)), rule)) {
    await pass.ec2.authorizeSecurityGroupIngress(group.groupId, [rule]);
    group.ingress.push(rule);
  }
}
