import type { SecurityGroupRule } from '../../../shared/aws/ec2-port.ts';
import type { LoadBalancer, Target } from '../../../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { ensureNodeRules, type NodeAccess, targetNodeGroups } from '../../../shared/load-balancers/node-rules.ts';
import type { LoadBalancerGroups } from '../../../shared/load-balancers/security-groups.ts';
import { dedupeRules, planRules, transportProtocols } from '../../../shared/load-balancers/security-rules.ts';
import { resourceContext } from '../context.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import type { Pass } from '../writes.ts';

/**
 * What lets a Network Load Balancer reach its targets on the Nodes: the backend group's rules on the Nodes'
 * groups (shared/load-balancers/node-rules.ts), or, for one the reference controller made without security
 * groups, the rules it made from the clients' ranges. Answers the Warning to say when no Node group could be opened.
 */
export async function ensureNodeAccess(
  spec: LoadBalancerSpec,
  lb: LoadBalancer,
  groups: LoadBalancerGroups | undefined,
  targets: ReadonlyMap<string, readonly Target[]>,
  pass: Pass,
): Promise<string | undefined> {
  // The user's own groups and no backend rules asked for (a Service the AWS Load Balancer Controller serves): theirs to allow.
  if (spec.lbc && !spec.lbc.manageBackendSecurityGroupRules) return undefined;
  const access = groups
    ? await ensureNodeRules(spec, targets, groups.backendGroupId, resourceContext(pass))
    : await ensureReferenceNodeRules(spec, lb, targets, pass);
  return access === 'no-node-groups' ? missingGroupWarning(spec, pass) : undefined;
}

/** The Warning said when there are target Nodes and none of their groups can be opened. */
function missingGroupWarning(spec: LoadBalancerSpec, pass: Pass): string {
  pass.deps.log.warn('no cluster-tagged security group on the target Nodes: no rules added for the load balancer', {
    serviceKey: spec.serviceKey,
  });
  return `No security group tagged ${clusterTagKey(pass.deps.clusterName)} on the target Nodes' primary network interfaces: no rule lets load balancer ${spec.loadBalancerName} reach them; tag the Nodes' security group or allow the traffic yourself`;
}

// ---- load balancers without security groups (made by the reference controller) ------------------------------

/**
 * A Network Load Balancer created without security groups can never get any, so one adopted from the
 * reference cloud controller keeps being served its way: rules on the Nodes' groups from the clients'
 * ranges (traffic), from the load balancer's subnets (health checks) and ICMP for path MTU discovery, each
 * owned by its description, which names the load balancer.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/target-group-register-targets.html#target-security-groups
 */
export function referenceRuleDescriptions(loadBalancerName: string) {
  return {
    client: `kubernetes.io/rule/nlb/client=${loadBalancerName}`,
    health: `kubernetes.io/rule/nlb/health=${loadBalancerName}`,
    mtu: `kubernetes.io/rule/nlb/mtu=${loadBalancerName}`,
  };
}

export function isReferenceRuleOf(rule: SecurityGroupRule, loadBalancerName: string): boolean {
  return Object.values(referenceRuleDescriptions(loadBalancerName)).includes(rule.description ?? '');
}

export function referenceNodeRules(
  spec: LoadBalancerSpec,
  targetsByGroup: ReadonlyMap<string, readonly Target[]>,
  healthSources: readonly string[],
): SecurityGroupRule[] {
  const described = referenceRuleDescriptions(spec.loadBalancerName);
  const cidr = (range: string) => (range.includes(':') ? { cidrIpv6: range } : { cidrIpv4: range });
  const rules: SecurityGroupRule[] = [];
  for (const group of spec.targetGroups) {
    const trafficPorts =
      group.targetType === 'instance'
        ? [group.port]
        : [...new Set((targetsByGroup.get(group.name) ?? []).map((t) => t.port))];
    const healthPorts = group.healthCheck.port === 'traffic-port' ? trafficPorts : [Number(group.healthCheck.port)];
    for (const port of trafficPorts) {
      for (const protocol of transportProtocols(group.protocol)) {
        for (const range of spec.sourceRanges) {
          rules.push({ protocol, fromPort: port, toPort: port, ...cidr(range), description: described.client });
        }
      }
    }
    for (const port of healthPorts) {
      for (const range of healthSources) {
        rules.push({ protocol: 'tcp', fromPort: port, toPort: port, ...cidr(range), description: described.health });
      }
    }
  }
  for (const range of spec.sourceRanges) {
    const icmp = range.includes(':')
      ? { protocol: 'icmpv6' as const, fromPort: 2, toPort: 0 }
      : { protocol: 'icmp' as const, fromPort: 3, toPort: 4 };
    rules.push({ ...icmp, ...cidr(range), description: described.mtu });
  }
  return dedupeRules(rules);
}

/** Keeps the reference-style rules of an adopted load balancer in line on the target Nodes' groups. */
async function ensureReferenceNodeRules(
  spec: LoadBalancerSpec,
  lb: LoadBalancer,
  targets: ReadonlyMap<string, readonly Target[]>,
  pass: Pass,
): Promise<NodeAccess> {
  const { groups, nodes } = await targetNodeGroups(spec, resourceContext(pass));
  if (groups.length === 0) return nodes === 0 ? 'in-line' : 'no-node-groups';
  const subnetIds = new Set(lb.subnets.map((s) => s.subnetId));
  const subnets = await pass.ec2.describeSubnets({ vpcId: pass.deps.vpcId });
  const healthSources = subnets.filter((s) => subnetIds.has(s.subnetId) && s.cidrBlock).map((s) => s.cidrBlock!);
  const desired = referenceNodeRules(spec, targets, healthSources);
  for (const group of groups) {
    const plan = planRules(desired, group.ingress, (rule) => isReferenceRuleOf(rule, lb.name));
    if (plan.revoke.length > 0) await pass.ec2.revokeSecurityGroupIngress(group.groupId, plan.revoke);
    if (plan.authorize.length > 0) await pass.ec2.authorizeSecurityGroupIngress(group.groupId, plan.authorize);
  }
  return 'in-line';
}

/** Removes every reference-style rule of a load balancer from the cluster's groups in the VPC (its deletion). */
export async function revokeReferenceNodeRules(loadBalancerName: string, pass: Pass): Promise<void> {
  const groups = await pass.ec2.findSecurityGroups({
    vpcId: pass.deps.vpcId,
    tags: { [clusterTagKey(pass.deps.clusterName)]: undefined },
  });
  for (const group of groups) {
    const rules = group.ingress.filter((rule) => isReferenceRuleOf(rule, loadBalancerName));
    if (rules.length > 0) await pass.ec2.revokeSecurityGroupIngress(group.groupId, rules);
  }
}
