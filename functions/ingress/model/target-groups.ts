import type { TargetGroupProtocolVersion, TargetType } from '../../../shared/aws/elbv2-port.ts';
import type { GroupId } from '../../../shared/ingress/membership.ts';
import { INGRESS_ANNOTATION_PREFIX, type Ingress, type IngressClassParams } from '../../../shared/k8s/ingress-types.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { buildHealthCheck, findServicePort } from './health-check.ts';
import { targetGroupName, targetGroupResourceId } from './names.ts';
import type { ModelSettings, ModelTargetGroup, Problem } from './types.ts';

/**
 * One target group per (Ingress, Service, service port), as the AWS Load Balancer Controller builds it. The
 * target-group annotations may be on the Service too, and the Service's win over the Ingress's (one Service can
 * then be served the same way by every Ingress); IngressClassParams' `targetType` and `tags` win over both.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-target-groups.html
 */

export const TARGET_GROUP_ANNOTATIONS = {
  targetType: `${INGRESS_ANNOTATION_PREFIX}target-type`,
  backendProtocol: `${INGRESS_ANNOTATION_PREFIX}backend-protocol`,
  backendProtocolVersion: `${INGRESS_ANNOTATION_PREFIX}backend-protocol-version`,
  attributes: `${INGRESS_ANNOTATION_PREFIX}target-group-attributes`,
  tags: `${INGRESS_ANNOTATION_PREFIX}tags`,
} as const;

/**
 * Target group annotations this controller does not act on: present on the Ingress or the Service, a Warning.
 */
export const UNSUPPORTED_TARGET_GROUP_ANNOTATIONS = [
  `${INGRESS_ANNOTATION_PREFIX}target-node-labels`,
  `${INGRESS_ANNOTATION_PREFIX}multi-cluster-target-group`,
  `${INGRESS_ANNOTATION_PREFIX}target-control-port`,
] as const;

/**
 * A `key=value,key=value` annotation as the reference reads it: pairs split at commas (`\,` is a comma inside a
 * value, `\` escaping any character), empty pairs skipped, each split at its first `=` with key and value
 * trimmed; a pair without `=` or with an empty key makes the whole value invalid.
 */
export function parseStringMap(raw: string): Record<string, string> | undefined {
  const pairs: string[] = [];
  let current = '';
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '\\' && i + 1 < raw.length) current += raw[++i];
    else if (raw[i] === ',') {
      pairs.push(current);
      current = '';
    } else current += raw[i];
  }
  pairs.push(current);
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const key = eq < 0 ? '' : pair.slice(0, eq).trim();
    if (key === '') return undefined;
    out[key] = pair.slice(eq + 1).trim();
  }
  return out;
}

/** The Service's annotations over the Ingress's. */
export function serviceOverIngress(service: Service, ingress: Ingress): Record<string, string> {
  return { ...ingress.metadata.annotations, ...service.metadata.annotations };
}

export interface TargetGroupInput {
  ingress: Ingress;
  group: GroupId;
  service: Service;
  /** The service port as the backend names it: a number or a port name. */
  servicePort: number | string;
  params?: IngressClassParams;
  settings: ModelSettings;
}

export type TargetGroupResult = { targetGroup: ModelTargetGroup } | { problems: Problem[] };

export function buildTargetGroup(input: TargetGroupInput): TargetGroupResult {
  const { ingress, service, settings } = input;
  const ingressRef = { namespace: ingress.metadata.namespace ?? 'default', name: ingress.metadata.name };
  const serviceNamespace = service.metadata.namespace ?? 'default';
  const serviceKey = `${serviceNamespace}/${service.metadata.name}`;
  const port = findServicePort(service, input.servicePort);
  if (!port) {
    return {
      problems: [
        { at: `Service ${serviceKey}`, message: `port ${input.servicePort} not found on Service ${serviceKey}` },
      ],
    };
  }
  const a = serviceOverIngress(service, ingress);
  const problems: Problem[] = [];
  const oneOf = <T extends string>(key: string, allowed: readonly T[], fallback: T): T => {
    const raw = a[key];
    if (raw === undefined) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    problems.push({ at: key, message: `must be one of ${allowed.join(', ')}, not ${JSON.stringify(raw)}` });
    return fallback;
  };

  const targetType: TargetType =
    input.params?.spec?.targetType ??
    oneOf(TARGET_GROUP_ANNOTATIONS.targetType, ['instance', 'ip'] as const, settings.defaultTargetType);
  const protocol = oneOf(TARGET_GROUP_ANNOTATIONS.backendProtocol, ['HTTP', 'HTTPS'] as const, 'HTTP');
  const protocolVersion: TargetGroupProtocolVersion = oneOf(
    TARGET_GROUP_ANNOTATIONS.backendProtocolVersion,
    ['HTTP1', 'HTTP2', 'GRPC'] as const,
    'HTTP1',
  );

  let tgPort: number;
  if (targetType === 'instance') {
    tgPort = port.nodePort ?? 0;
    if (!tgPort) {
      problems.push({
        at: `Service ${serviceKey}`,
        message: `Service must be NodePort or LoadBalancer for instance targets: port ${input.servicePort} has no node port`,
      });
    }
  } else {
    // The API server sets targetPort to port when it is left out. A named target port differs per Pod; the target
    // group's own port is not on the data path (targets are registered with theirs), so 1 stands for it.
    const target = port.targetPort ?? port.port;
    tgPort = typeof target === 'number' ? target : 1;
  }

  const attributes = stringMap(a, TARGET_GROUP_ANNOTATIONS.attributes, problems);
  const tags = {
    ...stringMap(ingress.metadata.annotations ?? {}, TARGET_GROUP_ANNOTATIONS.tags, problems),
    ...stringMap(
      service.metadata.annotations ?? {},
      TARGET_GROUP_ANNOTATIONS.tags,
      problems,
      `Service ${serviceKey}: `,
    ),
    ...Object.fromEntries((input.params?.spec?.tags ?? []).map((t) => [t.key, t.value])),
    ...settings.defaultTags,
  };
  const health = buildHealthCheck({ annotations: a, service, targetType, protocol, protocolVersion });
  if ('problems' in health) problems.push(...health.problems);
  if (problems.length > 0 || 'problems' in health) return { problems };

  return {
    targetGroup: {
      resourceId: targetGroupResourceId(ingressRef, service.metadata.name, input.servicePort),
      name: targetGroupName({
        clusterName: settings.clusterName,
        group: input.group,
        ingress: ingressRef,
        service: { namespace: serviceNamespace, name: service.metadata.name, uid: service.metadata.uid },
        servicePort: input.servicePort,
        port: tgPort,
        targetType,
        protocol,
        protocolVersion,
      }),
      targetType,
      protocol,
      protocolVersion,
      port: tgPort,
      ipAddressType: service.spec?.ipFamilies?.includes('IPv6') ? 'ipv6' : 'ipv4',
      healthCheck: health.healthCheck,
      attributes,
      tags,
      service: { namespace: serviceNamespace, name: service.metadata.name, port },
      member: `${ingressRef.namespace}/${ingressRef.name}`,
    },
  };
}

function stringMap(
  annotations: Readonly<Record<string, string>>,
  key: string,
  problems: Problem[],
  where = '',
): Record<string, string> {
  const raw = annotations[key];
  if (raw === undefined) return {};
  const parsed = parseStringMap(raw);
  if (!parsed) problems.push({ at: key, message: `${where}${JSON.stringify(raw)} is not a list of key=value pairs` });
  return parsed ?? {};
}
