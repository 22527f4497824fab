import type { Target } from '../aws/elbv2-port.ts';
import { isNodeReady } from '../k8s/node-helpers.ts';
import { gateOf, gateStatus, isPodConditionTrue } from '../k8s/pod-readiness.ts';
import type { EndpointSlice, Node, Pod, ServicePortSpec } from '../k8s/types.ts';

/**
 * The reference's rule for Pods behind a readiness gate: a Pod whose only unmet condition is the gate of the
 * target group's binding (`target-health.elbv2.k8s.aws/<binding>`) is not Ready, so its endpoint is not ready
 * either; yet it is registered, since only its target's health in the target group can ever meet the gate. Used
 * by the binding controller for its bindings, and by the Ingress and service controllers for the target groups they
 * keep a stack binding for (shared/k8s/stack-bindings.ts), so that none of them deregisters what another registered.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/pod_readiness_gate/
 */

export interface GateWaitingInputs {
  /** The binding's name: the target group's, for a stack binding. */
  bindingName: string;
  servicePort: ServicePortSpec;
  ipAddressType: 'ipv4' | 'ipv6';
  slices: readonly EndpointSlice[];
  /** The Pods the Service selects, by name. */
  pods: ReadonlyMap<string, Pod>;
  nodes: ReadonlyMap<string, Node>;
}

/**
 * The not-ready endpoints on the target port of the Service port whose Pod waits only for this binding's gate (its
 * containers ready, not terminating) on a Ready Node, as targets.
 */
export function gateWaitingTargets(inputs: GateWaitingInputs): Target[] {
  const out = new Map<string, Target>();
  for (const { address, port, podName, nodeName } of notReadyEndpoints(inputs)) {
    const pod = inputs.pods.get(podName ?? '');
    if (!pod || !waitsOnlyForGate(pod, inputs.bindingName)) continue;
    const node = inputs.nodes.get(nodeName ?? pod.spec?.nodeName ?? '');
    if (!node || !isNodeReady(node)) continue;
    out.set(`${address}:${port}`, { id: address, port });
  }
  return [...out.values()];
}

/** Whether any endpoint on the Service port is not ready (and not terminating): only then are Pods worth reading. */
export function hasNotReadyEndpoints(
  inputs: Pick<GateWaitingInputs, 'servicePort' | 'ipAddressType' | 'slices'>,
): boolean {
  return notReadyEndpoints(inputs).length > 0;
}

interface EndpointAt {
  address: string;
  port: number;
  podName?: string;
  nodeName?: string;
}

/** The endpoints not ready and not terminating, on the slice's port for the Service port (matched by name). */
function notReadyEndpoints(inputs: Pick<GateWaitingInputs, 'servicePort' | 'ipAddressType' | 'slices'>): EndpointAt[] {
  const out: EndpointAt[] = [];
  const family = inputs.ipAddressType === 'ipv6' ? 'IPv6' : 'IPv4';
  const protocol = inputs.servicePort.protocol ?? 'TCP';
  for (const slice of inputs.slices) {
    if (slice.addressType !== family) continue;
    const port = (slice.ports ?? []).find(
      (p) => (p.name ?? '') === (inputs.servicePort.name ?? '') && (p.protocol ?? 'TCP') === protocol,
    )?.port;
    if (port === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready !== false || endpoint.conditions?.terminating === true) continue;
      const podName = endpoint.targetRef?.kind === 'Pod' ? endpoint.targetRef.name : undefined;
      for (const address of endpoint.addresses) out.push({ address, port, podName, nodeName: endpoint.nodeName });
    }
  }
  return out;
}

/** The Pod has this binding's gate unmet, its containers ready, and is not going away. */
export function waitsOnlyForGate(pod: Pod, bindingName: string): boolean {
  const gate = gateOf(pod, bindingName);
  if (!gate || gateStatus(pod, gate) === 'True') return false;
  if (pod.metadata.deletionTimestamp) return false;
  return isPodConditionTrue(pod, 'ContainersReady');
}
