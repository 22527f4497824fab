import { errorMessage } from '../../../shared/errors.ts';
import {
  LEGACY_READINESS_GATE_PREFIX,
  READINESS_GATE_PREFIX,
  type TargetGroupBinding,
} from '../../../shared/k8s/tgb-types.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import type { Log } from '../../../shared/observability/log.ts';
import { type AdmissionRequest, type AdmissionResponse, allow, withPatch } from './admission.ts';
import type { TgbAdmissionReads } from './tgb-admission-reads.ts';

/**
 * `mpod.elbv2.k8s.aws`: a Pod created in a namespace labelled `elbv2.k8s.aws/pod-readiness-gate-inject: enabled`
 * (the webhook configuration's namespaceSelector) gets the readiness gate `target-health.elbv2.k8s.aws/<binding>` of
 * every binding of its namespace with IP targets (or a target type not filled in yet: the controller takes it from
 * the target group) whose Service selects it. The binding controller sets the condition True once the Pod's target
 * is healthy, so a rolling update waits for the load balancer. At creation only, as the reference: a gate cannot be
 * added to a running Pod. A gate of the reference's older prefix for the same binding is replaced, and none is added
 * twice. failurePolicy Ignore: while no replica answers, or when the lists fail, Pods are admitted ungated.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/pod_readiness_gate/
 * https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-readiness-gate
 */

interface PodShape {
  metadata?: { namespace?: string; labels?: Record<string, string> };
  spec?: { readinessGates?: { conditionType?: string }[] };
}

/** Whether a Service's selector picks these labels: a Service without a selector picks no Pod of its own. */
export function selects(service: Service, labels: Readonly<Record<string, string>>): boolean {
  const selector = service.spec?.selector ?? {};
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([key, value]) => labels[key] === value);
}

/**
 * The names of the bindings whose gate a Pod of these labels gets, sorted: IP bindings only. One whose type is not
 * filled in yet gates nothing: should its target group turn out to take instances, no Pod would ever be its target
 * and the gate would hold the Pod back for good (the reference fills the type in at admission, so never meets this).
 */
export function gatedBindings(
  labels: Readonly<Record<string, string>>,
  services: readonly Service[],
  bindings: readonly TargetGroupBinding[],
): string[] {
  const selecting = new Set(services.filter((s) => selects(s, labels)).map((s) => s.metadata.name));
  const names = bindings
    .filter((b) => b.spec?.targetType === 'ip' && selecting.has(b.spec?.serviceRef?.name))
    .map((b) => b.metadata.name);
  return [...new Set(names)].sort();
}

/** The readiness gates a Pod ends with: its own, less the legacy gates of `names`, plus the gates of `names` it lacks. */
export function readinessGates(
  existing: readonly { conditionType?: string }[],
  names: readonly string[],
): { conditionType?: string }[] {
  const legacy = new Set(names.map((name) => `${LEGACY_READINESS_GATE_PREFIX}${name}`));
  const kept = existing.filter((gate) => !legacy.has(gate.conditionType ?? ''));
  const present = new Set(kept.map((gate) => gate.conditionType));
  const added = names
    .map((name) => `${READINESS_GATE_PREFIX}${name}`)
    .filter((type) => !present.has(type))
    .map((conditionType) => ({ conditionType }));
  return [...kept, ...added];
}

export async function mutatePodReadiness(
  request: AdmissionRequest,
  reads: TgbAdmissionReads,
  log: Log,
): Promise<AdmissionResponse> {
  if (request.operation !== 'CREATE') return allow(request.uid);
  const pod = (request.object ?? {}) as PodShape;
  // A Pod made from generateName may have no namespace of its own yet: the request's is the one it is created in.
  const namespace = request.namespace ?? pod.metadata?.namespace;
  if (!namespace) return allow(request.uid);
  let services: Service[];
  let bindings: TargetGroupBinding[];
  try {
    [services, bindings] = await Promise.all([reads.listServices(namespace), reads.listTargetGroupBindings(namespace)]);
  } catch (err) {
    log.warn('admitting a Pod without readiness gates: listing its Services and TargetGroupBindings failed', {
      namespace,
      error: errorMessage(err),
    });
    return allow(request.uid);
  }
  const names = gatedBindings(pod.metadata?.labels ?? {}, services, bindings);
  if (names.length === 0) return allow(request.uid);
  const existing = pod.spec?.readinessGates;
  const gates = readinessGates(existing ?? [], names);
  if (existing && JSON.stringify(gates) === JSON.stringify(existing)) return allow(request.uid);
  return withPatch(request.uid, [{ op: existing ? 'replace' : 'add', path: '/spec/readinessGates', value: gates }]);
}
