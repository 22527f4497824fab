import type { Ec2RoutePort, Instance, RouteTable, RouteTarget, RouteTargetSpec } from '../../shared/aws/ec2-port.ts';
import { awsErrorCode } from '../../shared/aws/errors.ts';
import { clusterTagKey, LEGACY_CLUSTER_TAG } from '../../shared/aws/ownership.ts';
import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import type { Clock } from '../../shared/clock.ts';
import { errorMessage, RetryableError, TerminalError, ThrottledError } from '../../shared/errors.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { instanceGraceLeftMs, isTerminating, NEW_INSTANCE_GRACE_MS } from '../../shared/k8s/node-helpers.ts';
import { recordNodeEvent, syncNodeWithConflictRetry } from '../../shared/k8s/node-ops.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { type Cidr, formatCidr, tryParseCidr } from '../../shared/net/cidr.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import { keyString } from '../../shared/queue/message.ts';
import { isRouteTableKey, ROUTE_TABLE_KEY } from '../../shared/queue/route-table-key.ts';
import type { Reconciler } from '../../shared/queue/runner.ts';
import {
  CONDITION_NETWORK_UNAVAILABLE,
  chooseRouteTable,
  isNetworkAvailable,
  type NodePlan,
  type NodeView,
  planRoutes,
  podCidrsOf,
  type RouteDeletion,
  type RoutePlan,
  withNetworkCondition,
} from './plan.ts';

export interface RouteDeps {
  clusterName: string;
  /** ROUTE_TABLE_ID; unset: the one table tagged with the cluster. */
  routeTableId?: string;
  /** CLUSTER_CIDRS: only routes inside these are ours. */
  clusterCidrs: readonly Cidr[];
  /** ROUTE_TABLE_LIMIT: the account's "Routes per route table" quota. */
  routeTableLimit: number;
  kube: KubernetesPort;
  ec2: Ec2RoutePort;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
  /** EC2 writes in flight at once during a pass (default 5): quick convergence without a throttling burst. */
  writeConcurrency?: number;
}

/** EC2 may not show a brand-new instance everywhere yet; within this age a Node's missing instance is retried. */
export const INSTANCE_GRACE_MS = NEW_INSTANCE_GRACE_MS;

/** The Event every route failure on a Node is reported with, as the Kubernetes route controller names it. */
export const EVENT_FAILED_TO_CREATE_ROUTE = 'FailedToCreateRoute';

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

/** What a pass ran into, so that one failing Node neither stops the others nor goes unretried. */
class PassOutcome {
  throttled: ThrottledError | undefined;
  readonly retryable: string[] = [];
  readonly terminal: string[] = [];

  record(err: unknown, what: string): void {
    if (err instanceof ThrottledError) this.throttled ??= err;
    else if (err instanceof TerminalError) this.terminal.push(`${what}: ${err.message}`);
    else this.retryable.push(`${what}: ${errorMessage(err)}`);
  }

  /** Throttling stops the pass (more calls would only be throttled too); everything else runs to the end. */
  get stopped(): boolean {
    return this.throttled !== undefined;
  }

  /** Throttled > retryable > terminal: the key comes back as soon as anything in it is worth retrying. */
  conclude(table: string): void {
    if (this.throttled) throw new ThrottledError(`reconciling routes in ${table}: ${this.throttled.message}`);
    const summary = (list: string[]) =>
      `${list.slice(0, 3).join('; ')}${list.length > 3 ? `; +${list.length - 3} more` : ''}`;
    if (this.retryable.length > 0) {
      throw new RetryableError(
        `reconciling routes in ${table}: ${this.retryable.length} failed: ${summary(this.retryable)}`,
      );
    }
    if (this.terminal.length > 0) {
      throw new TerminalError(
        `reconciling routes in ${table}: ${this.terminal.length} failed: ${summary(this.terminal)}`,
      );
    }
  }
}

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

async function deleteRoute(table: RouteTable, deletion: RouteDeletion, deps: RouteDeps, outcome: PassOutcome) {
  const { destination, reason } = deletion;
  try {
    // not-found: someone removed it first, which is what we wanted.
    // The destination exactly as EC2 printed it, not our canonical spelling of it.
    const result = await deps.ec2.deleteRoute(table.routeTableId, deletion.route.destination);
    deps.metrics.count(MetricName.RoutesDeleted, { reason });
    deps.log.info('route deleted', {
      routeTable: table.routeTableId,
      destination,
      reason,
      target: describeTarget(deletion.route.target),
      alreadyGone: result === 'not-found',
    });
  } catch (err) {
    outcome.record(err, `deleting ${reason} route ${destination}`);
  }
}

/**
 * A Node's routes, then its source/destination check, then its condition. Returns whether a route was
 * created or replaced for it. A failure is reported on the Node (Event, NetworkUnavailable=True) and
 * left to the pass outcome to retry; the other Nodes carry on.
 */
async function applyNodePlan(
  table: RouteTable,
  plan: NodePlan,
  node: Node,
  deps: RouteDeps,
  outcome: PassOutcome,
): Promise<boolean> {
  let changed = false;
  let doing = '';
  try {
    for (const step of plan.routes) {
      if (step.action === 'none') continue;
      doing = `${step.action === 'create' ? 'creating' : 'replacing'} route ${step.destination}`;
      const done = await ensureRoute(table, step.destination, step.target, step.action, plan, deps);
      if (done === 'in place') continue; // another writer got there first, with the same target
      changed = true;
      deps.metrics.count(done === 'replaced' ? MetricName.RoutesReplaced : MetricName.RoutesCreated);
      const was = step.current ? ` (was ${describeTarget(step.current)})` : '';
      deps.log.info(`route ${done}`, {
        node: plan.node,
        routeTable: table.routeTableId,
        destination: step.destination,
        target: describeSpec(step.target),
        previous: step.current ? describeTarget(step.current) : undefined,
      });
      await recordNodeEvent(
        deps,
        node,
        'Normal',
        done === 'replaced' ? 'ReplacedRoute' : 'CreatedRoute',
        `${done === 'replaced' ? 'Replaced' : 'Created'} route ${step.destination} -> ${describeSpec(step.target)} in ${table.routeTableId}${was}`,
      );
    }
    if (plan.disableSourceDestCheck) {
      doing = 'disabling source/destination check';
      const target = plan.disableSourceDestCheck;
      if ('instanceId' in target) await deps.ec2.modifyInstanceSourceDestCheck(target.instanceId, false);
      else await deps.ec2.modifyNetworkInterfaceSourceDestCheck(target.networkInterfaceId, false);
      deps.metrics.count(MetricName.SourceDestChecksDisabled);
      deps.log.info('source/destination check disabled', { node: plan.node, target: describeSpec(target) });
    }
  } catch (err) {
    outcome.record(err, `node ${plan.node}: ${doing}`);
    if (err instanceof ThrottledError) return changed; // not the Node's fault: no Event, no condition change
    const code = awsErrorCode((err as Error).cause);
    deps.metrics.count(MetricName.RouteFailures, { reason: code ?? 'Error' });
    const hint =
      code === 'RouteLimitExceeded'
        ? ` (EC2 says route table ${table.routeTableId} is full: ROUTE_TABLE_LIMIT=${deps.routeTableLimit} is above the account's quota)`
        : '';
    await recordNodeEvent(
      deps,
      node,
      'Warning',
      EVENT_FAILED_TO_CREATE_ROUTE,
      `Could not create route for pod CIDRs of node ${plan.node} (${doing}): ${errorMessage(err)}${hint}`,
    );
    await setNetworkCondition(node, false, deps).catch((e: unknown) =>
      outcome.record(e, `node ${plan.node}: condition`),
    );
    return changed;
  }
  // The routes are in place: failing to say so is retried, but is no reason to report them missing.
  if (plan.markRouteCreated) {
    await setNetworkCondition(node, true, deps).catch((e: unknown) =>
      outcome.record(e, `node ${plan.node}: setting ${CONDITION_NETWORK_UNAVAILABLE}=False`),
    );
  }
  return changed;
}

/**
 * Create or replace one route, safe against another writer: a create that finds the destination taken
 * re-reads the table and replaces only if the route points elsewhere; a replace that finds it gone creates it.
 */
async function ensureRoute(
  table: RouteTable,
  destination: string,
  target: RouteTargetSpec,
  action: 'create' | 'replace',
  plan: NodePlan,
  deps: RouteDeps,
): Promise<'created' | 'replaced' | 'in place'> {
  const id = table.routeTableId;
  if (action === 'create') {
    if ((await deps.ec2.createRoute(id, destination, target)) === 'created') return 'created';
    const current = await reread(id, destination, deps);
    if (current && current.state === 'active' && targetIs(current.target, plan.instanceId, target)) return 'in place';
  }
  if ((await deps.ec2.replaceRoute(id, destination, target)) === 'replaced') return 'replaced';
  if ((await deps.ec2.createRoute(id, destination, target)) === 'created') return 'created';
  throw new RetryableError(`route ${destination} in ${id} keeps changing under us (another writer?)`);
}

async function reread(routeTableId: string, destination: string, deps: RouteDeps) {
  const table = await deps.ec2.describeRouteTable(routeTableId);
  const wanted = tryParseCidr(destination);
  return table?.routes.find((r) => {
    const cidr = r.destinationType === 'prefix-list' ? undefined : tryParseCidr(r.destination);
    return cidr && wanted && formatCidr(cidr) === formatCidr(wanted);
  });
}

/** After a re-read, only an exact match counts as "the other writer did what we wanted". */
function targetIs(current: RouteTarget, instanceId: string, wanted: RouteTargetSpec): boolean {
  return 'instanceId' in wanted
    ? current.instanceId === instanceId
    : current.networkInterfaceId === wanted.networkInterfaceId;
}

async function setNetworkCondition(node: Node, routeCreated: boolean, deps: RouteDeps): Promise<void> {
  const name = node.metadata.name;
  await syncNodeWithConflictRetry(deps.kube, name, node, async (current) => {
    const conditions = withNetworkCondition(
      current.status?.conditions,
      routeCreated,
      new Date(deps.clock.now()).toISOString(),
    );
    if (!conditions) return;
    await deps.kube.patchNodeStatus(
      name,
      { status: { conditions } },
      { resourceVersion: current.metadata.resourceVersion ?? '' },
    );
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

/** Run `fn` over `items`, at most `limit` at once; once throttled, start no more (the key comes back later). */
async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  outcome: PassOutcome,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !outcome.stopped) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function describeSpec(target: RouteTargetSpec): string {
  return 'instanceId' in target ? target.instanceId : target.networkInterfaceId;
}

function describeTarget(target: RouteTarget): string {
  const named = Object.values(target).find((v) => typeof v === 'string' && v !== '');
  return named ?? 'nothing (blackhole)';
}
