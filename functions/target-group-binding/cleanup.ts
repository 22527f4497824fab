import type { TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { errorMessage } from '../../shared/errors.ts';
import { type TargetGroupBinding, TGB_FINALIZER } from '../../shared/k8s/tgb-types.ts';
import { applyTargetChanges } from '../../shared/load-balancers/registration.ts';
import { targetKey } from '../../shared/load-balancers/targets.ts';
import type { TgbDeps } from './deps.ts';
import { releaseAllGates } from './gates.ts';
import { changeFinalizer, EVENT, recordBindingEvent } from './kube.ts';
import { readPods, readService } from './observe.ts';
import { parseRecord, REGISTERED_TARGETS_ANNOTATION } from './record.ts';
import { reconcileNetworking, targetInterfaces } from './security.ts';
import { isStackBinding } from './sync.ts';

/**
 * A binding being deleted: the targets it registered deregistered (every target of the group, or those it recorded
 * when the group is shared with other clusters), its rules no other binding needs revoked, every gated Pod let go,
 * then the finalizer dropped. The target group, its listeners and load balancer are the user's: never touched.
 * A stack binding (made for a Service or an Ingress group by its controller) only lets its gated Pods go: its
 * targets are that controller's.
 */
export async function deleteBinding(binding: TargetGroupBinding, deps: TgbDeps): Promise<undefined> {
  if (!binding.metadata.finalizers?.includes(TGB_FINALIZER)) return undefined;
  try {
    if (isStackBinding(binding)) await releasePods(binding, deps);
    else await cleanUp(binding, deps);
  } catch (err) {
    await recordBindingEvent(deps, binding, 'Warning', EVENT.failedCleanup, errorMessage(err));
    throw err;
  }
  try {
    await changeFinalizer(deps, binding, TGB_FINALIZER, 'remove');
  } catch (err) {
    await recordBindingEvent(deps, binding, 'Warning', EVENT.failedRemoveFinalizer, errorMessage(err));
    throw err;
  }
  return undefined;
}

async function cleanUp(binding: TargetGroupBinding, deps: TgbDeps): Promise<void> {
  const group = await targetGroupOf(binding, deps);
  if (group) {
    const current = (await deps.elbv2.describeTargetHealth(group.arn)).filter(
      (h) => h.state !== 'draining' && h.state !== 'unhealthy.draining',
    );
    let targets = current.map((h) => h.target);
    if (binding.spec.multiClusterTargetGroup) {
      const ours = new Set(
        (parseRecord(binding.metadata.annotations?.[REGISTERED_TARGETS_ANNOTATION]) ?? []).map(targetKey),
      );
      targets = targets.filter((t) => ours.has(targetKey(t)));
    }
    // The groups are found from the targets, so before they go.
    const at = await targetInterfaces(group.targetType, targets, deps);
    await applyTargetChanges(deps, group.arn, { register: [], deregister: targets });
    await reconcileNetworking(binding, at, () => undefined, deps, true);
  }
  await releasePods(binding, deps);
}

/** Every Pod the binding's gate holds gets its condition True (a Service gone leaves no Pod to find). */
async function releasePods(binding: TargetGroupBinding, deps: TgbDeps): Promise<void> {
  const service = await readService(binding, deps);
  if (!service) return;
  await releaseAllGates(
    await readPods(binding.metadata.namespace ?? 'default', service, deps),
    binding.metadata.name,
    deps,
  );
}

/** By the ARN (filled in on the first pass), else by name; undefined once it is gone. */
async function targetGroupOf(binding: TargetGroupBinding, deps: TgbDeps): Promise<TargetGroup | undefined> {
  const { targetGroupARN: arn, targetGroupName: name } = binding.spec;
  if (arn) return (await deps.elbv2.describeTargetGroupsByArn([arn]))[0];
  if (name) return (await deps.elbv2.findTargetGroups([name]))[0];
  return undefined;
}
