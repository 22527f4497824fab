import type {
  CreateLoadBalancerPolicyInput,
  DescribeLoadBalancerPoliciesInput,
  LoadBalancerAttributes,
  PolicyDescription,
  SetLoadBalancerPoliciesForBackendServerInput,
  SetLoadBalancerPoliciesOfListenerInput,
} from '@aws-sdk/client-elastic-load-balancing';
import { toSdkAttributes } from '../../elb-adapter-shapes.ts';
import {
  CLASSIC_ACCESS_LOG_EMIT_INTERVALS,
  CLASSIC_DRAINING_TIMEOUT_RANGE,
  CLASSIC_IDLE_TIMEOUT_RANGE,
  PROXY_PROTOCOL_POLICY_TYPE,
  REFERENCE_SECURITY_POLICY,
  SSL_NEGOTIATION_POLICY_TYPE,
} from '../../elb-defaults.ts';
import type { ClassicAttributes, ClassicPolicy } from '../../elb-port.ts';
import { classicFailure, type FakeClassicLoadBalancer } from './model.ts';

/** FakeElb's attributes and policies of one load balancer: the API's rules for them, on its state. */

/** As DescribeLoadBalancerAttributes answers them (a disabled access log shows no bucket). */
export function describeAttributes(lb: FakeClassicLoadBalancer): LoadBalancerAttributes {
  return toSdkAttributes(lb.attributes);
}

function inRange(value: number | undefined, range: { min: number; max: number }, what: string): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw classicFailure('ValidationError', `${what} must be between ${range.min} and ${range.max}`);
  }
}

/**
 * Only the attributes in the request change. An enabled access log needs a bucket.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_ModifyLoadBalancerAttributes.html
 */
export function modifyAttributes(lb: FakeClassicLoadBalancer, sdk: LoadBalancerAttributes | undefined): void {
  const next: ClassicAttributes = structuredClone(lb.attributes);
  if (sdk?.CrossZoneLoadBalancing) next.crossZone = sdk.CrossZoneLoadBalancing.Enabled === true;
  if (sdk?.ConnectionSettings) {
    inRange(sdk.ConnectionSettings.IdleTimeout, CLASSIC_IDLE_TIMEOUT_RANGE, 'IdleTimeout');
    next.idleTimeoutSeconds = sdk.ConnectionSettings.IdleTimeout ?? next.idleTimeoutSeconds;
  }
  if (sdk?.ConnectionDraining) {
    inRange(sdk.ConnectionDraining.Timeout, CLASSIC_DRAINING_TIMEOUT_RANGE, 'ConnectionDraining Timeout');
    next.connectionDraining = {
      enabled: sdk.ConnectionDraining.Enabled === true,
      timeoutSeconds: sdk.ConnectionDraining.Timeout ?? next.connectionDraining.timeoutSeconds,
    };
  }
  const log = sdk?.AccessLog;
  if (log) {
    if (log.EmitInterval !== undefined && !CLASSIC_ACCESS_LOG_EMIT_INTERVALS.includes(log.EmitInterval)) {
      throw classicFailure('ValidationError', 'EmitInterval must be 5 or 60 minutes');
    }
    if (log.Enabled && !log.S3BucketName) {
      throw classicFailure('InvalidConfigurationRequest', 'An enabled access log needs an S3 bucket');
    }
    next.accessLog = log.Enabled
      ? {
          enabled: true,
          s3BucketName: log.S3BucketName as string,
          ...(log.S3BucketPrefix ? { s3BucketPrefix: log.S3BucketPrefix } : {}),
          emitIntervalMinutes: log.EmitInterval ?? 60,
        }
      : { enabled: false };
  }
  lb.attributes = next;
}

/** Policy types this fake knows; the ones a listener or a back end may carry. */
const LISTENER_TYPES = new Set([
  SSL_NEGOTIATION_POLICY_TYPE,
  'AppCookieStickinessPolicyType',
  'LBCookieStickinessPolicyType',
]);
const BACKEND_TYPES = new Set([PROXY_PROTOCOL_POLICY_TYPE, 'BackendServerAuthenticationPolicyType']);
const KNOWN_TYPES = new Set([...LISTENER_TYPES, ...BACKEND_TYPES, 'PublicKeyPolicyType']);

/**
 * A proxy protocol policy has `ProxyProtocol` true or false; an SSL negotiation policy made from a predefined
 * policy (`Reference-Security-Policy`) is answered with the protocols and options that policy stands for, as AWS
 * does (two of them here: enough that a caller must look at the reference alone).
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_CreateLoadBalancerPolicy.html
 */
export function createPolicy(lb: FakeClassicLoadBalancer, input: CreateLoadBalancerPolicyInput): void {
  const policyName = input.PolicyName ?? '';
  const type = input.PolicyTypeName ?? '';
  if (!KNOWN_TYPES.has(type)) throw classicFailure('PolicyTypeNotFound', `Policy type ${type} not found`);
  if (lb.policies.has(policyName)) {
    throw classicFailure('DuplicatePolicyName', `Policy ${policyName} already exists on ${lb.name}`);
  }
  const attributes: Record<string, string> = {};
  for (const a of input.PolicyAttributes ?? [])
    if (a.AttributeName) attributes[a.AttributeName] = a.AttributeValue ?? '';
  if (type === PROXY_PROTOCOL_POLICY_TYPE && !['true', 'false'].includes(attributes.ProxyProtocol ?? '')) {
    throw classicFailure('InvalidConfigurationRequest', 'ProxyProtocolPolicyType needs ProxyProtocol=true or false');
  }
  const reference = attributes[REFERENCE_SECURITY_POLICY];
  if (type === SSL_NEGOTIATION_POLICY_TYPE && reference !== undefined) {
    if (!reference.startsWith('ELBSecurityPolicy-')) {
      throw classicFailure('InvalidConfigurationRequest', `${reference} is not a predefined security policy`);
    }
    Object.assign(attributes, { 'Protocol-TLSv1.2': 'true', 'Server-Defined-Cipher-Order': 'true' });
  }
  lb.policies.set(policyName, { policyName, policyTypeName: type, attributes });
}

function policiesNamed(lb: FakeClassicLoadBalancer, names: readonly string[]): ClassicPolicy[] {
  return names.map((name) => {
    const policy = lb.policies.get(name);
    if (!policy) throw classicFailure('PolicyNotFound', `There is no policy named ${name} on ${lb.name}`);
    return policy;
  });
}

/**
 * Replaces a listener's policies: the listener must exist (ListenerNotFound); SSL negotiation only on SSL/HTTPS
 * listeners, stickiness only on HTTP/HTTPS ones, at most one SSL negotiation policy.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_SetLoadBalancerPoliciesOfListener.html
 */
export function setListenerPolicies(lb: FakeClassicLoadBalancer, input: SetLoadBalancerPoliciesOfListenerInput): void {
  const entry = lb.listeners.get(input.LoadBalancerPort ?? -1);
  if (!entry) {
    throw classicFailure('ListenerNotFound', `${lb.name} has no listener on port ${input.LoadBalancerPort}`);
  }
  const policies = policiesNamed(lb, input.PolicyNames ?? []);
  const secure = entry.listener.protocol === 'SSL' || entry.listener.protocol === 'HTTPS';
  const http = entry.listener.protocol === 'HTTP' || entry.listener.protocol === 'HTTPS';
  for (const p of policies) {
    const fits =
      p.policyTypeName === SSL_NEGOTIATION_POLICY_TYPE ? secure : LISTENER_TYPES.has(p.policyTypeName) && http;
    if (!fits) {
      throw classicFailure(
        'InvalidConfigurationRequest',
        `Policy ${p.policyName} (${p.policyTypeName}) cannot be set on a ${entry.listener.protocol} listener`,
      );
    }
  }
  if (policies.filter((p) => p.policyTypeName === SSL_NEGOTIATION_POLICY_TYPE).length > 1) {
    throw classicFailure('InvalidConfigurationRequest', 'A listener takes one SSL negotiation policy');
  }
  entry.policyNames = policies.map((p) => p.policyName);
}

/**
 * Replaces a back end's policies (none removes them): proxy protocol or back-end authentication only.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_SetLoadBalancerPoliciesForBackendServer.html
 */
export function setBackendPolicies(
  lb: FakeClassicLoadBalancer,
  input: SetLoadBalancerPoliciesForBackendServerInput,
): void {
  const port = input.InstancePort ?? -1;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw classicFailure('ValidationError', `Instance port ${input.InstancePort} is not valid`);
  }
  const policies = policiesNamed(lb, input.PolicyNames ?? []);
  const misfit = policies.find((p) => !BACKEND_TYPES.has(p.policyTypeName));
  if (misfit) {
    throw classicFailure(
      'InvalidConfigurationRequest',
      `Policy ${misfit.policyName} (${misfit.policyTypeName}) cannot be set on a back-end server`,
    );
  }
  if (policies.length === 0) lb.backendPolicies.delete(port);
  else
    lb.backendPolicies.set(
      port,
      policies.map((p) => p.policyName),
    );
}

/**
 * "This policy must not be enabled for any listeners" (nor back ends); a policy that is not there is no error.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DeleteLoadBalancerPolicy.html
 */
export function deletePolicy(lb: FakeClassicLoadBalancer, policyName: string): void {
  const inUse =
    [...lb.listeners.values()].some((l) => l.policyNames.includes(policyName)) ||
    [...lb.backendPolicies.values()].some((names) => names.includes(policyName));
  if (inUse) throw classicFailure('InvalidConfigurationRequest', `Policy ${policyName} is in use on ${lb.name}`);
  lb.policies.delete(policyName);
}

/** The load balancer's own policies, or those named (PolicyNotFound for one it does not have). */
export function describePolicies(
  lb: FakeClassicLoadBalancer,
  input: DescribeLoadBalancerPoliciesInput,
): PolicyDescription[] {
  const policies = input.PolicyNames?.length ? policiesNamed(lb, input.PolicyNames) : [...lb.policies.values()];
  return policies.map((p) => ({
    PolicyName: p.policyName,
    PolicyTypeName: p.policyTypeName,
    PolicyAttributeDescriptions: Object.entries(p.attributes).map(([AttributeName, AttributeValue]) => ({
      AttributeName,
      AttributeValue,
    })),
  }));
}
