import type { HealthCheck } from '../../../shared/aws/elbv2-port.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import {
  DEFAULT_HEALTH_CHECK,
  LBC_TCP_HEALTH_CHECK,
  LOCAL_HEALTH_CHECK,
} from '../../../shared/load-balancers/health-check.ts';
import type { AnnotationProblem, LoadBalancerOptions } from '../annotations.ts';

/**
 * A Service's target group health check: the defaults (shared/load-balancers/health-check.ts), kube-proxy's
 * health check node port under `externalTrafficPolicy: Local`, and whatever the annotations set.
 */
export function healthCheckFor(
  service: Service,
  options: LoadBalancerOptions,
  local: boolean,
  problems: AnnotationProblem[],
): HealthCheck {
  const annotated = options.healthCheck;
  // The AWS Load Balancer Controller checks every 10 s by default (the in-tree provider every 30 s).
  let base: HealthCheck = options.lbc ? { ...LBC_TCP_HEALTH_CHECK } : { ...DEFAULT_HEALTH_CHECK };
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
