import type { HealthCheck, TargetGroupProtocolVersion, TargetType } from '../../../shared/aws/elbv2-port.ts';
import { INGRESS_ANNOTATION_PREFIX } from '../../../shared/k8s/ingress-types.ts';
import type { Service, ServicePortSpec } from '../../../shared/k8s/types.ts';
import type { Problem } from './types.ts';

/**
 * The health check of an Ingress target group, from the `healthcheck-*`, `success-codes` and threshold
 * annotations (a Service's over its Ingress's), with the AWS Load Balancer Controller's defaults: the traffic
 * port, the group's protocol, `/` (`/AWS.ALB/healthcheck` for gRPC), every 15 s, 5 s timeout, 2 healthy and 2
 * unhealthy, success codes `200` (gRPC `12`).
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-health-checks.html
 */

export const HEALTH_CHECK_DEFAULTS = {
  port: 'traffic-port',
  path: '/',
  grpcPath: '/AWS.ALB/healthcheck',
  httpCode: '200',
  grpcCode: '12',
  intervalSeconds: 15,
  timeoutSeconds: 5,
  healthyThreshold: 2,
  unhealthyThreshold: 2,
} as const;

export const HEALTH_CHECK_ANNOTATIONS = {
  port: `${INGRESS_ANNOTATION_PREFIX}healthcheck-port`,
  protocol: `${INGRESS_ANNOTATION_PREFIX}healthcheck-protocol`,
  path: `${INGRESS_ANNOTATION_PREFIX}healthcheck-path`,
  interval: `${INGRESS_ANNOTATION_PREFIX}healthcheck-interval-seconds`,
  timeout: `${INGRESS_ANNOTATION_PREFIX}healthcheck-timeout-seconds`,
  healthy: `${INGRESS_ANNOTATION_PREFIX}healthy-threshold-count`,
  unhealthy: `${INGRESS_ANNOTATION_PREFIX}unhealthy-threshold-count`,
  successCodes: `${INGRESS_ANNOTATION_PREFIX}success-codes`,
} as const;

/** A Service's port by number (`port`) or by name, as a backend or annotation names it. */
export function findServicePort(service: Service, port: number | string): ServicePortSpec | undefined {
  return service.spec?.ports?.find((p) => (typeof port === 'number' ? p.port === port : p.name === port));
}

/** A base-10 integer as Go's strconv.ParseInt reads it (no spaces, an optional sign). */
export function parseIntAnnotation(raw: string): number | undefined {
  return /^[+-]?\d+$/.test(raw) ? Number(raw) : undefined;
}

export interface HealthCheckInput {
  /** The Service's annotations over the Ingress's. */
  annotations: Readonly<Record<string, string>>;
  service: Service;
  targetType: TargetType;
  protocol: 'HTTP' | 'HTTPS';
  protocolVersion: TargetGroupProtocolVersion;
}

export type HealthCheckResult = { healthCheck: HealthCheck } | { problems: Problem[] };

export function buildHealthCheck(input: HealthCheckInput): HealthCheckResult {
  const a = input.annotations;
  const problems: Problem[] = [];
  const integer = (key: string, fallback: number): number => {
    const raw = a[key];
    if (raw === undefined) return fallback;
    const value = parseIntAnnotation(raw);
    if (value === undefined) problems.push({ at: key, message: `${JSON.stringify(raw)} is not an integer` });
    return value ?? fallback;
  };
  const port = healthCheckPort(input, problems);
  const protocol = a[HEALTH_CHECK_ANNOTATIONS.protocol] ?? input.protocol;
  if (protocol !== 'HTTP' && protocol !== 'HTTPS') {
    problems.push({ at: HEALTH_CHECK_ANNOTATIONS.protocol, message: `must be HTTP or HTTPS, not ${protocol}` });
  }
  const grpc = input.protocolVersion === 'GRPC';
  const path = a[HEALTH_CHECK_ANNOTATIONS.path] ?? (grpc ? HEALTH_CHECK_DEFAULTS.grpcPath : HEALTH_CHECK_DEFAULTS.path);
  const codes =
    a[HEALTH_CHECK_ANNOTATIONS.successCodes] ??
    (grpc ? HEALTH_CHECK_DEFAULTS.grpcCode : HEALTH_CHECK_DEFAULTS.httpCode);
  const healthCheck: HealthCheck = {
    protocol: protocol === 'HTTPS' ? 'HTTPS' : 'HTTP',
    port,
    path,
    matcher: grpc ? { grpcCode: codes } : { httpCode: codes },
    intervalSeconds: integer(HEALTH_CHECK_ANNOTATIONS.interval, HEALTH_CHECK_DEFAULTS.intervalSeconds),
    timeoutSeconds: integer(HEALTH_CHECK_ANNOTATIONS.timeout, HEALTH_CHECK_DEFAULTS.timeoutSeconds),
    healthyThreshold: integer(HEALTH_CHECK_ANNOTATIONS.healthy, HEALTH_CHECK_DEFAULTS.healthyThreshold),
    unhealthyThreshold: integer(HEALTH_CHECK_ANNOTATIONS.unhealthy, HEALTH_CHECK_DEFAULTS.unhealthyThreshold),
  };
  return problems.length > 0 ? { problems } : { healthCheck };
}

/**
 * `traffic-port` (the default), a number, or a port name of the Service: its node port for instance targets, its
 * numeric target port for IP targets (a named target port differs per Pod, so it cannot be used).
 */
function healthCheckPort(input: HealthCheckInput, problems: Problem[]): string {
  const at = HEALTH_CHECK_ANNOTATIONS.port;
  const raw = input.annotations[at];
  if (raw === undefined || raw === HEALTH_CHECK_DEFAULTS.port) return HEALTH_CHECK_DEFAULTS.port;
  const number = parseIntAnnotation(raw);
  if (number !== undefined) return String(number);
  const name = `${input.service.metadata.namespace ?? 'default'}/${input.service.metadata.name}`;
  const port = findServicePort(input.service, raw);
  if (!port) {
    problems.push({ at, message: `port ${raw} not found on Service ${name}` });
    return HEALTH_CHECK_DEFAULTS.port;
  }
  if (input.targetType === 'instance') {
    if (!port.nodePort) {
      problems.push({ at, message: `port ${raw} of Service ${name} has no node port` });
      return HEALTH_CHECK_DEFAULTS.port;
    }
    return String(port.nodePort);
  }
  const target = port.targetPort ?? port.port;
  if (typeof target === 'number') return String(target);
  problems.push({
    at,
    message: `cannot use named port ${raw} with IP targets: the target port of Service ${name} is named (${target})`,
  });
  return HEALTH_CHECK_DEFAULTS.port;
}
