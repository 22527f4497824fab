import { KubernetesApiError } from '../errors.ts';
import type { IngressClassParams } from '../ingress-types.ts';

/**
 * What the API server refuses in an IngressClassParams, by the schema of deploy/crds/ingressclassparams.yaml: the
 * enums, the required fields, the subnet ID pattern, and the rule against both spellings of the prefix lists.
 * test/k8s-contract/ingress-crd.test.ts runs the same refusals on a real API server and on FakeIngresses.
 */

const ENUMS: Record<string, readonly string[]> = {
  scheme: ['internal', 'internet-facing'],
  ipAddressType: ['ipv4', 'dualstack', 'dualstack-without-public-ipv4'],
  targetType: ['instance', 'ip'],
};
const AUTH_TYPES = ['none', 'oidc', 'cognito'];
/** An OpenAPI pattern is not anchored: it matches anywhere in the value. */
const SUBNET_ID = /subnet-[0-9a-f]+/;

export function validateIngressClassParams(params: IngressClassParams): void {
  const errors: string[] = [];
  const spec = (params.spec ?? {}) as Record<string, unknown> & NonNullable<IngressClassParams['spec']>;
  for (const [field, allowed] of Object.entries(ENUMS)) {
    const value = spec[field];
    if (value !== undefined && !allowed.includes(value as string))
      errors.push(unsupported(`spec.${field}`, value, allowed));
  }
  if (spec.group && typeof spec.group.name !== 'string') errors.push('spec.group.name: Required value');
  if (spec.subnets?.ids !== undefined) {
    if (spec.subnets.ids.length === 0)
      errors.push('spec.subnets.ids: Invalid value: 0: spec.subnets.ids in body should have at least 1 items');
    for (const [i, id] of spec.subnets.ids.entries()) {
      if (!SUBNET_ID.test(id))
        errors.push(
          `spec.subnets.ids[${i}]: Invalid value: "${id}": spec.subnets.ids[${i}] in body should match 'subnet-[0-9a-f]+'`,
        );
    }
  }
  keyValues('spec.tags', spec.tags, errors);
  keyValues('spec.loadBalancerAttributes', spec.loadBalancerAttributes, errors);
  for (const [i, listener] of (spec.listeners ?? []).entries()) {
    keyValues(`spec.listeners[${i}].listenerAttributes`, listener.listenerAttributes, errors);
  }
  if (spec.minimumLoadBalancerCapacity && spec.minimumLoadBalancerCapacity.capacityUnits === undefined) {
    errors.push('spec.minimumLoadBalancerCapacity.capacityUnits: Required value');
  }
  for (const [i, requirement] of (spec.namespaceSelector?.matchExpressions ?? []).entries()) {
    if (requirement.key === undefined) errors.push(`spec.namespaceSelector.matchExpressions[${i}].key: Required value`);
    if (requirement.operator === undefined) {
      errors.push(`spec.namespaceSelector.matchExpressions[${i}].operator: Required value`);
    }
  }
  const auth = spec.authenticationConfiguration as { type?: string } | undefined;
  if (auth) {
    if (auth.type === undefined) errors.push('spec.authenticationConfiguration.type: Required value');
    else if (!AUTH_TYPES.includes(auth.type)) {
      errors.push(unsupported('spec.authenticationConfiguration.type', auth.type, AUTH_TYPES));
    }
  }
  if (spec.prefixListsIDs !== undefined && spec.PrefixListsIDs !== undefined) {
    errors.push('spec: Invalid value: "object": set prefixListsIDs or the older PrefixListsIDs, not both');
  }
  if (errors.length > 0) {
    throw new KubernetesApiError(
      422,
      'Invalid',
      `IngressClassParams.elbv2.k8s.aws "${params.metadata.name}" is invalid: [${errors.join(', ')}]`,
    );
  }
}

function unsupported(at: string, value: unknown, allowed: readonly string[]): string {
  return `${at}: Unsupported value: "${String(value)}": supported values: ${allowed.map((v) => `"${v}"`).join(', ')}`;
}

function keyValues(at: string, list: { key?: string; value?: string }[] | undefined, errors: string[]): void {
  for (const [i, item] of (list ?? []).entries()) {
    if (item.key === undefined) errors.push(`${at}[${i}].key: Required value`);
    if (item.value === undefined) errors.push(`${at}[${i}].value: Required value`);
  }
}
