import { classifyKubernetesError, isConflict, isNotFound } from '../k8s/errors.ts';
import {
  planStackBindings,
  type StackBindingWrites,
  type StackRef,
  type WantedStackBinding,
} from '../k8s/stack-bindings.ts';

/**
 * The stack's TargetGroupBindings made to match its target groups (shared/k8s/stack-bindings.ts): one per target
 * group, created when missing, deleted when its group is no longer the stack's. Called by the Ingress and service
 * controllers once their target groups exist (before any listener forwards to a new one, so a Pod created from then
 * on is gated), and with none wanted when the stack goes. Answers the writes made and what to tell the user: a
 * binding of the name that is not the stack's, or the CRD not installed, is a warning, never a failed pass (the
 * load balancer serves without readiness gates).
 */
export async function keepStackBindings(
  port: StackBindingWrites,
  stack: StackRef,
  wanted: readonly WantedStackBinding[],
): Promise<{ writes: number; warnings: string[] }> {
  const scope = stack.kind === 'ingress' && stack.explicit ? undefined : stack.namespace;
  const existing = await port.listTargetGroupBindings(scope).catch((err: unknown) => {
    throw classifyKubernetesError(`listing TargetGroupBindings${scope ? ` in ${scope}` : ''}`, err);
  });
  const plan = planStackBindings(stack, existing, wanted);
  const warnings = [...plan.conflicts];
  let writes = 0;
  for (const binding of plan.create) {
    const name = `${binding.metadata.namespace}/${binding.metadata.name}`;
    try {
      await port.createTargetGroupBinding(binding);
      writes++;
    } catch (err) {
      // Made meanwhile (a pass that crashed after the create, or the reference's): the next pass looks at it.
      if (isConflict(err)) continue;
      if (isNotFound(err)) {
        warnings.push(
          `TargetGroupBinding ${name} not made: the TargetGroupBinding CRD is not installed (deploy/crds/targetgroupbindings.yaml), so the Pods behind target group ${binding.metadata.name} get no readiness gate`,
        );
        break;
      }
      throw classifyKubernetesError(`creating TargetGroupBinding ${name}`, err);
    }
  }
  for (const { namespace, name, uid } of plan.delete) {
    try {
      if ((await port.deleteTargetGroupBinding(namespace, name, uid)) === 'deleted') writes++;
    } catch (err) {
      // Another object of that name took its place since the list: not ours to delete.
      if (isConflict(err)) continue;
      throw classifyKubernetesError(`deleting TargetGroupBinding ${namespace}/${name}`, err);
    }
  }
  return { writes, warnings };
}
