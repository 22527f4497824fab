import type { HealthCheck } from '../../../shared/aws/elbv2-port.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import type { AnnotationProblem, LoadBalancerOptions } from '../annotations.ts';

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

export const LOCAL_HEALTH_CHECK = {
  protocol: 'HTTP',
  path: '/healthz',
  intervalSeconds: 10,
  timeoutSeconds: 6,
  healthyThreshold: 2,
  unhealthyThreshold: 2,
} as const;

export function healthCheckFor(
  service: Service,
  options: LoadBalancerOptions,
  local: boolean,
  problems: AnnotationProblem[],
): HealthCheck {
  const annotated = options.healthCheck;
  let base: HealthCheck = { ...DEFAULT_HEALTH_CHECK };
  // With IP targets traffic goes straight to Pods: kube-proxy's per-Node health check says nothing about them.
  if (local && options.targetType === 'instance') {
    const port = service.spec?.healthCheckNodePort;
    if (!port) {
      problems.push({
        annotation: 'spec.healthCheckNodePort',
        message: 'externalTrafficPolicy: Local needs a health check node port',
      });
    } else {
      base = { ...LOCAL_HEALTH_CHECK, port: String(port) };
    }
  }
  const protocol = annotated.protocol ?? base.protocol;
  const check: HealthCheck = {
    protocol,
    port: annotated.port === undefined ? base.port : String(annotated.port),
    intervalSeconds: annotated.intervalSeconds ?? base.intervalSeconds,
    timeoutSeconds:
      annotated.timeoutSeconds ?? (protocol === base.protocol ? base.timeoutSeconds : protocol === 'HTTP' ? 6 : 10),
    healthyThreshold: annotated.healthyThreshold ?? base.healthyThreshold,
    unhealthyThreshold: annotated.unhealthyThreshold ?? base.unhealthyThreshold,
  };
  if (protocol !== 'TCP') check.path = annotated.path ?? base.path ?? '/';
  return check;
}

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
