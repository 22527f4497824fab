import type { TargetGroup } from '../aws/elbv2-port.ts';
import type { PodGatesPort } from './tgb-port.ts';
import { type TargetGroupBinding, TGB_API_VERSION, TGB_FINALIZER } from './tgb-types.ts';

/**
 * Stack bindings: the TargetGroupBinding the AWS Load Balancer Controller keeps beside every target group it makes
 * for an Ingress group or a Service of its own (same name as the target group, in the Service's namespace, labelled
 * with the stack). Our Ingress and service controllers keep the same objects for the target groups they make, so
 *  - the relay's Pod webhook (`mpod.elbv2.k8s.aws`) gives the Pods behind an ip target group the readiness gate
 *    `target-health.elbv2.k8s.aws/<target group name>`, and the binding controller sets it from the target health
 *    (functions/target-group-binding/sync.ts `gatesOnly`); the targets stay the Ingress or service controller's;
 *  - `kubectl get targetgroupbindings` shows what it shows under the reference, and a move back to it finds them.
 * They carry the reference's finalizer: the binding controller lets their gated Pods go (condition True) when one
 * is deleted, then drops it. So they are only made where the binding controller is deployed
 * (STACK_TARGET_GROUP_BINDINGS, set by the stage with CCM_TARGET_GROUP_BINDING=true).
 */

/** The stack a binding belongs to: an Ingress group (explicit, or one Ingress's implicit group), or a Service. */
export type StackRef =
  | { kind: 'ingress'; explicit: true; name: string }
  | { kind: 'ingress'; explicit: false; namespace: string; name: string }
  | { kind: 'service'; namespace: string; name: string };

/** The reference's labels: `<prefix>/stack` for an explicit group, else `<prefix>/stack-namespace` and `-name`. */
export function stackLabels(stack: StackRef): Record<string, string> {
  const prefix = stack.kind === 'ingress' ? 'ingress.k8s.aws' : 'service.k8s.aws';
  if (stack.kind === 'ingress' && stack.explicit) return { [`${prefix}/stack`]: stack.name };
  return { [`${prefix}/stack-namespace`]: stack.namespace, [`${prefix}/stack-name`]: stack.name };
}

/** Whether a binding carries exactly this stack's labels (every one of them, with the same values). */
export function belongsTo(binding: TargetGroupBinding, stack: StackRef): boolean {
  const labels = binding.metadata.labels ?? {};
  return Object.entries(stackLabels(stack)).every(([key, value]) => labels[key] === value);
}

/** One target group the stack made, and the Service port whose Pods or Nodes are its targets. */
export interface WantedStackBinding {
  group: Pick<TargetGroup, 'arn' | 'name' | 'targetType' | 'ipAddressType' | 'vpcId'>;
  service: { namespace: string; name: string; port: number | string };
}

/** The binding as the reference writes it (no `networking`: the controller that made the group keeps its rules). */
export function stackBinding(stack: StackRef, wanted: WantedStackBinding): TargetGroupBinding {
  const { group, service } = wanted;
  return {
    apiVersion: TGB_API_VERSION,
    kind: 'TargetGroupBinding',
    metadata: {
      name: group.name,
      namespace: service.namespace,
      labels: stackLabels(stack),
      finalizers: [TGB_FINALIZER],
    },
    spec: {
      serviceRef: { name: service.name, port: service.port },
      targetGroupARN: group.arn,
      targetType: group.targetType,
      ipAddressType: group.ipAddressType,
      ...(group.vpcId ? { vpcID: group.vpcId } : {}),
    },
  };
}

export interface StackBindingPlan {
  /** Bindings to create (none of that name exists in the namespace). */
  create: TargetGroupBinding[];
  /**
   * Bindings of the stack to delete: no longer wanted, or naming another target group (the ARN is immutable: the
   * one wanted is created by a later pass, once the old one is gone).
   */
  delete: { namespace: string; name: string; uid?: string }[];
  /** A binding of a wanted name that is not this stack's: left alone, and said once per pass. */
  conflicts: string[];
}

/**
 * What to write, from the bindings that exist (in the namespaces the stack's Services are in, or all) and those
 * wanted. A binding already being deleted is waited for; one of the stack in line is left as it is.
 */
export function planStackBindings(
  stack: StackRef,
  existing: readonly TargetGroupBinding[],
  wanted: readonly WantedStackBinding[],
): StackBindingPlan {
  const key = (namespace: string | undefined, name: string) => `${namespace ?? 'default'}/${name}`;
  const byKey = new Map(existing.map((b) => [key(b.metadata.namespace, b.metadata.name), b]));
  const wantedKeys = new Set<string>();
  const plan: StackBindingPlan = { create: [], delete: [], conflicts: [] };
  const drop = (b: TargetGroupBinding) => {
    if (b.metadata.deletionTimestamp) return;
    plan.delete.push({
      namespace: b.metadata.namespace ?? 'default',
      name: b.metadata.name,
      ...(b.metadata.uid ? { uid: b.metadata.uid } : {}),
    });
  };
  for (const w of wanted) {
    const k = key(w.service.namespace, w.group.name);
    if (wantedKeys.has(k)) continue;
    wantedKeys.add(k);
    const found = byKey.get(k);
    if (!found) {
      plan.create.push(stackBinding(stack, w));
    } else if (!belongsTo(found, stack)) {
      plan.conflicts.push(
        `TargetGroupBinding ${k} exists and is not this stack's: the readiness gates of target group ${w.group.name} are left to it`,
      );
    } else if (found.spec.targetGroupARN && found.spec.targetGroupARN !== w.group.arn) {
      drop(found);
    }
  }
  for (const b of existing) {
    if (belongsTo(b, stack) && !wantedKeys.has(key(b.metadata.namespace, b.metadata.name))) drop(b);
  }
  return plan;
}

/** What the Ingress and service controllers write of TargetGroupBindings (the adapters of tgb-port.ts serve it too). */
export interface StackBindingWrites {
  /** Every binding of one namespace, or of every namespace; [] when the CRD is not installed. */
  listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]>;
  /** Creates it; a KubernetesApiError 409 AlreadyExists when one of that name exists, 404 without the CRD. */
  createTargetGroupBinding(binding: TargetGroupBinding): Promise<TargetGroupBinding>;
  /**
   * Deletes it (with its finalizer it is only marked, until the binding controller lets its Pods go); with `uid`,
   * only that object (a precondition: 409 when another of that name took its place). 'gone' when it was already.
   */
  deleteTargetGroupBinding(namespace: string, name: string, uid?: string): Promise<'deleted' | 'gone'>;
}

/**
 * The stack bindings, and the Pods behind an ip target group: a Pod held back only by its gate is a target too
 * (shared/load-balancers/gated-targets.ts), and only its Pod says so. Pods are read only when an endpoint is not ready.
 */
export type StackBindingsPort = StackBindingWrites & Pick<PodGatesPort, 'listPods'>;

export function stackBindingsPort(
  bindings: StackBindingWrites,
  pods: Pick<PodGatesPort, 'listPods'>,
): StackBindingsPort {
  return {
    listTargetGroupBindings: (namespace) => bindings.listTargetGroupBindings(namespace),
    createTargetGroupBinding: (binding) => bindings.createTargetGroupBinding(binding),
    deleteTargetGroupBinding: (namespace, name, uid) => bindings.deleteTargetGroupBinding(namespace, name, uid),
    listPods: (namespace, selector) => pods.listPods(namespace, selector),
  };
}
