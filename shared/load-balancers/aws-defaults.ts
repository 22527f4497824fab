import {
  DEFAULT_TCP_IDLE_TIMEOUT_SECONDS,
  NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS,
  NLB_TARGET_GROUP_ATTRIBUTE_DEFAULTS,
  nlbListenerAttributeDefaults,
  nlbPreserveClientIpDefault,
  TCP_IDLE_TIMEOUT_ATTRIBUTE,
} from '../aws/elbv2-defaults.ts';
import type { ListenerProtocol } from '../aws/elbv2-port.ts';

// AWS's own defaults come from one fixture, shared/aws/elbv2-defaults.ts (FakeElbv2 answers the same values and
// the contract suite holds the emulator to them); this module picks the settings the model keeps in line.

export { DEFAULT_TCP_IDLE_TIMEOUT_SECONDS, nlbPreserveClientIpDefault, TCP_IDLE_TIMEOUT_ATTRIBUTE };

function pick(defaults: Readonly<Record<string, string>>, keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    keys.map((key) => {
      const value = defaults[key];
      if (value === undefined) throw new Error(`no AWS default for ${key}`);
      return [key, value];
    }),
  );
}

/**
 * The load balancer switches a Service may set and AWS's value for each when it does not: kept in line on
 * every pass, so an annotation removed turns its setting off and a console change is put back. Values that
 * only mean something while a switch is on (the access log bucket and prefix) are left as they are.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancerAttribute.html
 */
export const LOAD_BALANCER_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = pick(
  NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS,
  [
    'load_balancing.cross_zone.enabled',
    'access_logs.s3.enabled',
    'deletion_protection.enabled',
    'dns_record.client_routing_policy',
  ],
);

/**
 * The same for target groups. `preserve_client_ip.enabled` depends on the group (nlbPreserveClientIpDefault):
 * on for instance targets and UDP, off for IP targets over TCP or TLS.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetGroupAttribute.html
 */
export const TARGET_GROUP_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = pick(
  NLB_TARGET_GROUP_ATTRIBUTE_DEFAULTS,
  [
    'deregistration_delay.timeout_seconds',
    'deregistration_delay.connection_termination.enabled',
    'proxy_protocol_v2.enabled',
    'stickiness.enabled',
  ],
);

/**
 * The attributes AWS gives a new listener of this protocol (TCP: the idle timeout; others have none to set).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ListenerAttribute.html
 */
export function defaultListenerAttributes(protocol: ListenerProtocol): Record<string, string> {
  return nlbListenerAttributeDefaults(protocol);
}
