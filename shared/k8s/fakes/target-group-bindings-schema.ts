import { KubernetesApiError } from '../errors.ts';
import type { TargetGroupBinding } from '../tgb-types.ts';

/**
 * What the API server refuses in a TargetGroupBinding, by the schema of deploy/crds/targetgroupbindings.yaml: the
 * required fields (`spec.serviceRef` with its name and port, a networking rule's `from` and `ports`, a peer's
 * `cidr` or `groupID`, a condition's `type` and `status`), the enums (`targetType`, `ipAddressType`, a port's
 * `protocol`) and the int-or-string ports. test/k8s-contract/tgb-port.test.ts runs refusals on a real API server
 * and on FakeTargetGroupBindings alike.
 */

const ENUMS: Record<string, readonly string[]> = {
  targetType: ['instance', 'ip'],
  ipAddressType: ['ipv4', 'ipv6'],
};
const STRINGS = ['targetGroupARN', 'targetGroupName', 'targetGroupProtocol', 'vpcID'];

export function validateTargetGroupBinding(binding: TargetGroupBinding): void {
  const errors: string[] = [];
  const spec = binding.spec as (TargetGroupBinding['spec'] & Record<string, unknown>) | undefined;
  if (spec !== undefined) {
    if (spec.serviceRef === undefined || spec.serviceRef === null) errors.push('spec.serviceRef: Required value');
    else {
      if (spec.serviceRef.name === undefined) errors.push('spec.serviceRef.name: Required value');
      if (spec.serviceRef.port === undefined) errors.push('spec.serviceRef.port: Required value');
      else intOrString('spec.serviceRef.port', spec.serviceRef.port, errors);
    }
    for (const field of STRINGS) {
      const value = spec[field];
      if (value !== undefined && typeof value !== 'string') errors.push(wrongType(`spec.${field}`, value, 'string'));
    }
    for (const [field, allowed] of Object.entries(ENUMS)) {
      const value = spec[field];
      if (value !== undefined && !allowed.includes(value as string)) {
        errors.push(unsupported(`spec.${field}`, value, allowed));
      }
    }
    if (spec.multiClusterTargetGroup !== undefined && typeof spec.multiClusterTargetGroup !== 'boolean') {
      errors.push(wrongType('spec.multiClusterTargetGroup', spec.multiClusterTargetGroup, 'boolean'));
    }
    networking(spec.networking, errors);
  }
  for (const [i, condition] of (binding.status?.conditions ?? []).entries()) {
    if (condition.type === undefined) errors.push(`status.conditions[${i}].type: Required value`);
    if (condition.status === undefined) errors.push(`status.conditions[${i}].status: Required value`);
  }
  if (errors.length > 0) {
    const detail = errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`;
    throw new KubernetesApiError(
      422,
      'Invalid',
      `TargetGroupBinding.elbv2.k8s.aws "${binding.metadata.name}" is invalid: ${detail}`,
    );
  }
}

function networking(value: TargetGroupBinding['spec']['networking'], errors: string[]): void {
  for (const [i, rule] of (value?.ingress ?? []).entries()) {
    const at = `spec.networking.ingress[${i}]`;
    if (rule.from === undefined) errors.push(`${at}.from: Required value`);
    if (rule.ports === undefined) errors.push(`${at}.ports: Required value`);
    for (const [j, peer] of (rule.from ?? []).entries()) {
      if (peer.ipBlock && peer.ipBlock.cidr === undefined) errors.push(`${at}.from[${j}].ipBlock.cidr: Required value`);
      if (peer.securityGroup && peer.securityGroup.groupID === undefined) {
        errors.push(`${at}.from[${j}].securityGroup.groupID: Required value`);
      }
    }
    for (const [j, port] of (rule.ports ?? []).entries()) {
      if (port.protocol !== undefined && !['TCP', 'UDP'].includes(port.protocol)) {
        errors.push(unsupported(`${at}.ports[${j}].protocol`, port.protocol, ['TCP', 'UDP']));
      }
      if (port.port !== undefined) intOrString(`${at}.ports[${j}].port`, port.port, errors);
    }
  }
}

function intOrString(at: string, value: unknown, errors: string[]): void {
  if (typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value))) return;
  errors.push(wrongType(at, value, 'integer or string'));
}

function wrongType(at: string, value: unknown, expected: string): string {
  return `${at}: Invalid value: "${typeof value}": ${at} in body must be of type ${expected}: "${typeof value}"`;
}

function unsupported(at: string, value: unknown, allowed: readonly string[]): string {
  return `${at}: Unsupported value: "${String(value)}": supported values: ${allowed.map((v) => `"${v}"`).join(', ')}`;
}

/** A field of the schema: a leaf (any value kept), an object of known fields, a list of one shape, or a string map. */
type Shape = true | 'map' | readonly [Shape] | { readonly [field: string]: Shape };

const PEER: Shape = { ipBlock: { cidr: true }, securityGroup: { groupID: true } };
const SPEC: Shape = {
  serviceRef: { name: true, port: true },
  targetGroupARN: true,
  targetGroupName: true,
  targetType: true,
  targetGroupProtocol: true,
  ipAddressType: true,
  vpcID: true,
  nodeSelector: { matchLabels: 'map', matchExpressions: [{ key: true, operator: true, values: true }] },
  networking: { ingress: [{ from: [PEER], ports: [{ protocol: true, port: true }] }] },
  multiClusterTargetGroup: true,
  iamRoleArnToAssume: true,
  assumeRoleExternalId: true,
};
const STATUS: Shape = {
  observedGeneration: true,
  conditions: [
    { type: true, status: true, reason: true, message: true, lastTransitionTime: true, observedGeneration: true },
  ],
};
const BINDING: Shape = { apiVersion: true, kind: true, metadata: true, spec: SPEC, status: STATUS };

/**
 * The binding as the API server stores it: fields its structural schema does not know are dropped (pruning), at
 * every level, as the API server drops them before it validates.
 * https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning
 */
export function pruneTargetGroupBinding(binding: TargetGroupBinding): TargetGroupBinding {
  return prune(binding, BINDING) as TargetGroupBinding;
}

function prune(value: unknown, shape: Shape): unknown {
  if (shape === true || shape === 'map' || value === null || typeof value !== 'object') return value;
  if (Array.isArray(shape)) return Array.isArray(value) ? value.map((item) => prune(item, shape[0]!)) : value;
  if (Array.isArray(value)) return value;
  const fields = shape as { readonly [field: string]: Shape };
  const out: Record<string, unknown> = {};
  for (const [field, item] of Object.entries(value)) {
    if (field in fields) out[field] = prune(item, fields[field]!);
  }
  return out;
}
