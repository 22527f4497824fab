import type { Target } from '../../../shared/aws/elbv2-port.ts';
import { instanceIdFromProviderId } from '../../../shared/aws/provider-id.ts';
import { loadBalancerNodes } from '../../../shared/k8s/load-balancer-nodes.ts';
import type { EndpointSlice, Node } from '../../../shared/k8s/types.ts';
import type { DesiredTargetGroup } from './spec.ts';

/** Nodes that may take load balancer traffic (shared/k8s/load-balancer-nodes.ts: KEP-3458, readiness does not count). */
export function eligibleNodes(nodes: readonly Node[], selector?: Readonly<Record<string, string | undefined>>): Node[] {
  return loadBalancerNodes(nodes, selector);
}

export function instanceIdsOf(nodes: readonly Node[]): string[] {
  return [...new Set(nodes.flatMap((n) => instanceIdFromProviderId(n.spec?.providerID) ?? []))].sort();
}

/** Instance targets of one target group: every eligible instance on the group's node port. */
export function instanceTargets(group: DesiredTargetGroup, instanceIds: readonly string[]): Target[] {
  return instanceIds.map((id) => ({ id, port: group.port }));
}

/**
 * IP targets of one target group: the ready addresses of the Service's EndpointSlices of the group's family, on the port the
 * slice gives for the Service port (by name, which also resolves named target ports). Terminating and
 * not-ready endpoints are left out; `ready` unset counts as ready.
 */
export function ipTargets(group: DesiredTargetGroup, slices: readonly EndpointSlice[]): Target[] {
  const servicePort = group.servicePorts.find((p) => (p.protocol ?? 'TCP') === 'TCP') ?? group.servicePorts[0]!;
  const protocol = servicePort.protocol ?? 'TCP';
  const targets = new Map<string, Target>();
  for (const slice of slices) {
    if (slice.addressType !== (group.ipAddressType === 'ipv6' ? 'IPv6' : 'IPv4')) continue;
    const port = (slice.ports ?? []).find(
      (p) => (p.name ?? '') === (servicePort.name ?? '') && (p.protocol ?? 'TCP') === protocol,
    )?.port;
    if (port === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false || endpoint.conditions?.terminating === true) continue;
      for (const address of endpoint.addresses) targets.set(`${address}:${port}`, { id: address, port });
    }
  }
  return [...targets.values()].sort((x, y) => (x.id === y.id ? x.port - y.port : x.id < y.id ? -1 : 1));
}
