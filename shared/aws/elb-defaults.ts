import type { ClassicAttributes, ClassicHealthCheck } from './elb-port.ts';

/**
 * What a Classic Load Balancer made through the API has until told otherwise, and the ranges AWS accepts: one
 * place for the fake (what a new load balancer starts with) and the controller (what "no annotation" puts back).
 */

/**
 * Attributes of a load balancer created with the API or CLI: cross-zone load balancing off (the console turns it
 * on, the API does not), idle timeout 60 seconds, connection draining off with a 300-second timeout, access logs
 * off (an enabled log is emitted every 60 minutes unless 5 is asked for).
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_LoadBalancerAttributes.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/enable-disable-crosszone-lb.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/config-idle-timeout.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/config-conn-drain.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/access-log-collection.html
 */
export const CLASSIC_ATTRIBUTE_DEFAULTS: Readonly<ClassicAttributes> = Object.freeze({
  crossZone: false,
  idleTimeoutSeconds: 60,
  connectionDraining: Object.freeze({ enabled: false, timeoutSeconds: 300 }),
  accessLog: Object.freeze({ enabled: false }),
});

/** A fresh copy of the defaults, for callers that change what they get. */
export function classicAttributeDefaults(): ClassicAttributes {
  // structuredClone copies the frozen objects into plain, writable ones.
  return structuredClone(CLASSIC_ATTRIBUTE_DEFAULTS) as ClassicAttributes;
}

/** ConnectionSettings.IdleTimeout: 1-4000 seconds. */
export const CLASSIC_IDLE_TIMEOUT_RANGE = { min: 1, max: 4000 } as const;
/** ConnectionDraining.Timeout: 1-3600 seconds. */
export const CLASSIC_DRAINING_TIMEOUT_RANGE = { min: 1, max: 3600 } as const;
/** AccessLog.EmitInterval: 5 or 60 minutes. */
export const CLASSIC_ACCESS_LOG_EMIT_INTERVALS: readonly number[] = [5, 60];

/**
 * The health check of a load balancer created with the API: TCP on port 80, every 30 seconds, 5-second timeout,
 * 10 successes to turn healthy, 2 failures to turn unhealthy.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-healthchecks.html
 */
export const CLASSIC_HEALTH_CHECK_DEFAULTS: Readonly<ClassicHealthCheck> = Object.freeze({
  target: 'TCP:80',
  intervalSeconds: 30,
  timeoutSeconds: 5,
  healthyThreshold: 10,
  unhealthyThreshold: 2,
});

/**
 * Health check ranges: interval 5-300 s, timeout 2-60 s and below the interval, thresholds 2-10; the target is
 * `TCP:<port>` or `SSL:<port>`, or `HTTP:<port>/<path>` / `HTTPS:<port>/<path>`.
 * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_HealthCheck.html
 */
export const CLASSIC_HEALTH_CHECK_RANGES = {
  intervalSeconds: { min: 5, max: 300 },
  timeoutSeconds: { min: 2, max: 60 },
  healthyThreshold: { min: 2, max: 10 },
  unhealthyThreshold: { min: 2, max: 10 },
} as const;

/**
 * The policy types the service controller uses: proxy protocol on a back end (attribute `ProxyProtocol=true`),
 * and SSL negotiation on an SSL/HTTPS listener (attribute `Reference-Security-Policy=<ELBSecurityPolicy-...>`).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/enable-proxy-protocol.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-security-policy-table.html
 */
export const PROXY_PROTOCOL_POLICY_TYPE = 'ProxyProtocolPolicyType';
export const SSL_NEGOTIATION_POLICY_TYPE = 'SSLNegotiationPolicyType';
export const REFERENCE_SECURITY_POLICY = 'Reference-Security-Policy';

/** At most 50 tags on a load balancer. https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/add-remove-tags.html */
export const CLASSIC_TAGS_PER_LOAD_BALANCER = 50;
