import type { TargetGroup } from '../../../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import { deleteLoadBalancerAndListeners } from '../../../shared/load-balancers/listeners.ts';
import { deleteSecurityGroup } from '../../../shared/load-balancers/security-groups.ts';
import { deleteTargetGroup } from '../../../shared/load-balancers/target-groups.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import { ownedByService } from '../annotations.ts';
import { cleanupRetrySeconds, type RemoveResult } from '../backend.ts';
import { ingressHostname } from '../decide.ts';
import { EVENT } from '../kube.ts';
import { serviceAnnotations } from '../lbc/options.ts';
import { dropServiceStackBindings } from '../lbc/stack-bindings.ts';
import { loadBalancerSpec } from '../model/spec.ts';
import {
  loadBalancerNameFromHostname,
  preferredLoadBalancerName,
  REPLACES_TAG,
  successorLoadBalancerName,
} from '../names.ts';
import type { Pass } from '../writes.ts';
import { revokeReferenceNodeRules } from './node-access.ts';

/**
 * Remove everything a Service's load balancers consist of, in the order AWS allows: the load balancers
 * (their listeners go with them), their target groups, their rules on the Nodes' groups, the managed
 * security groups (which DependencyViolation keeps for minutes while the load balancers' network interfaces
 * drain: the key is requeued, never given up), and only then the finalizer. Every step is found again from
 * AWS on each pass (by deterministic name, by the status hostname, by tag), so a crash after any call resumes
 * where it stopped. Both names a Service's load balancer can have are looked at, since a deletion can come in
 * the middle of a replacement.
 */
export async function deleteNetworkLoadBalancer(pass: Pass): Promise<RemoveResult> {
  const { deps, service } = pass;
  const namespace = service.metadata.namespace ?? 'default';
  const serviceKey = `${namespace}/${service.metadata.name}`;
  const identity = { clusterName: deps.clusterName, namespace, name: service.metadata.name };
  // Broken annotations must not stop a deletion: names come from what still parses.
  const { options } = serviceAnnotations(service, pass.lbc === true);
  const lbName = preferredLoadBalancerName(identity, options);
  const candidates = new Map<string, string>();
  for (const name of [loadBalancerNameFromHostname(ingressHostname(service)), lbName]) {
    if (name) candidates.set(name.toLowerCase(), name);
  }
  const built = loadBalancerSpec(service, options, { clusterName: deps.clusterName, loadBalancerName: lbName });
  const specNames = built.ok ? built.spec.targetGroups.map((g) => g.name) : [];

  // The reference's Services: their TargetGroupBindings go before the target groups (lbc/stack-bindings.ts).
  if (pass.lbc) await dropServiceStackBindings(pass);
  const groups = new Map<string, TargetGroup>();
  let deletedNow = false;
  const successor = successorLoadBalancerName(identity);
  const looked = new Set<string>();
  for (const [key, name] of candidates) {
    if (looked.has(key)) continue;
    deletedNow = (await deleteIfOurs(name, pass, serviceKey, groups, looked)) || deletedNow;
    // A Service deleted in the middle of a replacement also has a successor: looked for while a load
    // balancer is found (a successor left alone by a crash is the garbage collector's, its Service being gone).
    if (deletedNow && !candidates.has(successor.toLowerCase())) {
      candidates.set(successor.toLowerCase(), successor);
    }
  }

  const reasons = new Set<string>();
  for (const group of groups.values()) {
    if ((await deleteTargetGroup(group, pass)) === 'in-use') reasons.add('ResourceInUse');
  }
  // Tried at once, also right after the load balancer went: where AWS frees the group at once, the Service goes now.
  const waitsForGroups = await deleteManagedGroups(pass, serviceKey, reasons);
  // Target groups that never got a listener (a crash during creation) or lost it already (a crash during
  // deletion): looked for once nothing else is waited for, so a pass waiting on the security group stays cheap.
  if (reasons.size === 0 && !waitsForGroups) {
    const missing = specNames.filter((n) => ![...groups.values()].some((g) => g.name === n));
    const found = missing.length > 0 ? await pass.elbv2.findTargetGroups(missing) : [];
    const tags = found.length > 0 ? await pass.elbv2.describeTags(found.map((g) => g.arn)) : new Map();
    for (const group of found) {
      if (!ownedByService(tags.get(group.arn), deps.clusterName, serviceKey)) continue;
      if ((await deleteTargetGroup(group, pass)) === 'in-use') reasons.add('ResourceInUse');
    }
  }
  if (reasons.size > 0 || waitsForGroups) {
    for (const reason of reasons) deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason });
    deps.log.info('load balancer cleanup waits for AWS', { serviceKey, reasons: [...reasons] });
    return { done: false, requeueAfterSeconds: cleanupRetrySeconds(pass.receiveCount, deps.cleanupRequeueSeconds) };
  }

  return { done: true, name: lbName };
}

/**
 * Deletes the load balancer of that name when it is this Service's, collecting its target groups. One it replaced
 * that still serves out its grace (its REPLACES_TAG names it) goes first: with it gone, no later pass could name it.
 * `looked`: the names looked at already (lowercase).
 */
async function deleteIfOurs(
  name: string,
  pass: Pass,
  serviceKey: string,
  groups: Map<string, TargetGroup>,
  looked: Set<string>,
): Promise<boolean> {
  const { deps } = pass;
  looked.add(name.toLowerCase());
  const lb = await pass.elbv2.findLoadBalancer(name);
  if (!lb) return false;
  const attached = await pass.elbv2.describeTargetGroupsOfLoadBalancer(lb.arn);
  const tags = await pass.elbv2.describeTags([lb.arn, ...attached.map((g) => g.arn)]);
  if (!ownedByService(tags.get(lb.arn), deps.clusterName, serviceKey)) {
    deps.log.warn("load balancer of that name is not this Service's: left alone", {
      serviceKey,
      loadBalancer: name,
    });
    return false;
  }
  const replaced = tags.get(lb.arn)?.[REPLACES_TAG];
  if (replaced && !looked.has(replaced.toLowerCase())) await deleteIfOurs(replaced, pass, serviceKey, groups, looked);
  for (const group of attached) {
    if (ownedByService(tags.get(group.arn), deps.clusterName, serviceKey)) groups.set(group.arn, group);
  }
  await deleteLoadBalancerAndListeners(lb, pass);
  if (lb.securityGroups.length === 0) await revokeReferenceNodeRules(lb.name, pass);
  return true;
}

/**
 * The managed groups of this Service (all of them: a replaced load balancer leaves its old one behind).
 * Right after its load balancer went, a group may be held by the load balancer's network interfaces for
 * minutes (DependencyViolation), or freed at once. Answers whether one is still there; says who must act when a
 * rule not made here references it long after.
 */
async function deleteManagedGroups(pass: Pass, serviceKey: string, reasons: Set<string>): Promise<boolean> {
  const { deps } = pass;
  const managed = await pass.ec2.findSecurityGroups({
    vpcId: deps.vpcId,
    tags: { [clusterTagKey(deps.clusterName)]: 'owned', [LABEL_SERVICE_NAME]: serviceKey },
  });
  if (managed.length === 0) return false;
  let inUse = 0;
  for (const group of managed) if ((await deleteSecurityGroup(group.groupId, pass)) === 'in-use') inUse++;
  if (inUse === 0) return false;
  reasons.add('DependencyViolation');
  // Network interfaces drain within minutes; a group held longer is held by someone's rule: say whose.
  if (pass.receiveCount >= REFERENCE_CHECK_AFTER_ATTEMPTS)
    await sayWhoHoldsGroups(
      pass,
      managed.map((g) => g.groupId),
    );
  return true;
}

/**
 * Attempts after which a security group still in use is worth explaining: network interfaces drain within minutes,
 * and by the fifth attempt about two minutes have passed (cleanupRetrySeconds: 5 + 15 + 45 + 60 s by default).
 */
const REFERENCE_CHECK_AFTER_ATTEMPTS = 5;

async function sayWhoHoldsGroups(pass: Pass, managedIds: string[]): Promise<void> {
  const referencing = await pass.ec2.findSecurityGroups({ referencingGroupIds: managedIds });
  const blockers = referencing.flatMap((g) =>
    g.ingress
      .filter((r) => r.sourceGroupId && managedIds.includes(r.sourceGroupId))
      .map((r) => `${g.groupId} references ${r.sourceGroupId}`),
  );
  if (blockers.length === 0) return;
  await pass.event(
    'Warning',
    EVENT.failed,
    `Cannot delete the load balancer's security group: rules not made by this controller still reference it (${blockers.join(', ')}); remove them`,
  );
}
