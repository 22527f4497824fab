import type { LoadBalancer } from '../../../shared/aws/elbv2-port.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import { EVENT, recordIngressEvent, recordMembersEvent, setStatus } from '../kube.ts';
import type { GroupBuild, IngressGroupModel } from '../model/types.ts';
import { deleteUnusedTargetGroups } from './cleanup.ts';
import { ensureLoadBalancer, findGroupLoadBalancer } from './load-balancer.ts';
import type { GroupPass } from './pass.ts';
import { APPLIED_TAG, appliedDigest, appliedTagValue, inLine } from './quick.ts';
import { findPredecessors, retirePredecessors, serves } from './replacement.ts';
import { ensureRouting } from './routing.ts';
import { keepGroupBindings } from './stack-bindings.ts';
import { TAG } from './tags.ts';
import { ensureNodeAccess, ensureTargetGroups, ensureTargets, wantedTargets } from './target-groups.ts';
import { ensureWebAcl } from './waf.ts';

/** What a pass did: `quick` when the quick look found the group in line (quick.ts) and nothing else was done. */
export type GroupResult = (ReconcileResult & { quick?: boolean }) | undefined;

/**
 * One pass of a group with members. The order comes from what each resource needs first, and from never
 * dropping traffic on the way:
 *
 *  1. load balancer  its security groups, then the load balancer found (or adopted) by name, or created (beside
 *                    the one it replaces when its name changed: replacement.ts)
 *  2. targets        target groups made or kept in line, their targets registered, their TargetGroupBindings
 *                    kept (stack-bindings.ts), the Node rules added, all before any rule forwards to them
 *  3. routing        listeners, then each listener's rules (new ones in before old ones go, priorities moved
 *                    without a gap), then listeners no longer wanted
 *  4. unused         target groups nothing forwards to any more
 *  5. WAF            the web ACL the group names, if it names one
 *  6. status         every member's status names the load balancer and its ports (once it serves, when it
 *                    replaces another, which then serves out its grace and goes)
 *
 * Before all that, the quick look (quick.ts): when the last full pass left exactly this in place, nothing is read
 * beyond the load balancer and its tags.
 */
export async function applyGroup(
  build: GroupBuild,
  model: IngressGroupModel,
  pass: GroupPass,
  _receiveCount: number,
): Promise<GroupResult> {
  const targets = await wantedTargets(model.targetGroups, pass);
  const digest = appliedDigest(model, targets, { stackBindings: pass.deps.stackBindings !== undefined });
  const current = await findGroupLoadBalancer(model.loadBalancer.name, pass);
  if (current && inLine(build, current.lb, current.tags, digest, pass)) return { quick: true };
  const predecessors = await findPredecessors(build, model, current, pass);
  const replaced = predecessors.find((p) => !p.tags[TAG.replacedAt]);
  const ensured = await ensureLoadBalancer(model, pass, current, replaced?.lb.name);
  if (replaced && ensured.created) {
    await recordMembersEvent(
      pass.deps,
      build.members,
      'Normal',
      EVENT.replacing,
      `Replacing load balancer ${replaced.lb.name} with ${model.loadBalancer.name}; the old one serves until the new one does`,
    );
  }
  const groups = await ensureTargetGroups(model.targetGroups, ensured.created ? undefined : ensured.lb.arn, pass);
  const created = new Set(
    [...groups.wanted.values()].filter((g) => !groups.attached.some((a) => a.arn === g.arn)).map((g) => g.arn),
  );
  // A group just made has no targets yet, but one found unattached (an earlier pass crashed) may: read those.
  const fresh = new Set([...created].filter((arn) => ensured.created && arn));
  await ensureTargets(model.targetGroups, groups, targets, fresh, pass);
  // Before any rule forwards to a new target group: a Pod created from then on gets its readiness gate.
  await keepGroupBindings(model.targetGroups, groups, pass);
  if (ensured.backendGroupId) {
    const reached = await ensureNodeAccess(model.targetGroups, targets, ensured.backendGroupId, pass);
    if (!reached) {
      pass.warnings.push(
        "no target Node has a security group tagged for this cluster, so no rule lets the load balancer's backend group reach the targets",
      );
    }
  }
  const routing = await ensureRouting(build, model, ensured, groups, pass);
  const pending = await deleteUnusedTargetGroups(groups, routing.referenced, pass);
  await ensureWebAcl(model.loadBalancer, ensured.lb, pass);
  // While a load balancer being replaced still serves, the status stays on it until the successor serves.
  const stillServing = predecessors.some((p) => namedByStatus(build, p.lb));
  if (stillServing && !(await serves(ensured.lb, groups, pass))) {
    return { requeueAfterSeconds: pass.deps.provisioningRequeueSeconds };
  }
  await writeStatus(build, ensured.lb, [...routing.listeners.keys()], pass);
  const retireDue = await retirePredecessors(predecessors, ensured.lb, build, pass);
  if (retireDue !== undefined) return { requeueAfterSeconds: retireDue };
  if (pending > 0) return { requeueAfterSeconds: pass.deps.cleanupRequeueSeconds };
  if (ensured.lb.state === 'provisioning') return { requeueAfterSeconds: pass.deps.provisioningRequeueSeconds };
  // In line: the next pass with the same digest may stop at the quick look (quick.ts).
  if (build.leaving.length === 0 && build.members.every((m) => m.state === 'built') && ensured.lb.state === 'active') {
    await pass.deps.elbv2.addTags(ensured.lb.arn, { [APPLIED_TAG]: appliedTagValue(digest, pass.deps.clock.now()) });
  }
  return undefined;
}

/** Every member's `status.loadBalancer.ingress`: the load balancer's DNS name, lower case, and its ports in order. */
async function writeStatus(build: GroupBuild, lb: LoadBalancer, ports: number[], pass: GroupPass): Promise<void> {
  const wanted = [
    {
      hostname: lb.dnsName.toLowerCase(),
      ports: [...ports].sort((a, b) => a - b).map((port) => ({ port, protocol: 'TCP' as const })),
    },
  ];
  for (const member of build.members) {
    try {
      await setStatus(pass.deps, member.ingress, wanted);
    } catch (err) {
      await recordIngressEvent(pass.deps, member.ingress, 'Warning', EVENT.failedStatus, (err as Error).message);
      throw err;
    }
  }
}

/** Whether a member's status names the load balancer. */
function namedByStatus(build: GroupBuild, lb: LoadBalancer): boolean {
  const host = lb.dnsName.toLowerCase();
  return build.members.some((m) => (m.ingress.status?.loadBalancer?.ingress ?? []).some((i) => i.hostname === host));
}
