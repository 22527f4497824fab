import type { Instance, RouteTable } from '../../shared/aws/ec2-port.ts';
import { clusterTagKey, LEGACY_CLUSTER_TAG } from '../../shared/aws/ownership.ts';
import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import { TerminalError } from '../../shared/errors.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { instanceGraceLeftMs, isTerminating, NEW_INSTANCE_GRACE_MS } from '../../shared/k8s/node-helpers.ts';
import { recordNodeEvent } from '../../shared/k8s/node-ops.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { keyString } from '../../shared/queue/message.ts';
import { isRouteTableKey, ROUTE_TABLE_KEY } from '../../shared/queue/route-table-key.ts';
import type { Reconciler } from '../../shared/queue/runner.ts';
import type { RouteDeps } from './deps.ts';
import { forEachLimited, PassOutcome } from './pass-outcome.ts';
import {
  CONDITION_NETWORK_UNAVAILABLE,
  chooseRouteTable,
  isNetworkAvailable,
  type NodeView,
  planRoutes,
  podCidrsOf,
  type RoutePlan,
} from './plan.ts';
import { applyNodePlan, deleteRoute, EVENT_FAILED_TO_CREATE_ROUTE } from './writes.ts';

/** EC2 may not show a brand-new instance everywhere yet; within this age a Node's missing instance is retried. */
export const INSTANCE_GRACE_MS = NEW_INSTANCE_GRACE_MS;

/**
 * Programs the VPC route table for Node pod CIDRs (docs/adr/0003-route-reconciler-key.md). The route
 * table is state every Node shares, so there is one key, `RouteTable/cluster`: every Node change and
 * every resync enqueue it, the FIFO queue coalesces them, and one pass reads the table once, lists the
 * Nodes once, describes their instances in one call per 1000, then creates, replaces and deletes what
 * differs. One key means one pass at a time: no two Lambdas ever write the table concurrently.
 */
export const routeReconciler: Reconciler<RouteDeps> = {
  name: 'route',

  async reconcile(key, deps) {
    if (!isRouteTableKey(key)) {
      // Reconciling the table under another key would run two passes at once; say what producers must send.
      throw new TerminalError(
        `the route queue takes the key ${keyString(ROUTE_TABLE_KEY)} only (got ${keyString(key)}): ` +
          'producers map Node changes to that key',
      );
    }
    await reconcileRouteTable(deps);
    return undefined;
  },
};

async function reconcileRouteTable(deps: RouteDeps): Promise<void> {
  // The table is read before the Nodes: a route found in it was created for a Node that existed
  // before this list, so it cannot look orphaned to us unless that Node is gone by then.
  const table = await resolveRouteTable(deps);
  const nodes = await listNodes(deps);
  const views = await observeNodes(nodes, deps);
  const plan = planRoutes({
    table,
    clusterCidrs: deps.clusterCidrs,
    nodes: views,
    routeLimit: deps.routeTableLimit,
  });
  const byName = new Map(nodes.map((n) => [n.metadata.name, n]));
  const outcome = new PassOutcome();
  const limit = deps.writeConcurrency ?? 5;

  await forEachLimited(plan.deletions, limit, outcome, (deletion) => deleteRoute(table, deletion, deps, outcome));
  const created: string[] = [];
  await forEachLimited(plan.nodes, limit, outcome, async (nodePlan) => {
    const node = byName.get(nodePlan.node)!;
    if (await applyNodePlan(table, nodePlan, node, deps, outcome)) created.push(nodePlan.node);
  });
  await reportProblems(plan, byName, deps, outcome);
  await reportUsage(table, plan, created, byName, deps);
  // A pass that changed nothing is the common case (every resync): keep it out of the INFO log.
  const changed = created.length > 0 || plan.deletions.length > 0 || plan.problems.size > 0;
  (changed ? deps.log.info : deps.log.debug).call(deps.log, 'routes reconciled', {
    routeTable: table.routeTableId,
    nodes: plan.nodes.length,
    created: created.length,
    deleted: plan.deletions.length,
    problems: plan.problems.size,
    routes: plan.usage.routes,
  });
  outcome.conclude(table.routeTableId);
}

async function resolveRouteTable(deps: RouteDeps): Promise<RouteTable> {
  if (deps.routeTableId) {
    const table = await deps.ec2.describeRouteTable(deps.routeTableId);
    if (table) return table;
    return failWithoutTable(deps, `route table ${deps.routeTableId} (ROUTE_TABLE_ID) does not exist`);
  }
  const byTag = await deps.ec2.findRouteTablesByTag({ key: clusterTagKey(deps.clusterName) });
  // The legacy tag costs a call only in clusters that have no table with the current one.
  const byLegacyTag =
    byTag.length === 0 ? await deps.ec2.findRouteTablesByTag({ key: LEGACY_CLUSTER_TAG, value: deps.clusterName }) : [];
  const choice = chooseRouteTable(byTag, byLegacyTag, deps.clusterName);
  if (choice.ok) return choice.table;
  return failWithoutTable(deps, choice.message);
}

/**
 * No usable table is a setup mistake a quick retry cannot fix: the key is acknowledged (counted as a
 * terminal error, retried by the next Node change or resync), and every Node waiting for a route is told why.
 */
async function failWithoutTable(deps: RouteDeps, message: string): Promise<never> {
  deps.metrics.count(MetricName.RouteFailures, { reason: 'NoRouteTable' });
  const nodes = await listNodes(deps).catch(() => [] as Node[]);
  const waiting = nodes.filter(
    (n) =>
      podCidrsOf(n.spec).length > 0 &&
      !isTerminating(n) &&
      !isNetworkAvailable(n.status?.conditions?.find((c) => c.type === CONDITION_NETWORK_UNAVAILABLE)),
  );
  await Promise.all(waiting.map((n) => recordNodeEvent(deps, n, 'Warning', EVENT_FAILED_TO_CREATE_ROUTE, message)));
  throw new TerminalError(`finding the route table: ${message}`);
}

async function listNodes(deps: RouteDeps): Promise<Node[]> {
  try {
    return await deps.kube.listNodes();
  } catch (err) {
    throw classifyKubernetesError('listing nodes', err);
  }
}

/** One DescribeInstances (per 1000) for every Node that needs a route: the only EC2 read besides the table. */
async function observeNodes(nodes: readonly Node[], deps: RouteDeps): Promise<NodeView[]> {
  const withCidrs = nodes.filter((n) => podCidrsOf(n.spec).length > 0);
  const ids = withCidrs.flatMap((n) => {
    const id = instanceIdFromProviderId(n.spec?.providerID);
    return id && !isTerminating(n) ? [id] : [];
  });
  const instances = ids.length > 0 ? await deps.ec2.describeInstances(ids) : new Map<string, Instance>();
  const now = deps.clock.now();
  return withCidrs.map((node) => {
    const instanceId = instanceIdFromProviderId(node.spec?.providerID);
    return {
      name: node.metadata.name,
      podCidrs: podCidrsOf(node.spec),
      instanceId,
      instance: instanceId ? instances.get(instanceId) : undefined,
      terminating: isTerminating(node),
      instanceMayAppear: instanceGraceLeftMs(node, now) > 0,
      networkUnavailable: node.status?.conditions?.find((c) => c.type === CONDITION_NETWORK_UNAVAILABLE),
    };
  });
}

/** Every Node that gets no route is told why: one Warning Event per problem, and a metric by reason. */
async function reportProblems(plan: RoutePlan, byName: Map<string, Node>, deps: RouteDeps, outcome: PassOutcome) {
  for (const [name, problems] of plan.problems) {
    const node = byName.get(name);
    for (const problem of problems) {
      deps.metrics.count(MetricName.RouteFailures, { reason: problem.reason });
      deps.log.warn('node gets no route', { node: name, reason: problem.reason, detail: problem.message });
      if (node) await recordNodeEvent(deps, node, 'Warning', EVENT_FAILED_TO_CREATE_ROUTE, problem.message);
      if (problem.retry) outcome.retryable.push(`node ${name}: ${problem.message}`);
    }
  }
}

/**
 * The table's fill level is a metric on every pass (graph and alarm on it); near the quota, the Nodes
 * that just took a slot get a Warning Event, so the cluster says so before a Node is left without a route.
 */
async function reportUsage(
  table: RouteTable,
  plan: RoutePlan,
  created: readonly string[],
  byName: Map<string, Node>,
  deps: RouteDeps,
) {
  const { usage } = plan;
  const dims = { routeTable: table.routeTableId };
  deps.metrics.count(MetricName.RouteTableRoutes, dims, usage.routes);
  if (!usage.nearLimit) return;
  deps.metrics.count(MetricName.RouteTableNearLimit, dims);
  const message =
    `route table ${table.routeTableId} holds ${usage.routes} of ${usage.limit} routes (ROUTE_TABLE_LIMIT); ` +
    'Nodes beyond the limit get no route: raise the "Routes per route table" quota, then ROUTE_TABLE_LIMIT';
  deps.log.warn('route table near its limit', { ...dims, routes: usage.routes, limit: usage.limit });
  for (const name of created) {
    const node = byName.get(name);
    if (node) await recordNodeEvent(deps, node, 'Warning', 'RouteTableNearLimit', message);
  }
}
