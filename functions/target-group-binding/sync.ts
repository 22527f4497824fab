import type { Target, TargetGroup, TargetHealth } from '../../shared/aws/elbv2-port.ts';
import { errorMessage, TerminalError } from '../../shared/errors.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import { STACK_LABELS, type TargetGroupBinding, TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import type { Pod, ServicePortSpec } from '../../shared/k8s/types.ts';
import {
  gateWaitingTargets,
  hasNotReadyEndpoints,
  waitsOnlyForGate,
} from '../../shared/load-balancers/gated-targets.ts';
import { applyTargetChanges } from '../../shared/load-balancers/registration.ts';
import { planTargets, targetKey } from '../../shared/load-balancers/targets.ts';
import type { ReconcileResult } from '../../shared/queue/runner.ts';
import type { TgbDeps } from './deps.ts';
import { anyGated, updateGates } from './gates.ts';
import { changeFinalizer, EVENT, fillSpec, recordBindingEvent, setAnnotations, setStatus } from './kube.ts';
import type { NetworkProblem } from './networking.ts';
import { type Backend, observeBackend, readPods, readService } from './observe.ts';
import { formatRecord, parseRecord, REGISTERED_TARGETS_ANNOTATION } from './record.ts';
import { checkBinding, findTargetGroup, type SpecProblem } from './resolve.ts';
import { reconcileNetworking, targetInterfaces } from './security.ts';
import { planBindingTargets, servicePortOf } from './targets.ts';

/**
 * One pass over a live binding: its target group found and checked, the missing fields filled in, the finalizer,
 * the targets by difference, the networking rules, the readiness gates, the status. A pass over a binding in order
 * makes reads only.
 */

/**
 * Whether the binding is a stack binding, made for a Service or an Ingress group by its controller (the reference's,
 * or ours: shared/k8s/stack-bindings.ts), which registers the targets.
 */
export function isStackBinding(binding: TargetGroupBinding): boolean {
  return STACK_LABELS.some((l) => l in (binding.metadata.labels ?? {}));
}

export async function syncBinding(initial: TargetGroupBinding, deps: TgbDeps): Promise<ReconcileResult | undefined> {
  let binding = initial;
  const lookup = await findTargetGroup(binding, deps.elbv2);
  if ('problem' in lookup) return refuse(binding, [lookup.problem], deps);
  const group = lookup.group;
  if (isStackBinding(binding)) return gatesOnly(binding, group, deps);
  const checked = checkBinding(binding, group, deps.vpcId);
  if (checked.problems.length > 0) return refuse(binding, checked.problems, deps);
  let writes = 0;
  if (Object.keys(checked.fill).length > 0) {
    binding = await fillSpec(deps, binding, checked.fill);
    writes++;
  }
  try {
    const added = await changeFinalizer(deps, binding, TGB_FINALIZER, 'add');
    if (!added) return undefined;
    if (added !== binding) writes++;
    binding = added;
  } catch (err) {
    await recordBindingEvent(deps, binding, 'Warning', EVENT.failedAddFinalizer, errorMessage(err));
    throw err;
  }
  const shape = { targetType: checked.targetType, ipAddressType: group.ipAddressType };
  const backend = await observeBackend(binding, shape, deps);
  const current = await deps.elbv2.describeTargetHealth(group.arn);
  if (backend.kind === 'missing') {
    await recordBindingEvent(deps, binding, 'Warning', EVENT.backendNotFound, backend.message);
    writes += (await writeTargets(binding, group, [], current, deps)).writes;
    await setStatus(deps, binding, { status: 'False', reason: EVENT.backendNotFound, message: backend.message });
    return undefined;
  }
  if (backend.kind === 'problem') {
    return refuse(binding, [{ field: backend.field, message: backend.message, reason: 'InvalidSpec' }], deps);
  }
  const written = await writeTargets(binding, group, backend.targets, current, deps);
  binding = written.binding;
  writes += written.writes;
  const network = await networking(binding, backend, current, deps, checked.targetType);
  writes += network.writes;
  const gates = await gatesFor(binding, group, backend, written.writes > 0 ? undefined : current, deps);
  writes += gates.writes;
  const problem = network.failed ?? network.problems[0]?.message;
  const statusWritten = await setStatus(
    deps,
    binding,
    problem
      ? { status: 'False', reason: EVENT.failedNetwork, message: problem }
      : { status: 'True', reason: 'Reconciled', message: `${backend.targets.length} targets registered` },
  );
  if (statusWritten) writes++;
  if (writes > 0) await recordBindingEvent(deps, binding, 'Normal', EVENT.reconciled, 'Successfully reconciled');
  return gates.waiting ? { requeueAfterSeconds: deps.readinessRequeueSeconds } : undefined;
}

/** A binding that cannot be served: a False condition, and a Warning naming each field. Nothing else is written. */
async function refuse(binding: TargetGroupBinding, problems: readonly SpecProblem[], deps: TgbDeps) {
  for (const p of problems) {
    await recordBindingEvent(deps, binding, 'Warning', EVENT.failedReconcile, `${p.field}: ${p.message}`);
  }
  const first = problems[0]!;
  await setStatus(deps, binding, {
    status: 'False',
    reason: first.reason,
    message: `${first.field}: ${first.message}`,
  });
  return undefined;
}

/**
 * The targets by difference. A multi-cluster binding deregisters only what it recorded as its own; the record is
 * widened before registering (a crash between the two never leaves a target of ours unrecorded) and narrowed after.
 * A binding the reference served (the finalizer, no record yet) counts the wanted targets already there as its own.
 */
async function writeTargets(
  binding: TargetGroupBinding,
  group: TargetGroup,
  wanted: readonly Target[],
  current: readonly TargetHealth[],
  deps: TgbDeps,
): Promise<{ binding: TargetGroupBinding; writes: number }> {
  const multiCluster = binding.spec.multiClusterTargetGroup === true;
  const annotation = binding.metadata.annotations?.[REGISTERED_TARGETS_ANNOTATION];
  const wantedKeys = new Set(wanted.map(targetKey));
  const recorded = parseRecord(annotation) ?? current.map((h) => h.target).filter((t) => wantedKeys.has(targetKey(t)));
  const plan = planBindingTargets(wanted, current, { multiCluster, recorded });
  let writes = 0;
  let now = binding;
  if (multiCluster && plan.register.length > 0) {
    const widened = formatRecord([...recorded, ...plan.register]);
    if (widened !== annotation) {
      now = await setAnnotations(deps, now, { [REGISTERED_TARGETS_ANNOTATION]: widened });
      writes++;
    }
  }
  writes += await applyTargetChanges(deps, group.arn, plan);
  const final = formatRecord(wanted);
  if (multiCluster && final !== now.metadata.annotations?.[REGISTERED_TARGETS_ANNOTATION]) {
    now = await setAnnotations(deps, now, { [REGISTERED_TARGETS_ANNOTATION]: final });
    writes++;
  }
  return { binding: now, writes };
}

/**
 * The rules on the targets' groups, looked at when the binding asks for rules or its spec changed since the last
 * pass (so that rules it no longer asks for go); problems are a `FailedNetworkReconcile` Warning, the targets kept.
 */
async function networking(
  binding: TargetGroupBinding,
  backend: Extract<Backend, { kind: 'found' }>,
  current: readonly TargetHealth[],
  deps: TgbDeps,
  targetType: 'instance' | 'ip',
): Promise<{ writes: number; problems: NetworkProblem[]; failed?: string }> {
  const asks = (binding.spec.networking?.ingress ?? []).length > 0;
  const changed = binding.status?.observedGeneration !== binding.metadata.generation;
  if (!asks && !changed) return { writes: 0, problems: [] };
  const keys = new Set(backend.targets.map(targetKey));
  const targets = [...backend.targets, ...current.map((h) => h.target).filter((t) => !keys.has(targetKey(t)))];
  let result: { writes: number; problems: NetworkProblem[] };
  try {
    const at = await targetInterfaces(targetType, targets, deps, backend.instances);
    result = await reconcileNetworking(binding, at, backend.resolvePort, deps);
  } catch (err) {
    // A call AWS refuses (a group our role may not change) is told and the pass goes on: the targets are in.
    // Anything retrying can fix fails the pass, to be retried.
    await recordBindingEvent(deps, binding, 'Warning', EVENT.failedNetwork, errorMessage(err));
    if (!(err instanceof TerminalError)) throw err;
    return { writes: 0, problems: [], failed: errorMessage(err) };
  }
  for (const problem of result.problems) {
    await recordBindingEvent(deps, binding, 'Warning', EVENT.failedNetwork, problem.message);
  }
  return result;
}

/** The gates of the binding's Pods, from the target health (read again when this pass registered targets). */
async function gatesFor(
  binding: TargetGroupBinding,
  group: TargetGroup,
  backend: Extract<Backend, { kind: 'found' }>,
  health: readonly TargetHealth[] | undefined,
  deps: TgbDeps,
): Promise<{ writes: number; waiting: boolean }> {
  if (group.targetType !== 'ip' || !anyGated(backend.pods, binding.metadata.name)) return { writes: 0, waiting: false };
  const now = health ?? (await deps.elbv2.describeTargetHealth(group.arn));
  return updateGates(backend.pods, binding.metadata.name, now, backend.podTargetPort, deps);
}

/**
 * A stack binding (the reference's, or our Ingress or service controller's: shared/k8s/stack-bindings.ts): that
 * controller owns the target group and its targets; this one keeps the Pods' readiness conditions, and registers the
 * target of a Pod held back only by this binding's gate that is not in the group yet (gateWaitingTargets, the rule
 * that controller counts the same Pods as wanted by). A new Pod's containers becoming ready changes the Pod, not its
 * EndpointSlice: only this controller, woken by Pod changes and by its own requeue, sees it in time. Nothing is ever
 * deregistered here: removals are the owner's.
 */
async function gatesOnly(
  binding: TargetGroupBinding,
  group: TargetGroup,
  deps: TgbDeps,
): Promise<ReconcileResult | undefined> {
  if (group.targetType !== 'ip') return undefined;
  const service = await readService(binding, deps);
  const servicePort = service ? servicePortOf(service, binding.spec.serviceRef.port) : undefined;
  if (!service || !servicePort) return undefined;
  const pods = await readPods(binding.metadata.namespace ?? 'default', service, deps);
  if (!anyGated(pods, binding.metadata.name)) return undefined;
  let health = await deps.elbv2.describeTargetHealth(group.arn);
  const waiting = await gateWaiting(binding, group, servicePort, pods, deps);
  const { register } = planTargets(waiting, health);
  if ((await applyTargetChanges(deps, group.arn, { register, deregister: [] })) > 0) {
    health = await deps.elbv2.describeTargetHealth(group.arn);
  }
  const gates = await updateGates(pods, binding.metadata.name, health, () => undefined, deps);
  return gates.waiting ? { requeueAfterSeconds: deps.readinessRequeueSeconds } : undefined;
}

/**
 * The targets of the Pods waiting only for this binding's gate; the slices are read only when such a Pod exists, the
 * Nodes only when an endpoint is not ready.
 */
async function gateWaiting(
  binding: TargetGroupBinding,
  group: TargetGroup,
  servicePort: ServicePortSpec,
  pods: readonly Pod[],
  deps: TgbDeps,
): Promise<Target[]> {
  if (!pods.some((p) => waitsOnlyForGate(p, binding.metadata.name))) return [];
  const namespace = binding.metadata.namespace ?? 'default';
  const name = binding.spec.serviceRef.name;
  const slices = await deps.kube.listEndpointSlices(namespace, name).catch((err: unknown) => {
    throw classifyKubernetesError(`listing endpoint slices of ${namespace}/${name}`, err);
  });
  const shape = { servicePort, ipAddressType: group.ipAddressType, slices };
  if (!hasNotReadyEndpoints(shape)) return [];
  const nodes = await deps.kube.listNodes().catch((err: unknown) => {
    throw classifyKubernetesError('listing nodes', err);
  });
  return gateWaitingTargets({
    ...shape,
    bindingName: binding.metadata.name,
    pods: new Map(pods.map((p) => [p.metadata.name, p])),
    nodes: new Map(nodes.map((n) => [n.metadata.name, n])),
  });
}
