import type { Target, TargetHealth } from '../aws/elbv2-port.ts';
import { instanceIdFromProviderId } from '../aws/provider-id.ts';
import { classifyKubernetesError } from '../k8s/errors.ts';
import { loadBalancerNodes } from '../k8s/load-balancer-nodes.ts';
import type { EndpointSlice, Node, ServicePortSpec } from '../k8s/types.ts';
import type { LoadBalancerContext } from './context.ts';
import { codeOf } from './errors.ts';
import type { DesiredTargetGroup, Elbv2LoadBalancerModel } from './model.ts';
import type { EnsuredGroups } from './target-groups.ts';

/** Targets: eligible Nodes' instances or ready endpoints, registered and deregistered by difference only. */

/** Nodes that may take load balancer traffic (shared/k8s/load-balancer-nodes.ts: KEP-3458, readiness does not count). */
export function eligibleNodes(nodes: readonly Node[], selector?: Readonly<Record<string, string | undefined>>): Node[] {
  return loadBalancerNodes(nodes, selector);
}

export function instanceIdsOf(nodes: readonly Node[]): string[] {
  return [...new Set(nodes.flatMap((n) => instanceIdFromProviderId(n.spec?.providerID) ?? []))].sort();
}

/** Instance targets of one target group: every eligible instance on the group's node port. */
export function instanceTargets(group: DesiredTargetGroup, instanceIds: readonly string[]): Target[] {
  return instanceIds.map((id) => ({ id, port: group.port }));
}

/**
 * IP targets of one target group: the ready addresses of the Service's EndpointSlices of the group's family, on the port the
 * slice gives for the Service port (by name, which also resolves named target ports). Terminating and
 * not-ready endpoints are left out; `ready` unset counts as ready.
 */
export function ipTargets(
  group: Pick<DesiredTargetGroup, 'servicePorts' | 'ipAddressType'>,
  slices: readonly EndpointSlice[],
): Target[] {
  const servicePort = servicePortOfGroup(group);
  const protocol = servicePort.protocol ?? 'TCP';
  const targets = new Map<string, Target>();
  for (const slice of slices) {
    if (slice.addressType !== (group.ipAddressType === 'ipv6' ? 'IPv6' : 'IPv4')) continue;
    const port = (slice.ports ?? []).find(
      (p) => (p.name ?? '') === (servicePort.name ?? '') && (p.protocol ?? 'TCP') === protocol,
    )?.port;
    if (port === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false || endpoint.conditions?.terminating === true) continue;
      for (const address of endpoint.addresses) targets.set(`${address}:${port}`, { id: address, port });
    }
  }
  return sortTargets([...targets.values()]);
}

/** The Service port whose endpoints are a target group's IP targets: its TCP one, else its first. */
export function servicePortOfGroup(group: Pick<DesiredTargetGroup, 'servicePorts'>): ServicePortSpec {
  return group.servicePorts.find((p) => (p.protocol ?? 'TCP') === 'TCP') ?? group.servicePorts[0]!;
}

export const targetKey = (t: Target): string => `${t.id}:${t.port}`;

/** By address, then port (in place). */
export function sortTargets(targets: Target[]): Target[] {
  return targets.sort((x, y) => (x.id === y.id ? x.port - y.port : x.id < y.id ? -1 : 1));
}

/**
 * The ready targets and the Pods waiting only for their readiness gate (gated-targets.ts), each once, sorted;
 * `ready` itself when none waits.
 */
export function withWaitingTargets(ready: Target[], waiting: readonly Target[]): Target[] {
  if (waiting.length === 0) return ready;
  return sortTargets([...new Map([...ready, ...waiting].map((t) => [targetKey(t), t])).values()]);
}

const DRAINING: ReadonlySet<string> = new Set(['draining', 'unhealthy.draining']);

/**
 * Register what is missing, deregister what is no longer wanted; draining targets are on their way out and
 * count as absent (one that is wanted again is registered again).
 */
export function planTargets(
  desired: readonly Target[],
  current: readonly TargetHealth[],
): { register: Target[]; deregister: Target[] } {
  const key = (t: Target) => `${t.id}:${t.port}`;
  const registered = new Map(current.filter((h) => !DRAINING.has(h.state)).map((h) => [key(h.target), h.target]));
  const wanted = new Map(desired.map((t) => [key(t), t]));
  return {
    register: [...wanted].filter(([k]) => !registered.has(k)).map(([, t]) => t),
    deregister: [...registered].filter(([k]) => !wanted.has(k)).map(([, t]) => t),
  };
}

/** What the targets are made from: the target groups, whose Pods (IP targets) or which Nodes (instance targets). */
export type TargetModel = Pick<Elbv2LoadBalancerModel, 'identity' | 'targetType' | 'targetGroups' | 'targetNodeLabels'>;

/**
 * The targets of every target group, by desired name: eligible Nodes' running instances, or ready endpoints (and the
 * Pods waiting only for the group's readiness gate, when the context says which: `gateWaitingTargets`).
 */
export async function desiredTargets(model: TargetModel, ctx: LoadBalancerContext): Promise<Map<string, Target[]>> {
  const out = new Map<string, Target[]>();
  if (model.targetType === 'ip') {
    const { namespace, name } = model.identity;
    let slices: EndpointSlice[];
    try {
      slices = await ctx.endpointSlices(namespace, name);
    } catch (err) {
      throw classifyKubernetesError(`listing endpoint slices of ${namespace}/${name}`, err);
    }
    for (const group of model.targetGroups) {
      const ready = ipTargets(group, slices);
      const waiting = ctx.gateWaitingTargets ? await ctx.gateWaitingTargets(group, slices) : [];
      out.set(group.name, withWaitingTargets(ready, waiting));
    }
    return out;
  }
  const nodes = eligibleNodes(await ctx.reads.nodes(), model.targetNodeLabels);
  const instances = await ctx.reads.instances();
  // RegisterTargets refuses an instance that is not running, failing the whole call: leave those out.
  const ids = instanceIdsOf(nodes).filter((id) => instances.get(id)?.state === 'running');
  for (const group of model.targetGroups) out.set(group.name, instanceTargets(group, ids));
  return out;
}

/**
 * How a pass puts instance targets right. `read`: the registered ones are read and the difference applied.
 * Without that read, when the Node-set round says what kind of change it was: `join` (a `node-join` pass: Nodes
 * only joined, so nothing can need deregistering): the wanted targets are registered, RegisterTargets being
 * idempotent; `leave` (a `node-leave` pass: only candidates that stay in the cluster left, so every target that
 * left is a listed Node's instance): the listed Nodes' instances no longer wanted are deregistered,
 * DeregisterTargets of a target not registered being no error; `join-leave`: both, deregistering first (a target
 * group at its quota of targets still takes the newcomers).
 */
export type TargetsMode = 'read' | 'join' | 'leave' | 'join-leave';

export async function ensureTargets(
  model: Pick<Elbv2LoadBalancerModel, 'targetGroups'>,
  groups: EnsuredGroups,
  targets: ReadonlyMap<string, Target[]>,
  ctx: LoadBalancerContext,
  mode: TargetsMode = 'read',
): Promise<void> {
  // Every listed Node's instance, those of Nodes being deleted too (one may have left, then been marked for
  // deletion before this pass). An ID ELB cannot take makes that group's read (`withoutRead`).
  const listed = mode === 'leave' || mode === 'join-leave' ? instanceIdsOf(await ctx.reads.nodes()) : [];
  for (const wanted of model.targetGroups) {
    const { group, created } = groups.get(wanted.name)!;
    const all = targets.get(wanted.name) ?? [];
    if (mode !== 'read' && (await withoutRead(mode, { wanted, arn: group.arn, all, listed }, ctx))) continue;
    const current = created ? [] : await ctx.elbv2.describeTargetHealth(group.arn);
    const plan = planTargets(all, current);
    if (plan.deregister.length > 0) await ctx.elbv2.deregisterTargets(group.arn, plan.deregister);
    if (plan.register.length > 0) await ctx.elbv2.registerTargets(group.arn, plan.register);
  }
}

/**
 * One target group's targets put right without reading them (`TargetsMode`). False when ELB refuses a target it is
 * asked to deregister (`InvalidTarget`: an instance it cannot take, in another VPC or gone from EC2, or an emulator that refuses a
 * target not registered, as moto does), having written nothing: the caller then reads the registered ones.
 */
async function withoutRead(
  mode: Exclude<TargetsMode, 'read'>,
  group: { wanted: DesiredTargetGroup; arn: string; all: readonly Target[]; listed: readonly string[] },
  ctx: LoadBalancerContext,
): Promise<boolean> {
  if (mode !== 'join') {
    const kept = new Set(group.all.map((t) => t.id));
    const left = instanceTargets(
      group.wanted,
      group.listed.filter((id) => !kept.has(id)),
    );
    try {
      if (left.length > 0) await ctx.elbv2.deregisterTargets(group.arn, left);
    } catch (err) {
      if (codeOf(err) === 'InvalidTarget') return false;
      throw err;
    }
  }
  if (mode !== 'leave' && group.all.length > 0) await ctx.elbv2.registerTargets(group.arn, group.all);
  return true;
}
