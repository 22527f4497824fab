import type { Target } from '../../../shared/aws/elbv2-port.ts';
import { classifyKubernetesError } from '../../../shared/k8s/errors.ts';
import { belongsTo, type StackRef, type WantedStackBinding } from '../../../shared/k8s/stack-bindings.ts';
import type { TargetGroupBinding } from '../../../shared/k8s/tgb-types.ts';
import type { EndpointSlice, Node, Pod, Service } from '../../../shared/k8s/types.ts';
import type { LoadBalancerContext } from '../../../shared/load-balancers/context.ts';
import { gateWaitingTargets, hasNotReadyEndpoints } from '../../../shared/load-balancers/gated-targets.ts';
import type { DesiredTargetGroup } from '../../../shared/load-balancers/model.ts';
import { keepStackBindings } from '../../../shared/load-balancers/stack-bindings.ts';
import type { EnsuredGroups } from '../../../shared/load-balancers/target-groups.ts';
import { servicePortOfGroup } from '../../../shared/load-balancers/targets.ts';
import { decide } from '../decide.ts';
import type { ServiceDeps } from '../deps.ts';
import { hasFinalizer } from '../kube.ts';
import type { LoadBalancerSpec } from '../model/spec.ts';
import type { Pass } from '../writes.ts';
import { LBC_SERVICE_FINALIZER } from './names.ts';

/**
 * The AWS Load Balancer Controller's Services keep, as under the reference, one TargetGroupBinding per target group
 * of their Network Load Balancer (shared/k8s/stack-bindings.ts): the binding controller then keeps the readiness
 * gates of the Pods behind an ip target group, so a rolling update waits for target health. Only with
 * `deps.stackBindings` (STACK_TARGET_GROUP_BINDINGS), and never for in-tree Services. The bindings of a stack go
 * before its target groups do: when the load balancer is deleted (nlb/cleanup.ts), when the Service moves to the
 * in-tree way (nlb/finish.ts, where the reference-made load balancer is retired), and in the garbage collection (gc.ts).
 */

/** A binding warning on the Service: the CRD is not installed, or a binding of the name is not the stack's. */
export const STACK_BINDING_WARNING = 'FailedTargetGroupBinding';

function serviceStack(service: Service): Extract<StackRef, { kind: 'service' }> {
  return { kind: 'service', namespace: service.metadata.namespace ?? 'default', name: service.metadata.name };
}

/** One binding per ensured target group (its actual name and ARN), the Service port by number as the reference writes it. */
export async function keepServiceStackBindings(
  spec: Pick<LoadBalancerSpec, 'targetGroups'>,
  groups: EnsuredGroups,
  pass: Pass,
): Promise<void> {
  const port = pass.deps.stackBindings;
  if (!port || pass.lbc !== true) return;
  const { namespace, name } = serviceStack(pass.service);
  const wanted: WantedStackBinding[] = spec.targetGroups.flatMap((desired) => {
    const ensured = groups.get(desired.name);
    if (!ensured) return [];
    return [{ group: ensured.group, service: { namespace, name, port: servicePortOfGroup(desired).port } }];
  });
  await tell(await keepStackBindings(port, serviceStack(pass.service), wanted), pass);
}

/** Every binding of the Service's stack deleted (its load balancer goes, or the Service leaves the reference's way). */
export async function dropServiceStackBindings(pass: Pass): Promise<void> {
  const port = pass.deps.stackBindings;
  if (!port) return;
  await tell(await keepStackBindings(port, serviceStack(pass.service), []), pass);
}

/**
 * A pass of the in-tree way retiring what the reference's way made (the Service still carries its finalizer: it is
 * moving): the stack's bindings go first.
 */
export async function dropStackBindingsOnMove(pass: Pass): Promise<void> {
  if (pass.lbc === true || pass.deps.lbcServices !== true) return;
  if (!hasFinalizer(pass.service, LBC_SERVICE_FINALIZER)) return;
  await dropServiceStackBindings(pass);
}

async function tell(result: { warnings: string[] }, pass: Pass): Promise<void> {
  for (const warning of result.warnings) await pass.event('Warning', STACK_BINDING_WARNING, warning);
}

/**
 * The resource context of a pass with the Pods waiting only for a target group's gate counted as its targets
 * (shared/load-balancers/gated-targets.ts; the gate is named for the target group's actual name, `groups`). The
 * binding controller registers them too: every pass of the service controller must want them, or one would
 * deregister what the other registered and a gated rollout would wait forever. The Pods are read once a pass, and
 * only when an endpoint on a group's port is not ready; the Nodes come from the batch's one read.
 */
export function withGateWaiting(ctx: LoadBalancerContext, pass: Pass, groups: EnsuredGroups): LoadBalancerContext {
  const port = pass.deps.stackBindings;
  const selector = pass.service.spec?.selector;
  // Without a selector the EndpointSlices are someone else's: there are no Pods of the Service to look at.
  if (!port || pass.lbc !== true || !selector || Object.keys(selector).length === 0) return ctx;
  const namespace = pass.service.metadata.namespace ?? 'default';
  let reads: Promise<{ pods: Map<string, Pod>; nodes: Map<string, Node> }> | undefined;
  const read = async () => {
    let pods: Pod[];
    try {
      pods = await port.listPods(namespace, selector);
    } catch (err) {
      throw classifyKubernetesError(`listing the Pods of ${namespace}/${pass.service.metadata.name}`, err);
    }
    const nodes = await pass.batch.nodes();
    return {
      pods: new Map(pods.map((p) => [p.metadata.name, p])),
      nodes: new Map(nodes.map((n) => [n.metadata.name, n])),
    };
  };
  const gateWaiting = async (group: DesiredTargetGroup, slices: readonly EndpointSlice[]): Promise<Target[]> => {
    const ensured = groups.get(group.name);
    if (!ensured || group.targetType !== 'ip') return [];
    const servicePort = servicePortOfGroup(group);
    if (!hasNotReadyEndpoints({ servicePort, ipAddressType: group.ipAddressType, slices })) return [];
    reads ??= read();
    const { pods, nodes } = await reads;
    const bindingName = ensured.group.name;
    return gateWaitingTargets({ bindingName, servicePort, ipAddressType: group.ipAddressType, slices, pods, nodes });
  };
  return { ...ctx, gateWaitingTargets: gateWaiting };
}

/** Every binding labelled with a Service's stack, read before the Services (gc.ts); none without stack bindings. */
export async function listServiceStackBindings(deps: ServiceDeps): Promise<TargetGroupBinding[]> {
  if (!deps.stackBindings || deps.lbcServices !== true) return [];
  let all: TargetGroupBinding[];
  try {
    all = await deps.stackBindings.listTargetGroupBindings();
  } catch (err) {
    throw classifyKubernetesError('listing TargetGroupBindings', err);
  }
  return all.filter((b) => stackOf(b) !== undefined && !b.metadata.deletionTimestamp);
}

function stackOf(binding: TargetGroupBinding): Extract<StackRef, { kind: 'service' }> | undefined {
  const labels = binding.metadata.labels ?? {};
  const namespace = labels['service.k8s.aws/stack-namespace'];
  const name = labels['service.k8s.aws/stack-name'];
  if (!namespace || !name) return undefined;
  const stack = { kind: 'service' as const, namespace, name };
  return belongsTo(binding, stack) ? stack : undefined;
}

/**
 * The garbage collection's part: the bindings of a stack whose Service is gone or no longer served the reference's
 * way (one being deleted is its own key's to clean up), deleted before the collection deletes target groups.
 * `bindings` were listed before `services`, so a binding a pass made for a Service served the reference's way is
 * seen with that Service. Answers how many were deleted.
 */
export async function sweepServiceStackBindings(
  bindings: readonly TargetGroupBinding[],
  services: readonly Service[],
  deps: ServiceDeps,
): Promise<number> {
  const port = deps.stackBindings;
  if (!port || bindings.length === 0) return 0;
  const byKey = new Map(services.map((s) => [`${s.metadata.namespace ?? 'default'}/${s.metadata.name}`, s]));
  const stacks = new Map<string, StackRef>();
  for (const binding of bindings) {
    const stack = stackOf(binding);
    if (!stack) continue;
    const key = `${stack.namespace}/${stack.name}`;
    const service = byKey.get(key);
    if (service && keepsStack(service, deps)) continue;
    stacks.set(key, stack);
  }
  let deleted = 0;
  for (const stack of stacks.values()) {
    const result = await keepStackBindings(port, stack, []);
    deleted += result.writes;
  }
  return deleted;
}

function keepsStack(service: Service, deps: ServiceDeps): boolean {
  const decision = decide(service, deps.loadBalancerClass, deps.lbcServices === true);
  if (decision.action === 'delete') return true;
  return decision.action === 'ensure' && decision.lbc === true;
}
