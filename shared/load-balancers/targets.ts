import type { Target, TargetHealth } from '../../../shared/aws/elbv2-port.ts';
import { classifyKubernetesError } from '../../../shared/k8s/errors.ts';
import type { EndpointSlice } from '../../../shared/k8s/types.ts';
import type { DesiredTargetGroup, LoadBalancerSpec } from '../model/spec.ts';
import { eligibleNodes, instanceIdsOf, instanceTargets, ipTargets } from '../model/targets.ts';
import { codeOf } from '../resources.ts';
import type { Pass } from '../writes.ts';
import type { EnsuredGroups } from './target-groups.ts';

/** Targets: eligible Nodes' instances or ready endpoints, registered and deregistered by difference only. */

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

/** The targets of every target group, by desired name: eligible Nodes' running instances, or ready endpoints. */
export async function desiredTargets(spec: LoadBalancerSpec, pass: Pass): Promise<Map<string, Target[]>> {
  const out = new Map<string, Target[]>();
  if (spec.targetType === 'ip') {
    let slices: EndpointSlice[];
    try {
      slices = await pass.deps.kube.listEndpointSlices(spec.identity.namespace, spec.identity.name);
    } catch (err) {
      throw classifyKubernetesError(`listing endpoint slices of ${spec.serviceKey}`, err);
    }
    for (const group of spec.targetGroups) out.set(group.name, ipTargets(group, slices));
    return out;
  }
  const nodes = eligibleNodes(await pass.batch.nodes(), spec.targetNodeLabels);
  const instances = await pass.batch.instances();
  // RegisterTargets refuses an instance that is not running, failing the whole call: leave those out.
  const ids = instanceIdsOf(nodes).filter((id) => instances.get(id)?.state === 'running');
  for (const group of spec.targetGroups) out.set(group.name, instanceTargets(group, ids));
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
  spec: LoadBalancerSpec,
  groups: EnsuredGroups,
  targets: ReadonlyMap<string, Target[]>,
  pass: Pass,
  mode: TargetsMode = 'read',
): Promise<void> {
  // Every listed Node's instance, those of Nodes being deleted too (one may have left, then been marked for
  // deletion before this pass). An ID ELB cannot take makes that group's read (`withoutRead`).
  const listed = mode === 'leave' || mode === 'join-leave' ? instanceIdsOf(await pass.batch.nodes()) : [];
  for (const wanted of spec.targetGroups) {
    const { group, created } = groups.get(wanted.name)!;
    const all = targets.get(wanted.name) ?? [];
    if (mode !== 'read' && (await withoutRead(mode, { wanted, arn: group.arn, all, listed }, pass))) continue;
    const current = created ? [] : await pass.elbv2.describeTargetHealth(group.arn);
    const plan = planTargets(all, current);
    if (plan.deregister.length > 0) await pass.elbv2.deregisterTargets(group.arn, plan.deregister);
    if (plan.register.length > 0) await pass.elbv2.registerTargets(group.arn, plan.register);
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
  pass: Pass,
): Promise<boolean> {
  if (mode !== 'join') {
    const kept = new Set(group.all.map((t) => t.id));
    const left = instanceTargets(
      group.wanted,
      group.listed.filter((id) => !kept.has(id)),
    );
    try {
      if (left.length > 0) await pass.elbv2.deregisterTargets(group.arn, left);
    } catch (err) {
      if (codeOf(err) === 'InvalidTarget') return false;
      throw err;
    }
  }
  if (mode !== 'leave' && group.all.length > 0) await pass.elbv2.registerTargets(group.arn, group.all);
  return true;
}
