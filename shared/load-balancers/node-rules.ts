import type { Instance, SecurityGroup, SecurityGroupRule } from '../aws/ec2-port.ts';
import type { Target } from '../aws/elbv2-port.ts';
import { clusterTagKey } from '../aws/ownership.ts';
import type { LoadBalancerContext } from './context.ts';
import type { Elbv2LoadBalancerModel, LoadBalancerModel } from './model.ts';
import {
  DEFAULT_NODE_PORT_RANGE,
  dedupeRules,
  type PortRange,
  planRules,
  transportProtocols,
} from './security-rules.ts';
import { eligibleNodes, instanceIdsOf } from './targets.ts';

/**
 * The description that marks the rules this controller adds to the Nodes' groups (from the backend group).
 * A rule is ours exactly when its description is this: never recognised by port or source, which other
 * people's rules may share.
 */
export function backendRuleDescription(clusterName: string): string {
  return `kubernetes.io/rule/nlb/backend=${clusterName}`;
}

/**
 * Rules a load balancer needs on the Nodes' groups, all from the cluster's backend group: the ports traffic
 * arrives on (node ports, or Pod ports for IP targets) and the health check ports. A port inside the node
 * port range is allowed as the whole range, so instance targets of every Service of the cluster share two
 * rules (TCP and UDP). Referencing the load balancers' group works even with client IP preservation on.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
 */
export function nodeRules(
  spec: Pick<Elbv2LoadBalancerModel, 'identity' | 'targetGroups'>,
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

/** The target Nodes' cluster-tagged security groups (on their instances' primary interfaces), and how many target Nodes there are. */
export async function targetNodeGroups(
  model: Pick<LoadBalancerModel, 'targetNodeLabels'>,
  ctx: LoadBalancerContext,
): Promise<{ groups: SecurityGroup[]; nodes: number }> {
  const nodes = eligibleNodes(await ctx.reads.nodes(), model.targetNodeLabels);
  return { groups: await batchNodeGroups(model.targetNodeLabels, ctx), nodes: nodes.length };
}

/**
 * The cluster-tagged security groups on the primary interfaces of the Nodes that may take a load
 * balancer's traffic (read once per batch): the groups any kind of load balancer must be let into.
 */
export async function batchNodeGroups(
  targetNodeLabels: Readonly<Record<string, string | undefined>> | undefined,
  ctx: LoadBalancerContext,
): Promise<SecurityGroup[]> {
  const instances = await ctx.reads.instances();
  const nodes = eligibleNodes(await ctx.reads.nodes(), targetNodeLabels);
  const primaries = instanceIdsOf(nodes).flatMap((id) => {
    const instance = instances.get(id);
    return instance ? primaryGroups(instance) : [];
  });
  return clusterNodeGroups(primaries, await ctx.reads.nodeSecurityGroups(), ctx.clusterName);
}

/** The security groups of an instance's primary network interface (device index 0). */
export function primaryGroups(instance: Instance): string[] {
  const primary = instance.networkInterfaces.find((e) => e.deviceIndex === 0) ?? instance.networkInterfaces[0];
  return primary?.securityGroupIds ?? [];
}

/**
 * What keeping the Node rules in line found: `no-node-groups` when there are target Nodes but none has a
 * cluster-tagged security group to open (the front end says so: nothing lets its load balancer in).
 */
export type NodeAccess = 'in-line' | 'no-node-groups';

/**
 * Rules on the cluster-tagged security groups of the target Nodes, from the cluster's backend group. They
 * are shared by every load balancer of the cluster, so a reconcile only adds what is missing; the garbage
 * collector removes rules no load balancer needs any more.
 */
export async function ensureNodeRules(
  model: Pick<Elbv2LoadBalancerModel, 'identity' | 'targetGroups' | 'targetNodeLabels'>,
  targets: ReadonlyMap<string, readonly Target[]>,
  backendGroupId: string,
  ctx: LoadBalancerContext,
): Promise<NodeAccess> {
  const { groups, nodes } = await targetNodeGroups(model, ctx);
  if (groups.length === 0) return nodes === 0 ? 'in-line' : 'no-node-groups';
  const desired = nodeRules(model, targets, backendGroupId, ctx.nodePortRange);
  await addNodeRules(groups, desired, ctx);
  return 'in-line';
}

/**
 * Adds the rules a Node group lacks (never removes: other load balancers share them), and records them on the
 * group read, so the other load balancers of the batch see the rules just added. `ctx`: the port to write through.
 */
export async function addNodeRules(
  groups: readonly SecurityGroup[],
  desired: readonly SecurityGroupRule[],
  ctx: Pick<LoadBalancerContext, 'ec2'>,
): Promise<void> {
  for (const group of groups) {
    const { authorize } = planRules(desired, group.ingress, () => false);
    if (authorize.length === 0) continue;
    await ctx.ec2.authorizeSecurityGroupIngress(group.groupId, authorize);
    group.ingress.push(...authorize);
  }
}
