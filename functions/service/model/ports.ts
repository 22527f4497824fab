import type {
  ListenerProtocol,
  TargetGroupIpAddressType,
  TargetGroupProtocol,
} from '../../../shared/aws/elbv2-port.ts';
import type { Service, ServicePortSpec } from '../../../shared/k8s/types.ts';
import {
  DEFAULT_TCP_IDLE_TIMEOUT_SECONDS,
  nlbPreserveClientIpDefault,
  TARGET_GROUP_ATTRIBUTE_DEFAULTS,
  TCP_IDLE_TIMEOUT_ATTRIBUTE,
} from '../../../shared/load-balancers/aws-defaults.ts';
import type { DesiredListener, DesiredTargetGroup } from '../../../shared/load-balancers/model.ts';
import { ANNOTATION, type AnnotationProblem, type LoadBalancerOptions } from '../annotations.ts';
import { LBC_RESOURCE, LBC_TAG, lbcTargetGroupName } from '../lbc/names.ts';
import { type ServiceIdentity, targetGroupName } from '../names.ts';
import { healthCheckFor } from './health-check.ts';

/** What every port of one Service shares while its listeners and target groups are built. */
export interface PortContext {
  service: Service;
  options: LoadBalancerOptions;
  identity: ServiceIdentity;
  loadBalancerName: string;
  groupFamily: TargetGroupIpAddressType;
  problems: AnnotationProblem[];
}

/** The `ssl-ports` of the Service when it has a certificate: `*` (every port), or names and numbers. */
function tlsPorts(options: LoadBalancerOptions): '*' | readonly string[] | undefined {
  return options.sslCertificates?.length ? options.sslPorts : undefined;
}

/** `ssl-ports` entries that name no port of the Service. */
export function checkSslPorts(service: Service, options: LoadBalancerOptions, problems: AnnotationProblem[]): void {
  const tls = tlsPorts(options);
  if (!Array.isArray(tls)) return;
  const ports = service.spec?.ports ?? [];
  for (const wanted of tls) {
    if (!ports.some((p) => p.name === wanted || String(p.port) === wanted)) {
      problems.push({ annotation: ANNOTATION.sslPorts, message: `"${wanted}" is not a port of the Service` });
    }
  }
}

/** The listener and target group of one Service port number (one or two entries: TCP, UDP, or both). */
export function portListenerAndGroup(
  number: number,
  entries: readonly ServicePortSpec[],
  context: PortContext,
): { listener: DesiredListener; group: DesiredTargetGroup } | undefined {
  const { options, problems } = context;
  const protocols = new Set(entries.map((p) => p.protocol ?? 'TCP'));
  if (entries.length > 2 || entries.length !== protocols.size) {
    problems.push({ annotation: `spec.ports (port ${number})`, message: 'the same port and protocol is listed twice' });
    return undefined;
  }
  const { listenerProtocol, groupProtocol } = protocolsOf(number, entries, protocols, options, problems);
  const groupPort = targetGroupPort(number, entries, options, problems);
  if (groupPort === undefined) return undefined;
  const healthCheck = healthCheckFor(
    context.service,
    options,
    context.service.spec?.externalTrafficPolicy === 'Local',
    problems,
  );
  const name = options.lbc
    ? lbcTargetGroupName(
        { ...context.identity, uid: options.lbc.uid },
        {
          port: groupPort,
          servicePort: number,
          targetType: options.targetType,
          protocol: groupProtocol,
          healthCheckProtocol: healthCheck.protocol,
          healthCheckIntervalSeconds: healthCheck.intervalSeconds,
        },
      )
    : targetGroupName(context.identity, {
        loadBalancerName: context.loadBalancerName,
        listenerPort: number,
        protocol: groupProtocol,
        targetType: options.targetType,
        ipAddressType: context.groupFamily,
      });
  const group: DesiredTargetGroup = {
    name,
    listenerPort: number,
    protocol: groupProtocol,
    port: groupPort,
    targetType: options.targetType,
    ipAddressType: context.groupFamily,
    healthCheck,
    attributes: targetGroupAttributes(number, groupProtocol, options, problems),
    servicePorts: [...entries],
  };
  const listener = desiredListener(number, listenerProtocol, name, options);
  if (options.lbc) {
    const { namespace, name: serviceName } = context.identity;
    group.tags = { [LBC_TAG.resource]: LBC_RESOURCE.targetGroup(namespace, serviceName, number) };
    listener.tags = { [LBC_TAG.resource]: LBC_RESOURCE.listener(number) };
    Object.assign(listener.attributes, options.lbc.listenerAttributes[`${listenerProtocol}-${number}`]);
  }
  return { listener, group };
}

function protocolsOf(
  number: number,
  entries: readonly ServicePortSpec[],
  protocols: ReadonlySet<string>,
  options: LoadBalancerOptions,
  problems: AnnotationProblem[],
): { listenerProtocol: ListenerProtocol; groupProtocol: TargetGroupProtocol } {
  const tls = tlsPorts(options);
  const wantsTls = entries.some(
    (port) =>
      tls === '*' || (tls ?? []).some((p) => p === String(port.port) || (port.name !== undefined && p === port.name)),
  );
  if (protocols.size === 2 || protocols.has('UDP')) {
    if (wantsTls && tls !== '*') {
      const why = protocols.size === 2 ? 'carries UDP too and cannot be TLS' : 'is UDP and cannot be TLS';
      problems.push({ annotation: ANNOTATION.sslPorts, message: `port ${number} ${why}` });
    }
    const protocol = protocols.size === 2 ? 'TCP_UDP' : 'UDP';
    return { listenerProtocol: protocol, groupProtocol: protocol };
  }
  if (wantsTls) return { listenerProtocol: 'TLS', groupProtocol: options.backendProtocol === 'ssl' ? 'TLS' : 'TCP' };
  return { listenerProtocol: 'TCP', groupProtocol: 'TCP' };
}

/** The node port (instance targets) or the target port (IP targets); undefined when it cannot be one. */
function targetGroupPort(
  number: number,
  entries: readonly ServicePortSpec[],
  options: LoadBalancerOptions,
  problems: AnnotationProblem[],
): number | undefined {
  const where = `spec.ports (port ${number})`;
  if (options.targetType === 'instance') {
    if (entries.some((p) => !p.nodePort)) {
      problems.push({
        annotation: where,
        message: `has no nodePort: instance targets need node ports (allocateLoadBalancerNodePorts), or set ${ANNOTATION.nlbTargetType}: ip`,
      });
      return undefined;
    }
    if (new Set(entries.map((p) => p.nodePort)).size > 1) {
      problems.push({
        annotation: where,
        message: 'TCP and UDP on one port need the same nodePort for a TCP_UDP listener',
      });
      return undefined;
    }
    return entries[0]!.nodePort!;
  }
  if (new Set(entries.map((p) => p.targetPort ?? p.port)).size > 1) {
    problems.push({
      annotation: where,
      message: 'TCP and UDP on one port need the same targetPort for a TCP_UDP listener',
    });
    return undefined;
  }
  const targetPort = entries[0]!.targetPort ?? entries[0]!.port;
  if (typeof targetPort === 'number') return targetPort;
  // A named target port may be a different number on each Pod: the group's own port is not on the data path (targets
  // are registered with theirs). The reference writes 1, and hashes it into the group's name.
  return options.lbc ? 1 : number;
}

function targetGroupAttributes(
  number: number,
  groupProtocol: TargetGroupProtocol,
  options: LoadBalancerOptions,
  problems: AnnotationProblem[],
): Record<string, string> {
  const udp = groupProtocol === 'UDP' || groupProtocol === 'TCP_UDP';
  const attributes: Record<string, string> = {
    ...TARGET_GROUP_ATTRIBUTE_DEFAULTS,
    'preserve_client_ip.enabled': nlbPreserveClientIpDefault(options.targetType, groupProtocol),
    ...options.targetGroupAttributes,
  };
  if (udp) {
    if (attributes['proxy_protocol_v2.enabled'] === 'true') {
      problems.push({
        annotation: ANNOTATION.proxyProtocol,
        message: `proxy protocol is not available on UDP port ${number}`,
      });
    }
    // Client IP preservation cannot be turned off for UDP; leave it out rather than fail.
    delete attributes['preserve_client_ip.enabled'];
  }
  return attributes;
}

function desiredListener(
  number: number,
  protocol: ListenerProtocol,
  targetGroupName: string,
  options: LoadBalancerOptions,
): DesiredListener {
  const listener: DesiredListener = {
    port: number,
    protocol,
    targetGroupName,
    extraCertificateArns: [],
    attributes: {},
  };
  if (protocol === 'TLS') {
    const [first, ...others] = options.sslCertificates!;
    listener.certificateArn = first!;
    listener.extraCertificateArns = others;
    if (options.sslPolicy) listener.sslPolicy = options.sslPolicy;
    if (options.alpnPolicy) listener.alpnPolicy = options.alpnPolicy;
  }
  // Only TCP listeners have an idle timeout to set (TLS is fixed at 350 s, UDP at 120 s).
  if (protocol === 'TCP') {
    listener.attributes[TCP_IDLE_TIMEOUT_ATTRIBUTE] = String(
      options.idleTimeoutSeconds ?? DEFAULT_TCP_IDLE_TIMEOUT_SECONDS,
    );
  }
  return listener;
}
