import type { HealthCheck } from '../aws/elbv2-port.ts';

/**
 * Health check defaults for Network Load Balancer target groups, as the reference controllers set them:
 * TCP on the traffic port; with `externalTrafficPolicy: Local` and instance targets, kube-proxy's health
 * check node port answers HTTP `/healthz` (200 only on Nodes with a ready endpoint), checked more often
 * so traffic leaves a Node quickly. Timeouts are AWS's defaults per protocol (10 s TCP, 6 s HTTP).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/target-group-health-checks.html
 */
export const DEFAULT_HEALTH_CHECK: HealthCheck = {
  protocol: 'TCP',
  port: 'traffic-port',
  intervalSeconds: 30,
  timeoutSeconds: 10,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
};

/**
 * The AWS Load Balancer Controller's default for a Network Load Balancer target group: TCP on the traffic port, every
 * 10 s (the others as above). Also what a target group someone made with Terraform usually has, in tests and the
 * simulation.
 */
export const LBC_TCP_HEALTH_CHECK: HealthCheck = { ...DEFAULT_HEALTH_CHECK, intervalSeconds: 10 };

export const LOCAL_HEALTH_CHECK = {
  protocol: 'HTTP',
  path: '/healthz',
  intervalSeconds: 10,
  timeoutSeconds: 6,
  healthyThreshold: 2,
  unhealthyThreshold: 2,
} as const;

export function healthCheckMatches(current: HealthCheck, desired: HealthCheck): boolean {
  return (
    current.protocol === desired.protocol &&
    current.port === desired.port &&
    (desired.protocol === 'TCP' || (current.path ?? '/') === (desired.path ?? '/')) &&
    current.intervalSeconds === desired.intervalSeconds &&
    current.timeoutSeconds === desired.timeoutSeconds &&
    current.healthyThreshold === desired.healthyThreshold &&
    current.unhealthyThreshold === desired.unhealthyThreshold
  );
}
