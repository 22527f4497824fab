import { TCP_IDLE_TIMEOUT_ATTRIBUTE, TCP_IDLE_TIMEOUT_RANGE } from '../../elbv2-defaults.ts';
import {
  ALPN_POLICIES,
  type Listener,
  type ListenerProtocol,
  type ListenerSpec,
  type TargetGroupProtocol,
} from '../../elbv2-port.ts';
import type { Elbv2State, FakeLoadBalancer } from './state.ts';
import { elbv2Failure } from './wire.ts';

/** What ELBv2 checks of a listener, on create and on modify (Network Load Balancers; attributes of every kind). */

/**
 * A listener's settings against its load balancer and target group: a port, a certificate on TLS, an ALPN policy
 * only on TLS (ALPNPolicyNotFound, which the SDK throws as ALPNPolicyNotSupportedException), an IPv6 target group
 * only behind a dualstack load balancer, protocols that fit, and a target group used by no other load balancer
 * (TargetGroupAssociationLimit). A target group still hidden after its creation is TargetGroupNotFound.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateListener.html
 */
export function checkListener(elb: Elbv2State, lb: FakeLoadBalancer, spec: ListenerSpec): void {
  const group = elb.groupOrThrow(spec.targetGroupArn);
  if (!Number.isInteger(spec.port) || spec.port < 1 || spec.port > 65535) {
    throw elbv2Failure('ValidationError', `Port ${spec.port} is not valid`);
  }
  if (spec.protocol === 'TLS' && !spec.certificateArn) {
    throw elbv2Failure('ValidationError', 'A certificate must be specified for TLS listeners');
  }
  // https://docs.aws.amazon.com/elasticloadbalancing/latest/network/tls-listener.html#alpn-policies
  if (spec.alpnPolicy !== undefined) {
    if (spec.protocol !== 'TLS' || !(ALPN_POLICIES as readonly string[]).includes(spec.alpnPolicy)) {
      throw elbv2Failure(
        'ALPNPolicyNotFound',
        `The ALPN policy '${spec.alpnPolicy}' is not supported for ${spec.protocol} listeners`,
      );
    }
  }
  if (group.tg.ipAddressType === 'ipv6' && lb.lb.ipAddressType !== 'dualstack') {
    throw elbv2Failure(
      'InvalidConfigurationRequest',
      `The IPv6 target group '${spec.targetGroupArn}' can only be used with a dualstack load balancer`,
    );
  }
  if (!compatible(spec.protocol, group.tg.protocol)) {
    throw elbv2Failure(
      'IncompatibleProtocols',
      `The listener protocol '${spec.protocol}' is not compatible with the target group protocol '${group.tg.protocol}'`,
    );
  }
  const elsewhere = [...elb.listeners.values()].some(
    (l) => l.targetGroupArn === spec.targetGroupArn && l.loadBalancerArn !== lb.lb.arn,
  );
  if (elsewhere) {
    throw elbv2Failure(
      'TargetGroupAssociationLimit',
      `The following target groups cannot be associated with more than one load balancer: ${spec.targetGroupArn}`,
    );
  }
}

/** https://docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-listeners.html */
function compatible(listener: ListenerProtocol, group: TargetGroupProtocol): boolean {
  if (listener === 'TLS') return group === 'TLS' || group === 'TCP';
  return listener === group;
}

/**
 * The one listener attribute of a Network Load Balancer, the TCP idle timeout: on TCP listeners only, within
 * 60-6000 seconds. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ListenerAttribute.html
 */
export function checkListenerAttributes(listener: Listener, attributes: Readonly<Record<string, string>>): void {
  if (listener.protocol === 'HTTP' || listener.protocol === 'HTTPS') {
    checkApplicationListenerAttributes(attributes);
    return;
  }
  for (const [key, value] of Object.entries(attributes)) {
    if (key !== TCP_IDLE_TIMEOUT_ATTRIBUTE) {
      throw elbv2Failure('ValidationError', `Listener attribute key '${key}' is not recognized`);
    }
    if (listener.protocol !== 'TCP') {
      throw elbv2Failure(
        'InvalidConfigurationRequest',
        `The attribute '${key}' can only be set on TCP listeners, not ${listener.protocol}`,
      );
    }
    const seconds = Number(value);
    const { min, max } = TCP_IDLE_TIMEOUT_RANGE;
    if (!/^\d+$/.test(value) || seconds < min || seconds > max) {
      throw elbv2Failure(
        'InvalidConfigurationRequest',
        `The value of '${key}' must be between ${min} and ${max} seconds`,
      );
    }
  }
}

/**
 * The attributes of an Application Load Balancer listener: the header names and response headers it may set
 * (`routing.http.request.*.header_name`, `routing.http.response.*`); the TCP idle timeout is for Network Load
 * Balancers. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ListenerAttribute.html
 */
function checkApplicationListenerAttributes(attributes: Readonly<Record<string, string>>): void {
  for (const key of Object.keys(attributes)) {
    if (!/^routing\.http\.(request|response)\.[a-z0-9_.]+$/.test(key)) {
      throw elbv2Failure('ValidationError', `Listener attribute key '${key}' is not recognized`);
    }
  }
}
