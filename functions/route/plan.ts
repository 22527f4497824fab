import type { Instance, Route, RouteTable, RouteTarget, RouteTargetSpec } from '../../shared/aws/ec2-port.ts';
import { clusterTagKey, LEGACY_CLUSTER_TAG } from '../../shared/aws/ownership.ts';
import { CONDITION_NETWORK_UNAVAILABLE, podCidrsOf } from '../../shared/k8s/node-helpers.ts';
import type { NodeCondition } from '../../shared/k8s/types.ts';
import { type Cidr, cidrContains, formatCidr, tryParseCidr } from '../../shared/net/cidr.ts';

/**
 * The route controller's decisions, as pure functions of what was observed (docs/reference.md, "Routes").
 * A route is ours when it was added by somebody (origin CreateRoute, so never the VPC's local route
 * nor a propagated one), its destination lies inside a cluster CIDR, and it points at a machine (an
 * instance or a network interface) or nowhere any more (blackhole). Routes to gateways, peering
 * connections or transit gateways are never ours, whatever their destination.
 */

// Shared with the relay, which forwards a Node change only when something read here changed.
export { CONDITION_NETWORK_UNAVAILABLE, podCidrsOf };

export const REASON_ROUTE_CREATED = 'RouteCreated';
export const REASON_NO_ROUTE_CREATED = 'NoRouteCreated';
/** The messages the Kubernetes route controller writes, so dashboards and runbooks keep matching. */
export const MESSAGE_ROUTE_CREATED = 'RouteController created a route';
export const MESSAGE_NO_ROUTE_CREATED = 'RouteController failed to create a route';

export interface NodeView {
  name: string;
  /** `spec.podCIDRs`, else `spec.podCIDR`; empty until the IPAM controller assigns one. */
  podCidrs: readonly string[];
  /** From `spec.providerID`; undefined until the Node is initialized. */
  instanceId?: string;
  /** As DescribeInstances gave it; undefined when EC2 did not return it. */
  instance?: Instance;
  /** A Node being deleted keeps its routes (its pods may still drain) but gets no new ones. */
  terminating: boolean;
  /** Whether an instance EC2 does not know may still appear (eventual consistency for a new Node). */
  instanceMayAppear: boolean;
  networkUnavailable?: NodeCondition;
}

export type ProblemReason =
  | 'InvalidPodCIDR'
  | 'PodCIDROutsideClusterCIDR'
  | 'DuplicatePodCIDR'
  | 'InstanceNotFound'
  | 'InstanceNotRunning'
  | 'InstanceInOtherVpc'
  | 'RouteConflict'
  | 'RouteTableFull';

/** Why a Node gets no route this pass; `retry`: worth another pass soon, not just at the next change or resync. */
export interface NodeProblem {
  reason: ProblemReason;
  message: string;
  retry: boolean;
}

export interface RouteStep {
  destination: string;
  target: RouteTargetSpec;
  action: 'none' | 'create' | 'replace';
  /** The target the route has now, for `replace`. */
  current?: RouteTarget;
}

export interface NodePlan {
  node: string;
  instanceId: string;
  routes: RouteStep[];
  /** Where to turn source/destination checking off; undefined when it is off already. */
  disableSourceDestCheck?: RouteTargetSpec;
  /** Set NetworkUnavailable=False/RouteCreated once every step has succeeded (false: it already is). */
  markRouteCreated: boolean;
}

export interface RouteDeletion {
  destination: string;
  reason: 'blackhole' | 'orphan';
  route: Route;
}

export interface RouteTableUsage {
  /** Non-propagated routes once this plan has run (the local route included, as the quota counts it). */
  routes: number;
  limit: number;
  /** At or above this many routes the table is reported as nearly full. */
  warnAt: number;
  nearLimit: boolean;
}

export interface RoutePlan {
  nodes: NodePlan[];
  deletions: RouteDeletion[];
  problems: Map<string, NodeProblem[]>;
  usage: RouteTableUsage;
}

export interface PlanInput {
  table: RouteTable;
  clusterCidrs: readonly Cidr[];
  nodes: readonly NodeView[];
  routeLimit: number;
}

export function planRoutes(input: PlanInput): RoutePlan {
  const { table, clusterCidrs } = input;
  const problems = new Map<string, NodeProblem[]>();
  const problem = (node: string, reason: ProblemReason, message: string, retry = false) => {
    problems.set(node, [...(problems.get(node) ?? []), { reason, message, retry }]);
  };

  const routesByDestination = new Map<string, Route>();
  for (const route of table.routes) {
    const cidr = route.destinationType === 'prefix-list' ? undefined : tryParseCidr(route.destination);
    if (cidr) routesByDestination.set(formatCidr(cidr), route);
  }

  // Every pod CIDR an existing Node holds is claimed, whatever state its instance is in: a claimed
  // route is never deleted as an orphan. The first Node by name wins a CIDR two Nodes hold.
  const claims = new Map<string, string>();
  const nodeCidrs = new Map<string, string[]>();
  const sorted = [...input.nodes].sort((a, b) => a.name.localeCompare(b.name));
  for (const node of sorted) {
    const mine: string[] = [];
    for (const text of node.podCidrs) {
      const cidr = tryParseCidr(text);
      if (!cidr) {
        problem(node.name, 'InvalidPodCIDR', `pod CIDR ${JSON.stringify(text)} is not a CIDR block; no route`);
        continue;
      }
      const destination = formatCidr(cidr);
      if (!clusterCidrs.some((outer) => cidrContains(outer, cidr))) {
        problem(
          node.name,
          'PodCIDROutsideClusterCIDR',
          `pod CIDR ${destination} is outside the cluster CIDRs (${clusterCidrs.map(formatCidr).join(', ')}); ` +
            'no route is created for it (check CLUSTER_CIDRS against --cluster-cidr)',
        );
        continue;
      }
      const holder = claims.get(destination);
      if (holder !== undefined) {
        problem(node.name, 'DuplicatePodCIDR', `pod CIDR ${destination} is also assigned to node ${holder}; no route`);
        continue;
      }
      claims.set(destination, node.name);
      mine.push(destination);
    }
    nodeCidrs.set(node.name, mine);
  }

  const plans: NodePlan[] = [];
  for (const node of sorted) {
    const mine = nodeCidrs.get(node.name) ?? [];
    if (mine.length === 0 || node.terminating || !node.instanceId) continue;
    const instance = node.instance;
    if (!instance) {
      problem(
        node.name,
        'InstanceNotFound',
        `instance ${node.instanceId} not found in EC2${node.instanceMayAppear ? ' (yet); will retry' : ''}`,
        node.instanceMayAppear,
      );
      continue;
    }
    if (!ROUTABLE_STATES.has(instance.state)) {
      problem(node.name, 'InstanceNotRunning', `instance ${instance.instanceId} is ${instance.state}; no route`);
      continue;
    }
    if (table.vpcId && instance.vpcId && table.vpcId !== instance.vpcId) {
      problem(
        node.name,
        'InstanceInOtherVpc',
        `instance ${instance.instanceId} is in ${instance.vpcId}, route table ${table.routeTableId} in ${table.vpcId}`,
      );
      continue;
    }
    const target = routeTargetFor(instance);
    const steps: RouteStep[] = [];
    for (const destination of mine) {
      const route = routesByDestination.get(destination);
      if (!route) {
        steps.push({ destination, target, action: 'create' });
      } else if (route.origin !== 'CreateRoute') {
        problem(
          node.name,
          'RouteConflict',
          `pod CIDR ${destination} collides with a route EC2 manages (origin ${route.origin}) in ${table.routeTableId}`,
        );
      } else if (route.state === 'active' && pointsAt(route.target, instance, target)) {
        steps.push({ destination, target, action: 'none' });
      } else {
        steps.push({ destination, target, action: 'replace', current: route.target });
      }
    }
    const check = sourceDestCheckOf(instance);
    plans.push({
      node: node.name,
      instanceId: instance.instanceId,
      routes: steps,
      // Same target rule as routes: by instance when it has one interface, else its primary interface.
      disableSourceDestCheck: check === true ? target : undefined,
      markRouteCreated: !isNetworkAvailable(node.networkUnavailable),
    });
  }

  const replacing = new Set(
    plans.flatMap((p) => p.routes.filter((r) => r.action === 'replace').map((r) => r.destination)),
  );
  const deletions: RouteDeletion[] = [];
  for (const [destination, route] of routesByDestination) {
    if (!isOurs(route, destination, clusterCidrs) || replacing.has(destination)) continue;
    if (route.state === 'blackhole') deletions.push({ destination, reason: 'blackhole', route });
    else if (!claims.has(destination)) deletions.push({ destination, reason: 'orphan', route });
  }

  // The quota counts every route but the propagated ones. Creates beyond it are refused here, in Node
  // name order, rather than sent for EC2 to refuse one by one.
  const counted = table.routes.filter((r) => r.origin !== 'EnableVgwRoutePropagation').length;
  let room = input.routeLimit - (counted - deletions.length);
  const nodes = plans.map((plan) => {
    const routes = plan.routes.filter((step) => {
      if (step.action !== 'create') return true;
      if (room > 0) {
        room--;
        return true;
      }
      problem(
        plan.node,
        'RouteTableFull',
        `route table ${table.routeTableId} is full (${input.routeLimit} routes, ROUTE_TABLE_LIMIT); no route for ` +
          `${step.destination}: raise the "Routes per route table" quota and ROUTE_TABLE_LIMIT`,
      );
      return false;
    });
    // A Node with any problem is not marked as routed; the routes it can have still go ahead.
    return { ...plan, routes, markRouteCreated: plan.markRouteCreated && !problems.has(plan.node) };
  });
  const creates = nodes.reduce((n, p) => n + p.routes.filter((r) => r.action === 'create').length, 0);
  const after = counted - deletions.length + creates;
  const warnAt = warningLevel(input.routeLimit);
  return {
    nodes,
    deletions,
    problems,
    usage: { routes: after, limit: input.routeLimit, warnAt, nearLimit: after >= warnAt },
  };
}

/** Warn with a tenth of the quota left (at least one route): 45 of the default 50. */
export function warningLevel(limit: number): number {
  return limit - Math.max(1, Math.ceil(limit / 10));
}

/** Pending, running, stopping and stopped instances keep their interfaces: a route to them is valid. */
const ROUTABLE_STATES: ReadonlySet<Instance['state']> = new Set(['pending', 'running', 'stopping', 'stopped']);

function isOurs(route: Route, destination: string, clusterCidrs: readonly Cidr[]): boolean {
  if (route.origin !== 'CreateRoute') return false;
  const cidr = tryParseCidr(destination);
  if (!cidr || !clusterCidrs.some((outer) => cidrContains(outer, cidr))) return false;
  return route.state === 'blackhole' || Boolean(route.target.instanceId || route.target.networkInterfaceId);
}

function attachedInterfaces(instance: Instance) {
  return instance.networkInterfaces.filter((eni) => eni.status === 'in-use');
}

function primaryInterface(instance: Instance) {
  return attachedInterfaces(instance).find((eni) => eni.deviceIndex === 0);
}

/**
 * EC2 refuses a route (and a source/dest check change) by instance ID when the instance has several
 * network interfaces ("There are multiple interfaces attached"); those get the primary interface, where
 * traffic to the instance's primary address arrives. Single-interface instances keep the reference's
 * instance target.
 */
export function routeTargetFor(instance: Instance): RouteTargetSpec {
  const primary = primaryInterface(instance);
  if (attachedInterfaces(instance).length > 1 && primary) return { networkInterfaceId: primary.networkInterfaceId };
  return { instanceId: instance.instanceId };
}

/** The check that matters is the primary interface's (the instance attribute mirrors it). */
export function sourceDestCheckOf(instance: Instance): boolean | undefined {
  if (attachedInterfaces(instance).length > 1)
    return primaryInterface(instance)?.sourceDestCheck ?? instance.sourceDestCheck;
  return instance.sourceDestCheck;
}

/** Whether a route's current target is where we want it: the instance, or its wanted interface. */
export function pointsAt(current: RouteTarget, instance: Instance, wanted: RouteTargetSpec): boolean {
  if ('networkInterfaceId' in wanted) return current.networkInterfaceId === wanted.networkInterfaceId;
  if (current.instanceId) return current.instanceId === instance.instanceId;
  const only = attachedInterfaces(instance);
  return only.length === 1 && current.networkInterfaceId === only[0]!.networkInterfaceId;
}

/**
 * Like the Kubernetes route controller, a NetworkUnavailable=False written by anyone (a CNI plugin,
 * an earlier pass) is left alone: rewriting its reason would make two writers fight over it.
 */
export function isNetworkAvailable(condition: NodeCondition | undefined): boolean {
  return condition?.status === 'False';
}

/**
 * The Node's conditions with NetworkUnavailable set, or undefined when it already has that status.
 * The whole list is returned because a JSON merge patch replaces arrays; the write is guarded by
 * resourceVersion, so a condition kubelet changed meanwhile is never lost.
 */
export function withNetworkCondition(
  conditions: readonly NodeCondition[] | undefined,
  routeCreated: boolean,
  now: string,
): NodeCondition[] | undefined {
  const list = conditions ?? [];
  const status = routeCreated ? 'False' : 'True';
  const current = list.find((c) => c.type === CONDITION_NETWORK_UNAVAILABLE);
  if (current?.status === status) return undefined;
  const next: NodeCondition = {
    type: CONDITION_NETWORK_UNAVAILABLE,
    status,
    reason: routeCreated ? REASON_ROUTE_CREATED : REASON_NO_ROUTE_CREATED,
    message: routeCreated ? MESSAGE_ROUTE_CREATED : MESSAGE_NO_ROUTE_CREATED,
    lastTransitionTime: now,
    lastHeartbeatTime: now,
  };
  return current ? list.map((c) => (c === current ? next : c)) : [...list, next];
}

export type TableChoice = { ok: true; table: RouteTable } | { ok: false; message: string };

/**
 * The route table from tag discovery: exactly one table may carry the cluster tag. Tables found by the
 * current tag are preferred; the legacy `KubernetesCluster` tag is only consulted when none has it.
 */
export function chooseRouteTable(
  byTag: readonly RouteTable[],
  byLegacyTag: readonly RouteTable[],
  clusterName: string,
): TableChoice {
  const found = byTag.length > 0 ? byTag : byLegacyTag;
  const tag = `${clusterTagKey(clusterName)} (or ${LEGACY_CLUSTER_TAG}=${clusterName})`;
  if (found.length === 1) return { ok: true, table: found[0]! };
  if (found.length === 0) {
    return {
      ok: false,
      message: `no route table is tagged ${tag}: tag the table pod routes belong in, or set ROUTE_TABLE_ID`,
    };
  }
  const ids = found.map((t) => t.routeTableId).sort();
  return {
    ok: false,
    message: `${found.length} route tables are tagged ${tag} (${ids.join(', ')}); the route controller manages exactly one: set ROUTE_TABLE_ID to choose`,
  };
}
