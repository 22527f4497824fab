import { type LoadBalancerGroups, ourGroupNames } from '../../../shared/load-balancers/security-groups.ts';
import { sameMembers } from '../../../shared/load-balancers/security-rules.ts';
import type { EnsuredGroups } from '../../../shared/load-balancers/target-groups.ts';
import { desiredTargets, ensureTargets, type TargetsMode } from '../../../shared/load-balancers/targets.ts';
import { resourceContext } from '../context.ts';
import { withGateWaiting } from '../lbc/stack-bindings.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import type { ShortPass } from '../resync-check.ts';
import type { Pass } from '../writes.ts';
import { announceChanges } from './finish.ts';
import { ensureNetworkLoadBalancerGroups } from './load-balancer.ts';
import { ensureNodeAccess } from './node-access.ts';
import { quickLook } from './quick-check.ts';

/**
 * The pass of a Node-set change (functions/service/resync-check.ts): what the set of Nodes changes is the targets
 * (instance targets, or the Nodes IP targets run on) and the rules that let the load balancer reach the Nodes'
 * security groups. So after the quick look finds the load balancer in line, and its security groups are the ones
 * the full pass would give it, only those are seen to, as the full pass does them: the targets' difference
 * registered and deregistered, rules added, `UpdatedLoadBalancer` said when targets changed. Attributes, listeners
 * and the rest are not read (about 14 AWS calls a Service of two ports down to about 6: `npm run bench --
 * service`). Returns false when anything is off (having written nothing, or only a security group the full pass
 * would make too): the caller then makes the full pass.
 */
export async function ensureTargetsOnly(spec: LoadBalancerSpec, pass: Pass): Promise<boolean> {
  const look = await quickLook(spec, pass);
  if (!look) return false;
  // A load balancer made without security groups (by the reference controller) has its rules on the Nodes' groups.
  const groups = look.lb.securityGroups.length === 0 ? undefined : await checkedGroups(spec, pass);
  if (groups === false || (groups && !sameMembers(groups.lbGroups, look.lb.securityGroups))) return false;
  const ensured: EnsuredGroups = new Map(
    spec.targetGroups.map((wanted) => [
      wanted.name,
      { group: look.attached.find((g) => g.name === wanted.name)!, created: false },
    ]),
  );
  const ctx = resourceContext(pass);
  const targets = await desiredTargets(spec, withGateWaiting(ctx, pass, ensured));
  // Nodes only joined, or only left while staying listed, or both: IP targets (Pods) cannot have changed, and
  // instance targets are registered and deregistered without a read.
  const mode = TARGETS_MODES[pass.shortPass ?? 'node-set'];
  if (mode === 'read' || spec.targetType === 'instance') await ensureTargets(spec, ensured, targets, ctx, mode);
  const warning = await ensureNodeAccess(spec, look.lb, groups, targets, pass);
  await announceChanges({ spec, lb: look.lb, created: false, warning }, pass);
  return true;
}

const TARGETS_MODES: Record<ShortPass, TargetsMode> = {
  resync: 'read',
  'node-set': 'read',
  'node-join': 'join',
  'node-leave': 'leave',
  'node-join-leave': 'join-leave',
};

/**
 * The load balancer's security groups as the full pass would have them, with the groups of ours read from the
 * batch's one read (`ServiceBatch.securityGroupsNamed`) where it has them. False when one of ours is missing: the
 * full pass makes it (this pass does not create groups, which an earlier pass of the batch may have made since).
 */
async function checkedGroups(spec: LoadBalancerSpec, pass: Pass): Promise<LoadBalancerGroups | false> {
  const names = ourGroupNames(spec, pass.deps.clusterName);
  const shared = await pass.batch.securityGroupsNamed(names);
  if (shared && shared.length < names.length) return false;
  return ensureNetworkLoadBalancerGroups(spec, pass, shared && (async () => shared));
}
