import type { SecurityGroup, SecurityGroupRule } from '../../../shared/aws/ec2-port.ts';
import type { LoadBalancer, Target } from '../../../shared/aws/elbv2-port.ts';
import { clusterTagKey } from '../../../shared/aws/ownership.ts';
import { primaryGroups } from '../batch.ts';
import {
  DEFAULT_NODE_PORT_RANGE,
  dedupeRules,
  type PortRange,
  planRules,
  transportProtocols,
} from '../model/security-rules.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import { eligibleNodes, instanceIdsOf } from '../model/targets.ts';
import { backendRuleDescription } from '../names.ts';
import type { Pass } from '../writes.ts';

/**
 * Rules a load balancer needs on the Nodes' groups, all from the cluster's backend group: the ports traffic
 * arrives on (node ports, or Pod ports for IP targets) and the health check ports. A port inside the node
 * port range is allowed as the whole range, so instance targets of every Service of the cluster share two
 * rules (TCP and UDP). Referencing the load balancers' group works even with client IP preservation on.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
 */
export function nodeRules(
  spec: LoadBalancerSpec,
  targetsByGroup: ReadonlyMap<string, readonly Target[]>,
  backendGroupId: string,
  nodePortRange: PortRange = DEFAULT_NODE_PORT_RANGE,
): SecurityGroupRule[] {
  const description = backendRuleDescription(spec.identity.clusterName);
  const rules: SecurityGroupRule[] = [];
  const add = (protocol: 'tcp' | 'udp', port: number) => {
    const inRange = port >= nodePortRange.from && port <= nodePortRange.to;
    const [fromPort, toPort] = inRange ? [nodePortRange.from, nodePortRange.to] : [port, port];
    rules.push({ protocol, fromPort, toPort, sourceGroupId: backendGroupId, description });
  };
  for (const group of spec.targetGroups) {
    const trafficPorts =
      group.targetType === 'instance'
        ? [group.port]
        : [...new Set((targetsByGroup.get(group.name) ?? []).map((t) => t.port))].sort((a, b) => a - b);
    const healthPorts = group.healthCheck.port === 'traffic-port' ? trafficPorts : [Number(group.healthCheck.port)];
    for (const port of trafficPorts) for (const protocol of transportProtocols(group.protocol)) add(protocol, port);
    // Health checks are TCP, HTTP or HTTPS: always TCP underneath.
    for (const port of healthPorts) add('tcp', port);
  }
  return dedupeRules(rules);
}

/**
 * The same rules for ports given directly (a Classic ELB's instance ports and health check port): TCP from the
 * backend group, a port inside the node port range allowed as the whole range.
 */
export function backendRulesForPorts(
  ports: readonly number[],
  clusterName: string,
  backendGroupId: string,
  nodePortRange: PortRange = DEFAULT_NODE_PORT_RANGE,
): SecurityGroupRule[] {
  const description = backendRuleDescription(clusterName);
  return dedupeRules(
    ports.map((port) => {
      const inRange = port >= nodePortRange.from && port <= nodePortRange.to;
      const [fromPort, toPort] = inRange ? [nodePortRange.from, nodePortRange.to] : [port, port];
      return { protocol: 'tcp' as const, fromPort, toPort, sourceGroupId: backendGroupId, description };
    }),
  );
}

/** Whether a rule on a Node group is one this controller added for the cluster's load balancers. */
export function isOurNodeRule(rule: SecurityGroupRule, clusterName: string): boolean {
  return rule.description === backendRuleDescription(clusterName);
}

/**
 * The Nodes' security groups we may add rules to: on each instance's primary interface, the groups carrying
 * our cluster tag (owned or shared: rules are added, the group is never deleted). Untagged groups are never
 * touched.
 */
export function clusterNodeGroups(
  primaryGroupIds: readonly string[],
  groups: readonly SecurityGroup[],
  clusterName: string,
): SecurityGroup[] {
  const wanted = new Set(primaryGroupIds);
  return groups.filter((g) => wanted.has(g.groupId) && clusterTagKey(clusterName) in g.tags);
}

// ---- keeping the rules in line -----------------------------------------------------------------------------

/** The target Nodes' cluster-tagged security groups (on their instances' primary interfaces), and whether there are target Nodes. */
async function targetNodeGroups(
  spec: LoadBalancerSpec,
  pass: Pass,
): Promise<{ groups: SecurityGroup[]; nodes: number }> {
  const nodes = eligibleNodes(await pass.batch.nodes(), spec.targetNodeLabels);
  return { groups: await batchNodeGroups(spec.targetNodeLabels, pass), nodes: nodes.length };
}

/**
 * The cluster-tagged security groups on the primary interfaces of the Nodes that may take a load
 * balancer's traffic (read once per batch): the groups any kind of load balancer must be let into.
 */
export async function batchNodeGroups(
  targetNodeLabels: Readonly<Record<string, string | undefined>> | undefined,
  pass: Pass,
): Promise<SecurityGroup[]> {
  const instances = await pass.batch.instances();
  const nodes = eligibleNodes(await pass.batch.nodes(), targetNodeLabels);
  const primaries = instanceIdsOf(nodes).flatMap((id) => {
    const instance = instances.get(id);
    return instance ? primaryGroups(instance) : [];
  });
  return clusterNodeGroups(primaries, await pass.batch.nodeSecurityGroups(), pass.deps.clusterName);
}

/** The Warning said when no Node group can be opened; undefined when there are groups or no Nodes. */
function missingGroupWarning(spec: LoadBalancerSpec, pass: Pass, nodes: number): string | undefined {
  if (nodes === 0) return undefined;
  pass.deps.log.warn('no cluster-tagged security group on the target Nodes: no rules added for the load balancer', {
    serviceKey: spec.serviceKey,
  });
  return `No security group tagged ${clusterTagKey(pass.deps.clusterName)} on the target Nodes' primary network interfaces: no rule lets load balancer ${spec.loadBalancerName} reach them; tag the Nodes' security group or allow the traffic yourself`;
}

/**
 * Rules on the cluster-tagged security groups of the target Nodes, from the cluster's backend group. They
 * are shared by every load balancer of the cluster, so a reconcile only adds what is missing; the garbage
 * collector removes rules no Service needs any more. Answers a Warning to say when there is no group to open.
 */
export async function ensureNodeRules(
  spec: LoadBalancerSpec,
  targets: ReadonlyMap<string, readonly Target[]>,
  backendGroupId: string,
  pass: Pass,
): Promise<string | undefined> {
  const { groups, nodes } = await targetNodeGroups(spec, pass);
  if (groups.length === 0) return missingGroupWarning(spec, pass, nodes);
  const desired = nodeRules(spec, targets, backendGroupId, pass.deps.nodePortRange);
  for (const group of groups) {
    const { authorize } = planRules(desired, group.ingress, () => false);
    if (authorize.length === 0) continue;
    await pass.ec2.authorizeSecurityGroupIngress(group.groupId, authorize);
    // Other Services of this batch see the rules just added.
    group.ingress.push(...authorize);
  }
  return undefined;
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
export async function ensureReferenceNodeRules(
  spec: LoadBalancerSpec,
  lb: LoadBalancer,
  targets: ReadonlyMap<string, readonly Target[]>,
  pass: Pass,
): Promise<string | undefined> {
  const { groups, nodes } = await targetNodeGroups(spec, pass);
  if (groups.length === 0) return missingGroupWarning(spec, pass, nodes);
  const subnetIds = new Set(lb.subnets.map((s) => s.subnetId));
  const subnets = await pass.ec2.describeSubnets({ vpcId: pass.deps.vpcId });
  const healthSources = subnets.filter((s) => subnetIds.has(s.subnetId) && s.cidrBlock).map((s) => s.cidrBlock!);
  const desired = referenceNodeRules(spec, targets, healthSources);
  for (const group of groups) {
    const plan = planRules(desired, group.ingress, (rule) => isReferenceRuleOf(rule, lb.name));
    if (plan.revoke.length > 0) await pass.ec2.revokeSecurityGroupIngress(group.groupId, plan.revoke);
    if (plan.authorize.length > 0) await pass.ec2.authorizeSecurityGroupIngress(group.groupId, plan.authorize);
  }
  return undefined;
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
