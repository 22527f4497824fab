import type { ClassicLoadBalancer } from '../../../shared/aws/elb-port.ts';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import { backendSecurityGroupName, deleteSecurityGroup } from '../../../shared/load-balancers/security-groups.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import { ownedByService, parseAnnotations } from '../annotations.ts';
import { cleanupRetrySeconds, type RemoveResult } from '../backend.ts';
import { ingressHostname } from '../decide.ts';
import { EVENT } from '../kube.ts';
import { acceptableNames, referenceLoadBalancerName, securityGroupName } from '../names.ts';
import type { Pass } from '../writes.ts';
import { elbOf } from './load-balancer.ts';
import { findClassic } from './observed.ts';
import { classicNameFromHostname, classicNodeRule, referenceRuleSource, ruleStillNeeded } from './plans.ts';

/**
 * A Service's Classic ELBs removed without leaking anything, in the order AWS allows: the Nodes' rules from
 * its group (the Nodes' groups themselves are never deleted), the load balancer, then its managed security
 * group, which the load balancer's network interfaces hold for minutes (DependencyViolation: requeued, never
 * given up). Everything is found again on each pass: by the status, the reference's name and ours, and the
 * managed group by its `k8s-elb-<name>` name and cluster tag (the reference tagged it with the cluster only).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-security-groups.html
 */
export async function deleteClassicLoadBalancer(pass: Pass): Promise<RemoveResult> {
  const { deps, service } = pass;
  const elb = elbOf(pass);
  const { serviceKey } = pass;
  const identity = {
    clusterName: deps.clusterName,
    namespace: service.metadata.namespace ?? 'default',
    name: service.metadata.name,
  };
  const { options } = parseAnnotations(service.metadata.annotations);
  const names = new Map<string, string>();
  const statusName = classicNameFromHostname(ingressHostname(service));
  for (const name of [statusName, ...acceptableNames(identity, service.metadata.uid, options.name)]) {
    if (name) names.set(name.toLowerCase(), name);
  }
  for (const name of names.values()) {
    const found = await findClassic(elb, { clusterName: deps.clusterName, serviceKey }, name, false);
    if (found) await retireClassic(found.lb, undefined, pass, false);
  }
  const groups = await pass.ec2.findSecurityGroups({
    vpcId: deps.vpcId,
    groupNames: [...names.values()].map(securityGroupName),
    tags: { [clusterTagKey(deps.clusterName)]: 'owned' },
  });
  const ours = groups.filter(
    (g) => g.tags['kubernetes.io/service-name'] === undefined || ownedByService(g.tags, deps.clusterName, serviceKey),
  );
  // Tried at once, also right after its load balancer went: its network interfaces may hold the group for
  // minutes, or AWS may free it at once, and then the Service goes in this pass.
  let waiting = false;
  for (const group of ours) if ((await deleteSecurityGroup(group.groupId, pass)) === 'in-use') waiting = true;
  if (waiting) {
    deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'DependencyViolation' });
    return { done: false, requeueAfterSeconds: cleanupRetrySeconds(pass.receiveCount, deps.cleanupRequeueSeconds) };
  }
  return { done: true, name: statusName ?? referenceLoadBalancerName(service.metadata.uid) ?? [...names.values()][0]! };
}

/**
 * One Classic ELB goes: the all-traffic rule a Classic ELB made the reference's way has on the Nodes' groups, from
 * its own group or from the user's (`aws-load-balancer-security-groups`), revoked from every cluster-tagged group as
 * the reference revokes it (a user's group another such Classic ELB still uses keeps it), then the load balancer.
 * Its managed group follows once free (on a later delete pass, or by the garbage collector). `first`: it goes
 * before a successor of the same name is made.
 */
export async function retireClassic(
  lb: ClassicLoadBalancer,
  successor: string | undefined,
  pass: Pass,
  first: boolean,
): Promise<void> {
  if (successor) {
    await pass.event(
      first ? 'Warning' : 'Normal',
      EVENT.replacing,
      first
        ? `Deleting load balancer ${lb.name} before making it again: the name annotation pins the name, so traffic stops until the new one serves`
        : `Deleting load balancer ${lb.name}: the Service now uses ${successor}`,
    );
  }
  const { clusterName } = pass.deps;
  const groups = lb.securityGroups.length > 0 ? await pass.ec2.findSecurityGroups({ groupIds: lb.securityGroups }) : [];
  const names = { managed: securityGroupName(lb.name), backend: backendSecurityGroupName(clusterName) };
  const managed = groups.find((g) => g.groupName === names.managed);
  // The reference tagged its group with the cluster only: given the Service's tag, it is found again (and
  // collected once free) after the load balancer is gone.
  if (managed && managed.tags[LABEL_SERVICE_NAME] === undefined) {
    await pass.ec2.createTags([managed.groupId], { [LABEL_SERVICE_NAME]: pass.serviceKey });
  }
  const { options } = parseAnnotations(pass.service.metadata.annotations);
  const source = referenceRuleSource(lb, groups, names, options.securityGroups);
  const userGroup = source !== undefined && source !== managed?.groupId;
  // A user's group the cluster tags is one of the cluster's own (the Nodes' group, named as the load balancer's):
  // its all-traffic rules are the cluster's, not the load balancer's, and stay.
  const clusterGroup = groups.some((g) => g.groupId === source && clusterTagKey(clusterName) in g.tags);
  if (userGroup && (clusterGroup || (await userGroupStillNeeded(source, lb, pass)))) {
    pass.deps.log.info("the user's group is the cluster's or lets another Classic ELB in: its rule stays", {
      serviceKey: pass.serviceKey,
      securityGroup: source,
    });
  } else if (source) {
    const rule = classicNodeRule(source);
    const holders = await pass.ec2.findSecurityGroups({ referencingGroupIds: [source] });
    for (const holder of holders) {
      const theirs = holder.ingress.filter((r) => r.sourceGroupId === source && r.protocol === rule.protocol);
      if (theirs.length > 0 && holder.groupId !== source && clusterTagKey(clusterName) in holder.tags) {
        await pass.ec2.revokeSecurityGroupIngress(holder.groupId, theirs);
      }
    }
  }
  await elbOf(pass).deleteLoadBalancer(lb.name);
}

/** Whether another Classic ELB made the reference's way uses the user's group `source` (one look at them all). */
async function userGroupStillNeeded(source: string, lb: ClassicLoadBalancer, pass: Pass): Promise<boolean> {
  const others = (await elbOf(pass).listLoadBalancers()).filter(
    (o) => o.name !== lb.name && o.securityGroups.includes(source),
  );
  if (others.length === 0) return false;
  const [backend] = await pass.ec2.findSecurityGroups({
    vpcId: pass.deps.vpcId,
    groupNames: [backendSecurityGroupName(pass.deps.clusterName)],
  });
  return ruleStillNeeded(source, others, backend?.groupId);
}
