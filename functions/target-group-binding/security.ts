import type { Instance, SecurityGroup } from '../../shared/aws/ec2-port.ts';
import type { Target } from '../../shared/aws/elbv2-port.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import type { TargetGroupBinding, TgbTargetType } from '../../shared/k8s/tgb-types.ts';
import type { TgbDeps } from './deps.ts';
import { type NetworkProblem, planNetworking, ruleGroupOf, wantedRules, wantsOf } from './networking.ts';

/**
 * `networking.ingress` applied: the security group of each target's network interface (a Node instance's primary
 * interface, or the interface holding a Pod's address), the wanted rules authorized where missing, and the rules with
 * the shared description no live binding asks for any more revoked. Answers the writes and the problems.
 */

type NetworkDeps = Pick<TgbDeps, 'ec2' | 'kube' | 'clusterName'>;

export interface TargetInterfaces {
  /** The groups taking the rules, one per interface. */
  groupIds: string[];
  groups: Map<string, SecurityGroup>;
  problems: NetworkProblem[];
}

/** The groups of the targets' interfaces. `instances`: the instance targets' instances, when already read. */
export async function targetInterfaces(
  targetType: TgbTargetType,
  targets: readonly Target[],
  deps: NetworkDeps,
  instances?: ReadonlyMap<string, Instance>,
): Promise<TargetInterfaces> {
  const enis: { id: string; groupIds: string[] }[] = [];
  if (targets.length === 0) return { groupIds: [], groups: new Map(), problems: [] };
  if (targetType === 'instance') {
    const ids = [...new Set(targets.map((t) => t.id))];
    const found = instances ?? (await deps.ec2.describeInstances(ids));
    for (const id of ids) {
      const primary = found.get(id)?.networkInterfaces.find((e) => e.deviceIndex === 0);
      if (primary) enis.push({ id: primary.networkInterfaceId, groupIds: primary.securityGroupIds ?? [] });
    }
  } else {
    const found = await deps.ec2.findNetworkInterfacesByPrivateIp(targets.map((t) => t.id));
    for (const eni of found) enis.push({ id: eni.networkInterfaceId, groupIds: eni.securityGroupIds ?? [] });
  }
  const allIds = [...new Set(enis.flatMap((e) => e.groupIds))];
  const groups = new Map(
    (allIds.length > 0 ? await deps.ec2.findSecurityGroups({ groupIds: allIds }) : []).map((g) => [g.groupId, g]),
  );
  const groupIds = new Set<string>();
  const problems: NetworkProblem[] = [];
  for (const eni of enis) {
    const chosen = ruleGroupOf(eni, groups, deps.clusterName);
    if (typeof chosen === 'string') groupIds.add(chosen);
    else if (!problems.some((p) => p.message === chosen.message)) problems.push(chosen);
  }
  return { groupIds: [...groupIds].sort(), groups, problems };
}

/**
 * The binding's rules on its targets' groups. `wantNone`: the binding is going, so it asks for nothing. Other bindings
 * are listed only when a rule may be revoked.
 */
export async function reconcileNetworking(
  binding: TargetGroupBinding,
  at: TargetInterfaces,
  resolvePort: (name: string) => number | undefined,
  deps: NetworkDeps,
  wantNone = false,
): Promise<{ writes: number; problems: NetworkProblem[] }> {
  const { rules, problems } = wantNone
    ? { rules: [], problems: [] }
    : wantedRules(binding.spec.networking?.ingress ?? [], resolvePort);
  problems.unshift(...at.problems);
  let plan = planNetworking(at.groupIds, at.groups, rules, []);
  if (plan.revoke.size > 0) {
    plan = planNetworking(at.groupIds, at.groups, rules, await otherWants(binding, deps));
  }
  let writes = 0;
  for (const [groupId, missing] of plan.authorize) {
    await deps.ec2.authorizeSecurityGroupIngress(groupId, missing);
    writes++;
  }
  for (const [groupId, stale] of plan.revoke) {
    await deps.ec2.revokeSecurityGroupIngress(groupId, stale);
    writes++;
  }
  return { writes, problems };
}

/** What every other live binding of the cluster asks for. */
async function otherWants(binding: TargetGroupBinding, deps: NetworkDeps) {
  let all: TargetGroupBinding[];
  try {
    all = await deps.kube.listTargetGroupBindings();
  } catch (err) {
    throw classifyKubernetesError('listing the TargetGroupBindings', err);
  }
  const self = `${binding.metadata.namespace ?? 'default'}/${binding.metadata.name}`;
  return all
    .filter((b) => `${b.metadata.namespace ?? 'default'}/${b.metadata.name}` !== self && !b.metadata.deletionTimestamp)
    .flatMap(wantsOf);
}
