import { observeLoadBalancer } from '../../../shared/load-balancers/observed.ts';
import { ownedByService } from '../annotations.ts';
import { EVENT } from '../kube.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import type { Pass } from '../writes.ts';
import { isLbcStackResource, lbcAdoptionTags } from './names.ts';

/**
 * A Network Load Balancer the AWS Load Balancer Controller made for the Service, taken over in place: the same ARN
 * and DNS name keep serving. It is found by the reference's name (the same as ours for it, byte for byte) and
 * recognised by its tracking tags (`elbv2.k8s.aws/cluster`, `service.k8s.aws/stack`); it, the target groups and
 * listeners the stack's tags name, and its managed security group then get our ownership tags, so the rest of the pass
 * keeps them in line as any load balancer of ours (nlb/backend.ts), without making anything anew. Nothing else is
 * written: listeners keep forwarding to the same target groups, whose targets stay registered. Answers whether it
 * adopted anything.
 */
export async function adoptLbcStack(spec: LoadBalancerSpec, names: readonly string[], pass: Pass): Promise<boolean> {
  const { deps } = pass;
  const { clusterName } = deps;
  const stackOf = (tags: Readonly<Record<string, string>> | undefined) =>
    isLbcStackResource(tags, clusterName, pass.serviceKey) && !ownedByService(tags, clusterName, pass.serviceKey);
  let adopted = false;
  for (const name of new Set(names)) {
    const lb = await pass.elbv2.findLoadBalancer(name);
    if (!lb) continue;
    const lbTags = (await pass.elbv2.describeTags([lb.arn])).get(lb.arn);
    if (!stackOf(lbTags) || lb.type !== 'network') continue;
    const observed = await observeLoadBalancer(lb, pass.elbv2);
    // Its parts first, the load balancer last: once it is ours, a crash leaves the next pass adopting the rest.
    for (const arn of [...observed.attached.map((g) => g.arn), ...observed.listeners.map((l) => l.arn)]) {
      const tags = observed.tags.get(arn);
      if (stackOf(tags)) await pass.elbv2.addTags(arn, lbcAdoptionTags(tags!, clusterName, pass.serviceKey));
    }
    const [group] = await pass.ec2.findSecurityGroups({ vpcId: deps.vpcId, groupNames: [spec.securityGroupName] });
    if (group && stackOf(group.tags)) {
      await pass.ec2.createTags([group.groupId], lbcAdoptionTags(group.tags, clusterName, pass.serviceKey));
    }
    await pass.elbv2.addTags(lb.arn, lbcAdoptionTags(lbTags!, clusterName, pass.serviceKey));
    await pass.event(
      'Normal',
      EVENT.adopted,
      `Adopted load balancer ${lb.name} (${lb.dnsName}), made by the AWS Load Balancer Controller: it keeps serving`,
    );
    adopted = true;
  }
  return adopted;
}
