import { errorMessage } from '../../../shared/errors.ts';
import type { TargetGroupBinding, TargetGroupBindingSpec } from '../../../shared/k8s/tgb-types.ts';
import { type AdmissionRequest, type AdmissionResponse, allow, deny } from './admission.ts';
import type { TgbAdmissionReads } from './tgb-admission-reads.ts';

/**
 * `vtargetgroupbinding.elbv2.k8s.aws`: the TargetGroupBinding rules the AWS Load Balancer Controller's validating
 * webhook enforces, so a binding written for it is refused here for the same reasons.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/targetgroupbinding/
 *
 * - a binding names its target group: `targetGroupARN` or `targetGroupName`;
 * - `nodeSelector` picks instance targets: refused with `targetType: ip`;
 * - `targetGroupARN`, `targetType`, `ipAddressType` and `vpcID` never change once set (the controller fills those
 *   left out from the target group: unset -> set is allowed);
 * - one binding per target group, unless every binding of it sets `multiClusterTargetGroup` (then each deregisters
 *   only the targets it registered). Checked on creation, when an update sets the ARN (filled in from the name), and
 *   when an update turns `multiClusterTargetGroup` off: the bindings of every namespace are listed then.
 *
 * An update that leaves the spec as it was (finalizers, annotations, labels) is always admitted. Each refusal names
 * the field. failurePolicy Fail (deploy/relay/webhook-tgb.yaml), as the reference's: a binding
 * admitted unchecked could take over another's target group. A list that fails refuses the request, saying so.
 */

const IMMUTABLE = ['targetGroupARN', 'targetType', 'ipAddressType', 'vpcID'] as const;

const specOf = (object: unknown): Partial<TargetGroupBindingSpec> =>
  ((object as TargetGroupBinding | null | undefined)?.spec ?? {}) as Partial<TargetGroupBindingSpec>;

/** The problems of one binding on its own (no other object read), each naming its field. */
export function bindingProblems(
  spec: Partial<TargetGroupBindingSpec>,
  old?: Partial<TargetGroupBindingSpec>,
): string[] {
  const problems: string[] = [];
  if (!spec.targetGroupARN && !spec.targetGroupName) {
    problems.push('spec.targetGroupARN or spec.targetGroupName must be set: the binding names no target group');
  }
  if (spec.nodeSelector && spec.targetType === 'ip') {
    problems.push('spec.nodeSelector can only be set with spec.targetType instance: IP targets are Pods, not Nodes');
  }
  for (const field of IMMUTABLE) {
    const before = old?.[field];
    if (old && before !== undefined && before !== '' && spec[field] !== before) {
      const after = spec[field] === undefined ? 'unset' : `"${spec[field]}"`;
      problems.push(`spec.${field} is immutable once set: "${before}" cannot become ${after}`);
    }
  }
  return problems;
}

/** Whether the one-binding-per-target-group rule is checked for this request. */
function checksSharing(request: AdmissionRequest, spec: Partial<TargetGroupBindingSpec>): boolean {
  if (!spec.targetGroupARN) return false;
  if (request.operation === 'CREATE') return true;
  const old = specOf(request.oldObject);
  return (
    old.targetGroupARN !== spec.targetGroupARN ||
    (old.multiClusterTargetGroup === true && !spec.multiClusterTargetGroup)
  );
}

/** The other bindings of the same target group that this one may not share it with, as `namespace/name`. */
export function conflictingBindings(
  self: { namespace: string; name: string; spec: Partial<TargetGroupBindingSpec> },
  all: readonly TargetGroupBinding[],
): string[] {
  const others = all.filter(
    (b) =>
      b.spec?.targetGroupARN === self.spec.targetGroupARN &&
      !(b.metadata.namespace === self.namespace && b.metadata.name === self.name),
  );
  // Shared only when every binding of it says so: with the flag, those without it; without, all of them.
  const blocking = self.spec.multiClusterTargetGroup
    ? others.filter((b) => b.spec?.multiClusterTargetGroup !== true)
    : others;
  return blocking.map((b) => `${b.metadata.namespace}/${b.metadata.name}`).sort();
}

export async function validateTargetGroupBinding(
  request: AdmissionRequest,
  reads: TgbAdmissionReads,
): Promise<AdmissionResponse> {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allow(request.uid);
  const object = request.object as TargetGroupBinding | null | undefined;
  const spec = specOf(object);
  const old = request.operation === 'UPDATE' ? specOf(request.oldObject) : undefined;
  // Finalizers, annotations and labels of a binding admitted before this webhook (or going away) stay writable:
  // the controller's finalizer and record must never be blocked by a spec nobody is changing.
  if (old && JSON.stringify(old) === JSON.stringify(spec)) return allow(request.uid);
  const problems = bindingProblems(spec, old);
  if (problems.length > 0) return deny(request.uid, `TargetGroupBinding refused: ${problems.join('; ')}`);
  if (!checksSharing(request, spec)) return allow(request.uid);
  const namespace = request.namespace ?? object?.metadata?.namespace ?? 'default';
  const name = request.name ?? object?.metadata?.name ?? '';
  let all: TargetGroupBinding[];
  try {
    all = await reads.listTargetGroupBindings();
  } catch (err) {
    return deny(
      request.uid,
      `TargetGroupBinding not checked: listing the TargetGroupBindings to check spec.targetGroupARN is bound once failed: ${errorMessage(err)}`,
    );
  }
  const conflicts = conflictingBindings({ namespace, name, spec }, all);
  if (conflicts.length === 0) return allow(request.uid);
  const shared = spec.multiClusterTargetGroup
    ? 'which do not set spec.multiClusterTargetGroup'
    : 'set spec.multiClusterTargetGroup on every binding of it to share it';
  return deny(
    request.uid,
    `TargetGroupBinding refused: spec.targetGroupARN ${spec.targetGroupARN} is already bound by ${conflicts.join(', ')}; ${shared}`,
  );
}
