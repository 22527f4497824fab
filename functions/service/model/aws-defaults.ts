import type { ListenerProtocol } from '../../../shared/aws/elbv2-port.ts';

// AWS's own defaults, kept in one place: the model asks for them, so an annotation removed puts them back.

/**
 * The load balancer switches a Service may set and AWS's value for each when it does not: kept in line on
 * every pass, so an annotation removed turns its setting off and a console change is put back. Values that
 * only mean something while a switch is on (the access log bucket and prefix) are left as they are.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#load-balancer-attributes
 */
export const LOAD_BALANCER_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'load_balancing.cross_zone.enabled': 'false',
  'access_logs.s3.enabled': 'false',
  'deletion_protection.enabled': 'false',
  'dns_record.client_routing_policy': 'any_availability_zone',
};

/**
 * The same for target groups. `preserve_client_ip.enabled` depends on the group: on for instance targets and
 * UDP, off for IP targets over TCP or TLS.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/edit-target-group-attributes.html
 */
export const TARGET_GROUP_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deregistration_delay.timeout_seconds': '300',
  'deregistration_delay.connection_termination.enabled': 'false',
  'proxy_protocol_v2.enabled': 'false',
  'stickiness.enabled': 'false',
};

/** A TCP listener's idle timeout when the Service does not set one. */
export const TCP_IDLE_TIMEOUT_ATTRIBUTE = 'tcp.idle_timeout.seconds';

export const DEFAULT_TCP_IDLE_TIMEOUT_SECONDS = 350;

/** The attributes AWS gives a new listener of this protocol (TCP: the idle timeout; others have none to set). */
export function defaultListenerAttributes(protocol: ListenerProtocol): Record<string, string> {
  return protocol === 'TCP' ? { [TCP_IDLE_TIMEOUT_ATTRIBUTE]: String(DEFAULT_TCP_IDLE_TIMEOUT_SECONDS) } : {};
}
