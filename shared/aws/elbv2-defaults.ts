import type {
  HealthCheck,
  ListenerProtocol,
  TargetGroupProtocol,
  TargetGroupProtocolVersion,
  TargetType,
} from './elbv2-port.ts';

/**
 * AWS's defaults for Network Load Balancers (and, at the end, Application Load Balancers), in one place: what a new load balancer, target group and listener
 * read back before anyone sets anything. The controller's model asks for these values when a Service does not
 * (shared/load-balancers/aws-defaults.ts: an annotation removed puts AWS's default back), FakeElbv2 answers them
 * for a resource it creates, and the ELBv2 contract suite checks the emulator against them. Attribute values are
 * strings, as the API states them.
 */

/**
 * Every attribute of a new Network Load Balancer and its default.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancerAttribute.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/edit-load-balancer-attributes.html
 */
export const NLB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deletion_protection.enabled': 'false',
  // "The default for Network Load Balancers and Gateway Load Balancers is false."
  'load_balancing.cross_zone.enabled': 'false',
  'access_logs.s3.enabled': 'false',
  'access_logs.s3.bucket': '',
  'access_logs.s3.prefix': '',
  'ipv6.deny_all_igw_traffic': 'false',
  'dns_record.client_routing_policy': 'any_availability_zone',
  'zonal_shift.config.enabled': 'false',
};

/**
 * Every attribute of a new Network Load Balancer target group but `preserve_client_ip.enabled`, whose default
 * depends on the group (see nlbPreserveClientIpDefault).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetGroupAttribute.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/edit-target-group-attributes.html
 */
export const NLB_TARGET_GROUP_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deregistration_delay.timeout_seconds': '300',
  'deregistration_delay.connection_termination.enabled': 'false',
  'proxy_protocol_v2.enabled': 'false',
  'stickiness.enabled': 'false',
  'stickiness.type': 'source_ip',
  'load_balancing.cross_zone.enabled': 'use_load_balancer_configuration',
  'target_health_state.unhealthy.connection_termination.enabled': 'true',
  'target_group_health.dns_failover.minimum_healthy_targets.count': '1',
  'target_group_health.unhealthy_state_routing.minimum_healthy_targets.count': '1',
};

export const PRESERVE_CLIENT_IP_ATTRIBUTE = 'preserve_client_ip.enabled';

/**
 * "The default is disabled if the target group type is IP address and the target group protocol is TCP or TLS.
 * Otherwise, the default is enabled. Client IP preservation can't be disabled for UDP and TCP_UDP target groups."
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetGroupAttribute.html
 */
export function nlbPreserveClientIpDefault(targetType: TargetType, protocol: TargetGroupProtocol): 'true' | 'false' {
  return targetType === 'ip' && (protocol === 'TCP' || protocol === 'TLS') ? 'false' : 'true';
}

/** Every attribute a new Network Load Balancer target group of this type and protocol reads back. */
export function nlbTargetGroupAttributeDefaults(
  targetType: TargetType,
  protocol: TargetGroupProtocol,
): Record<string, string> {
  return {
    ...NLB_TARGET_GROUP_ATTRIBUTE_DEFAULTS,
    [PRESERVE_CLIENT_IP_ATTRIBUTE]: nlbPreserveClientIpDefault(targetType, protocol),
  };
}

/**
 * The one listener attribute of a Network Load Balancer, on TCP listeners only: the idle timeout, 350 seconds
 * unless set between 60 and 6000. A TLS listener's idle timeout is fixed at 350 seconds and a UDP listener's at
 * 120, so they have no attribute to read or set.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ListenerAttribute.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html
 */
export const TCP_IDLE_TIMEOUT_ATTRIBUTE = 'tcp.idle_timeout.seconds';
export const DEFAULT_TCP_IDLE_TIMEOUT_SECONDS = 350;
export const TCP_IDLE_TIMEOUT_RANGE = { min: 60, max: 6000 } as const;

/** Every attribute a new listener of this protocol reads back (TCP: the idle timeout; the others have none). */
export function nlbListenerAttributeDefaults(protocol: ListenerProtocol): Record<string, string> {
  return protocol === 'TCP' ? { [TCP_IDLE_TIMEOUT_ATTRIBUTE]: String(DEFAULT_TCP_IDLE_TIMEOUT_SECONDS) } : {};
}

/**
 * The security policy of a TLS listener created through the API without one (the console's default differs).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/describe-ssl-policies.html
 */
export const TLS_LISTENER_DEFAULT_SSL_POLICY = 'ELBSecurityPolicy-2016-08';

/**
 * The health check of a Network Load Balancer target group created without one: TCP on the traffic port every 30
 * seconds, 10 s timeout (6 s for HTTP), 5 successes to be healthy and 2 failures to be unhealthy; HTTP and HTTPS
 * checks ask for `/`.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/target-group-health-checks.html
 */
export function nlbHealthCheckDefaults(protocol: HealthCheck['protocol'] = 'TCP'): HealthCheck {
  return {
    protocol,
    port: 'traffic-port',
    ...(protocol === 'TCP' ? {} : { path: '/' }),
    intervalSeconds: 30,
    timeoutSeconds: protocol === 'HTTP' ? 6 : 10,
    healthyThreshold: 5,
    unhealthyThreshold: 2,
  };
}

/**
 * Every attribute of a new Application Load Balancer and its default (cross-zone load balancing is always on).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancerAttribute.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/application-load-balancers.html#load-balancer-attributes
 */
export const ALB_LOAD_BALANCER_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deletion_protection.enabled': 'false',
  'load_balancing.cross_zone.enabled': 'true',
  'access_logs.s3.enabled': 'false',
  'access_logs.s3.bucket': '',
  'access_logs.s3.prefix': '',
  'connection_logs.s3.enabled': 'false',
  'connection_logs.s3.bucket': '',
  'connection_logs.s3.prefix': '',
  'ipv6.deny_all_igw_traffic': 'false',
  'idle_timeout.timeout_seconds': '60',
  'client_keep_alive.seconds': '3600',
  'routing.http.desync_mitigation_mode': 'defensive',
  'routing.http.drop_invalid_header_fields.enabled': 'false',
  'routing.http.preserve_host_header.enabled': 'false',
  'routing.http.x_amzn_tls_version_and_cipher_suite.enabled': 'false',
  'routing.http.xff_client_port.enabled': 'false',
  'routing.http.xff_header_processing.mode': 'append',
  'routing.http2.enabled': 'true',
  'waf.fail_open.enabled': 'false',
  'zonal_shift.config.enabled': 'false',
};

/**
 * Every attribute of a new HTTP or HTTPS target group (Application Load Balancers) and its default.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetGroupAttribute.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/edit-target-group-attributes.html
 */
export const ALB_TARGET_GROUP_ATTRIBUTE_DEFAULTS: Readonly<Record<string, string>> = {
  'deregistration_delay.timeout_seconds': '300',
  'stickiness.enabled': 'false',
  'stickiness.type': 'lb_cookie',
  'stickiness.lb_cookie.duration_seconds': '86400',
  'stickiness.app_cookie.cookie_name': '',
  'stickiness.app_cookie.duration_seconds': '86400',
  'load_balancing.algorithm.type': 'round_robin',
  'load_balancing.algorithm.anomaly_mitigation': 'off',
  'load_balancing.cross_zone.enabled': 'use_load_balancer_configuration',
  'slow_start.duration_seconds': '0',
  'target_group_health.dns_failover.minimum_healthy_targets.count': '1',
  'target_group_health.dns_failover.minimum_healthy_targets.percentage': 'off',
  'target_group_health.unhealthy_state_routing.minimum_healthy_targets.count': '1',
  'target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage': 'off',
};

/**
 * The health check of an HTTP or HTTPS target group created without one: HTTP every 30 seconds, 5 s timeout, 5
 * successes to be healthy and 2 failures to be unhealthy; `/` answering 200, or for GRPC groups the AWS health
 * check service `/AWS.ALB/healthcheck` answering gRPC code 12.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-health-checks.html
 */
export function albHealthCheckDefaults(
  protocol: HealthCheck['protocol'] = 'HTTP',
  protocolVersion: TargetGroupProtocolVersion = 'HTTP1',
): HealthCheck {
  const grpc = protocolVersion === 'GRPC';
  return {
    protocol,
    port: 'traffic-port',
    path: grpc ? '/AWS.ALB/healthcheck' : '/',
    intervalSeconds: 30,
    timeoutSeconds: 5,
    healthyThreshold: 5,
    unhealthyThreshold: 2,
    matcher: grpc ? { grpcCode: '12' } : { httpCode: '200' },
  };
}

/**
 * The security policy of an HTTPS listener created through the API without one, as for TLS listeners.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/describe-ssl-policies.html
 */
export const HTTPS_LISTENER_DEFAULT_SSL_POLICY = 'ELBSecurityPolicy-2016-08';
