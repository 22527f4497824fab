import type { ClassicLoadBalancer } from '../../../shared/aws/elb-port.ts';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { deleteSecurityGroup } from '../../../shared/load-balancers/security-groups.ts';
import { MetricName } from '../../../shared/observability/metrics.ts';
import { ownedByService, parseAnnotations } from '../annotations.ts';
import type { RemoveResult } from '../backend.ts';
import { ingressHostname } from '../decide.ts';
import { EVENT } from '../kube.ts';
import { acceptableNames, referenceLoadBalancerName, securityGroupName } from '../names.ts';
import type { Pass } from '../writes.ts';
import { elbOf } from './load-balancer.ts';
import { findClassic } from './observed.ts';
import { classicNameFromHostname, classicNodeRule } from './plans.ts';

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
  let deletedNow = false;
  for (const name of names.values()) {
    const found = await findClassic(elb, { clusterName: deps.clusterName, serviceKey }, name, false);
    if (!found) continue;
    await retireClassic(found.lb, undefined, pass, false);
    deletedNow = true;
  }
  const groups = await pass.ec2.findSecurityGroups({
    vpcId: deps.vpcId,
    groupNames: [...names.values()].map(securityGroupName),
    tags: { [clusterTagKey(deps.clusterName)]: 'owned' },
  });
  const ours = groups.filter(
    (g) => g.tags['kubernetes.io/service-name'] === undefined || ownedByService(g.tags, deps.clusterName, serviceKey),
  );
  // Right after its load balancer went, its network interfaces hold the group: not asked in that pass.
  let waiting = deletedNow && ours.length > 0;
  if (!deletedNow) {
    for (const group of ours) if ((await deleteSecurityGroup(group.groupId, pass)) === 'in-use') waiting = true;
  }
  if (waiting) {
    deps.metrics.count(MetricName.LoadBalancerCleanupPending, { reason: 'DependencyViolation' });
    return { done: false, requeueAfterSeconds: deps.cleanupRequeueSeconds };
  }
  return { done: true, name: statusName ?? referenceLoadBalancerName(service.metadata.uid) ?? [...names.values()][0]! };
}

/**
 * One Classic ELB goes: its rule on the Nodes' groups (only when its first group is its own managed group: a
 * user's group may serve others), then the load balancer. Its managed group follows once free (on a later
 * delete pass, or by the garbage collector). `first`: it goes before a successor of the same name is made.
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
  const [source] = lb.securityGroups;
  if (source) {
    const [group] = await pass.ec2.findSecurityGroups({ groupIds: [source] });
    if (group?.groupName === securityGroupName(lb.name)) {
      // The reference tagged its group with the cluster only: given the Service's tag, it is found again (and
      // collected once free) after the load balancer is gone.
      if (group.tags['kubernetes.io/service-name'] === undefined) {
        await pass.ec2.createTags([group.groupId], { 'kubernetes.io/service-name': pass.serviceKey });
      }
      const rule = classicNodeRule(source);
      const holders = await pass.ec2.findSecurityGroups({ referencingGroupIds: [source] });
      for (const holder of holders) {
        const theirs = holder.ingress.filter((r) => r.sourceGroupId === source && r.protocol === rule.protocol);
        if (theirs.length > 0 && clusterTagKey(pass.deps.clusterName) in holder.tags) {
          await pass.ec2.revokeSecurityGroupIngress(holder.groupId, theirs);
        }
      }
    }
  }
  await elbOf(pass).deleteLoadBalancer(lb.name);
}
