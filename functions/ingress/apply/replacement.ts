import { createHash } from 'node:crypto';
import type { LoadBalancer, TargetGroup } from '../../../shared/aws/elbv2-port.ts';
import { deleteTargetGroup } from '../../../shared/load-balancers/target-groups.ts';
import { EVENT, recordMembersEvent } from '../kube.ts';
import type { GroupBuild, IngressGroupModel } from '../model/types.ts';
import { deleteLoadBalancer, stackInventory } from './cleanup.ts';
import type { GroupPass } from './pass.ts';
import { isStackResource, TAG } from './tags.ts';
import type { StackTargetGroups } from './target-groups.ts';

/**
 * A group's load balancer changes name (its scheme changed, which the reference hashes into the name, or
 * `load-balancer-name` changed) without an outage: the successor is built beside the one that serves, with target
 * groups of its own (a target group serves one Application Load Balancer at a time, so the successor's take an
 * alternate name); the members' status moves to it once it is active and every target group with targets has a
 * healthy one; the one replaced keeps serving for SERVICE_REPLACEMENT_GRACE_SECONDS after that (DNS caches, and
 * connections in flight), then goes with its target groups. The reference deletes the old load balancer first.
 */

/** Ours, on a successor: the name of the load balancer it replaces, until that one is gone. */
export const REPLACES_TAG = 'serverless-ccm/replaces';

/** The successor's name for a target group whose own name another load balancer's target group holds. */
export function alternateTargetGroupName(name: string): string {
  const hash = createHash('sha256').update(`${name}:successor`).digest('hex').slice(0, 10);
  return `${name.slice(0, -10)}${hash}`;
}

/** The load balancers of the group's stack other than the wanted one: found only when something says there are. */
export async function findPredecessors(
  build: GroupBuild,
  model: IngressGroupModel,
  current: { lb: LoadBalancer; tags: Record<string, string> } | undefined,
  pass: GroupPass,
): Promise<{ lb: LoadBalancer; tags: Record<string, string>; targetGroups: TargetGroup[] }[]> {
  const wanted = model.loadBalancer.name.toLowerCase();
  const statusElsewhere = build.members.some((m) =>
    (m.ingress.status?.loadBalancer?.ingress ?? []).some((i) => {
      const host = i.hostname?.replace(/^internal-/, '') ?? '';
      return host !== '' && !host.startsWith(`${wanted}-`);
    }),
  );
  if (!statusElsewhere && !current?.tags[REPLACES_TAG]) return [];
  const inventory = await stackInventory(pass);
  const tagsOf = await pass.deps.elbv2.describeTags(inventory.loadBalancers.map((lb) => lb.arn));
  return inventory.loadBalancers
    .filter((lb) => lb.name.toLowerCase() !== wanted)
    .map((lb) => ({
      lb,
      tags: tagsOf.get(lb.arn) ?? {},
      targetGroups: inventory.targetGroups.filter((g) => g.loadBalancerArns.includes(lb.arn)),
    }));
}

/** Whether the successor can take the traffic: active, and a healthy target in each target group that has targets. */
export async function serves(lb: LoadBalancer, groups: StackTargetGroups, pass: GroupPass): Promise<boolean> {
  const fresh = await pass.deps.elbv2.findLoadBalancer(lb.name);
  if (fresh?.state !== 'active') return false;
  for (const group of groups.wanted.values()) {
    const health = await pass.deps.elbv2.describeTargetHealth(group.arn);
    if (health.length > 0 && !health.some((h) => h.state === 'healthy')) return false;
  }
  return true;
}

/**
 * The replaced load balancers once the status has moved: each is tagged with the time it stopped being named, then
 * deleted with its target groups when the grace is over. Answers the seconds until the next one is due, if any.
 */
export async function retirePredecessors(
  predecessors: Awaited<ReturnType<typeof findPredecessors>>,
  successor: LoadBalancer,
  build: GroupBuild,
  pass: GroupPass,
): Promise<number | undefined> {
  const { elbv2, clock, replacementGraceSeconds } = pass.deps;
  let due: number | undefined;
  for (const p of predecessors) {
    const since = p.tags[TAG.replacedAt];
    if (!since) {
      await elbv2.addTags(p.lb.arn, { [TAG.replacedAt]: new Date(clock.now()).toISOString() });
      await recordMembersEvent(
        pass.deps,
        build.members,
        'Normal',
        EVENT.replacing,
        `Load balancer ${successor.name} serves in place of ${p.lb.name}, which keeps serving for ${replacementGraceSeconds} s and is then deleted`,
      );
      due = Math.min(due ?? replacementGraceSeconds, replacementGraceSeconds);
      continue;
    }
    const left = Date.parse(since) + replacementGraceSeconds * 1000 - clock.now();
    if (left > 0) {
      due = Math.min(due ?? Number.POSITIVE_INFINITY, Math.ceil(left / 1000));
      continue;
    }
    await deleteLoadBalancer(p.lb, pass);
    const tags = await elbv2.describeTags(p.targetGroups.map((g) => g.arn));
    for (const group of p.targetGroups) {
      if (!isStackResource(tags.get(group.arn), pass.deps.clusterName, pass.group)) continue;
      // Still held for a moment after its load balancer went: the next pass (or the collector) takes it.
      if ((await deleteTargetGroup(group, pass.ctx)) === 'in-use') due = Math.min(due ?? 5, 5);
    }
  }
  if (due === undefined && successor && predecessors.length > 0) {
    await elbv2.removeTags(successor.arn, [REPLACES_TAG]);
  }
  return due;
}
