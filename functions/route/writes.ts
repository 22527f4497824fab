import type { RouteTable, RouteTarget, RouteTargetSpec } from '../../shared/aws/ec2-port.ts';
import { awsErrorCode } from '../../shared/aws/errors.ts';
import { errorMessage, RetryableError, ThrottledError } from '../../shared/errors.ts';
import { recordNodeEvent, syncNodeWithConflictRetry } from '../../shared/k8s/node-ops.ts';
import type { Node } from '../../shared/k8s/types.ts';
import { formatCidr, tryParseCidr } from '../../shared/net/cidr.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import type { RouteDeps } from './deps.ts';
import type { PassOutcome } from './pass-outcome.ts';
import { CONDITION_NETWORK_UNAVAILABLE, type NodePlan, type RouteDeletion, withNetworkCondition } from './plan.ts';

/*
 * The route controller's writes, one route or one Node at a time, as the pass (reconciler.ts) carries out its plan:
 * each is safe against another writer and reports its failure on the Node and in the pass outcome.
 */

/** The Event every route failure on a Node is reported with, as the Kubernetes route controller names it. */
export const EVENT_FAILED_TO_CREATE_ROUTE = 'FailedToCreateRoute';

export async function deleteRoute(table: RouteTable, deletion: RouteDeletion, deps: RouteDeps, outcome: PassOutcome) {
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
export async function applyNodePlan(
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

function describeSpec(target: RouteTargetSpec): string {
  return 'instanceId' in target ? target.instanceId : target.networkInterfaceId;
}

function describeTarget(target: RouteTarget): string {
  const named = Object.values(target).find((v) => typeof v === 'string' && v !== '');
  return named ?? 'nothing (blackhole)';
}
