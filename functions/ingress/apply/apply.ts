import type { LoadBalancer } from '../../../shared/aws/elbv2-port.ts';
import type { ReconcileResult } from '../../../shared/queue/runner.ts';
import { EVENT, recordIngressEvent, setStatus } from '../kube.ts';
import type { GroupBuild, IngressGroupModel } from '../model/types.ts';
import { deleteLoadBalancer, deleteUnusedTargetGroups, stackInventory } from './cleanup.ts';
import { ensureLoadBalancer, findGroupLoadBalancer } from './load-balancer.ts';
import type { GroupPass } from './pass.ts';
import { APPLIED_TAG, appliedDigest, appliedTagValue, inLine } from './quick.ts';
import { ensureRouting } from './routing.ts';
import { ensureNodeAccess, ensureTargetGroups, ensureTargets, wantedTargets } from './target-groups.ts';
import { ensureWebAcl } from './waf.ts';

/**
 * One pass of a group with members. The order comes from what each resource needs first, and from never
 * dropping traffic on the way:
 *
 *  1. load balancer  its security groups, then the load balancer found (or adopted) by name, or created
 *  2. targets        target groups made or kept in line, their targets registered, the Node rules added, all
 *                    before any rule forwards to them
 *  3. routing        listeners, then each listener's rules (new ones in before old ones go, priorities moved
 *                    without a gap), then listeners no longer wanted
 *  4. unused         target groups nothing forwards to any more
 *  5. WAF            the web ACL the group names, if it names one
 *  6. status         every member's status names the load balancer and its ports
 *
 * Before all that, the quick look (quick.ts): when the last full pass left exactly this in place, nothing is read
 * beyond the load balancer and its tags.
 */
export async function applyGroup(
  build: GroupBuild,
  model: IngressGroupModel,
  pass: GroupPass,
  _receiveCount: number,
): Promise<ReconcileResult | undefined> {
  const targets = await wantedTargets(model.targetGroups, pass);
  const digest = appliedDigest(model, targets);
  const current = await findGroupLoadBalancer(model.loadBalancer.name, pass);
  if (current && inLine(build, current.lb, current.tags, digest, pass)) return undefined;
  await retireOtherLoadBalancers(build, model, pass);
  const ensured = await ensureLoadBalancer(model, pass, current);
  const groups = await ensureTargetGroups(model.targetGroups, ensured.created ? undefined : ensured.lb.arn, pass);
  const created = new Set(
    [...groups.wanted.values()].filter((g) => !groups.attached.some((a) => a.arn === g.arn)).map((g) => g.arn),
  );
  // A group just made has no targets yet, but one found unattached (an earlier pass crashed) may: read those.
  const fresh = new Set([...created].filter((arn) => ensured.created && arn));
  await ensureTargets(model.targetGroups, groups, targets, fresh, pass);
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
  await writeStatus(build, ensured.lb, [...routing.listeners.keys()], pass);
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

/**
 * The group's load balancer changes name (scheme changed, or `load-balancer-name`): the reference deletes the old
 * one before making the new one, since a target group serves one load balancer only and the new one needs them.
 * This controller does the same, and says so on every member first (docs/ingress.md, "Replacing the load
 * balancer"). Looked for only when a member's status names another load balancer than the model's.
 */
async function retireOtherLoadBalancers(build: GroupBuild, model: IngressGroupModel, pass: GroupPass): Promise<void> {
  const wantedPrefix = model.loadBalancer.name.toLowerCase();
  const elsewhere = build.members.some((m) =>
    (m.ingress.status?.loadBalancer?.ingress ?? []).some((i) => {
      const host = i.hostname?.replace(/^internal-/, '') ?? '';
      return host !== '' && !host.startsWith(`${wantedPrefix}-`);
    }),
  );
  if (!elsewhere) return;
  if (await findGroupLoadBalancer(model.loadBalancer.name, pass)) return;
  const inventory = await stackInventory(pass);
  for (const lb of inventory.loadBalancers) {
    if (lb.name.toLowerCase() === wantedPrefix) continue;
    for (const member of build.members) {
      await recordIngressEvent(
        pass.deps,
        member.ingress,
        'Normal',
        EVENT.replacing,
        `Replacing load balancer ${lb.name} with ${model.loadBalancer.name}: its target groups can serve one load balancer at a time`,
      );
    }
    await deleteLoadBalancer(lb, pass);
  }
}
