import type { Target, TargetHealth } from '../../shared/aws/elbv2-port.ts';
import { instanceIdFromProviderId } from '../../shared/aws/provider-id.ts';
import { selectorMatches } from '../../shared/k8s/label-selector.ts';
import { isNodeReady } from '../../shared/k8s/node-helpers.ts';
import type { TgbIpAddressType } from '../../shared/k8s/tgb-types.ts';
import type { EndpointSlice, LabelSelector, Node, Pod, Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import { gateWaitingTargets } from '../../shared/load-balancers/gated-targets.ts';
import {
  eligibleNodes,
  ipTargets,
  planTargets,
  targetKey,
  withWaitingTargets,
} from '../../shared/load-balancers/targets.ts';

/**
 * A binding's wanted targets, pure: ip targets from the Service's EndpointSlices (and the reference's rule for Pods
 * held back only by this binding's readiness gate), instance targets from the Nodes; and what to write, by difference.
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/targetgroupbinding/targetgroupbinding/
 */

/** The Service port `serviceRef.port` names: by number (`port`) or by name. */
export function servicePortOf(service: Service, ref: number | string): ServicePortSpec | undefined {
  const ports = service.spec?.ports ?? [];
  return typeof ref === 'number' ? ports.find((p) => p.port === ref) : ports.find((p) => p.name === ref);
}

export interface IpInputs {
  servicePort: ServicePortSpec;
  ipAddressType: TgbIpAddressType;
  slices: readonly EndpointSlice[];
  /** The Pods the Service selects, by name. */
  pods: ReadonlyMap<string, Pod>;
  nodes: ReadonlyMap<string, Node>;
  bindingName: string;
}

/**
 * The ready endpoints on the target port of the Service port, plus every endpoint not ready whose Pod waits only for
 * this binding's readiness gate: the gate unmet, its containers ready, not terminating, on a Ready Node. Registering
 * it is how its target gets health-checked, and so how the gate is ever met.
 */
export function wantedIpTargets(inputs: IpInputs): Target[] {
  const { servicePort, ipAddressType } = inputs;
  const ready = ipTargets({ servicePorts: [servicePort], ipAddressType }, inputs.slices);
  return withWaitingTargets(ready, gateWaitingTargets(inputs));
}

/** Control-plane Nodes and Fargate are never instance targets (the reference's default exclusions). */
const EXCLUDED_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];
const EXCLUDE_BALANCER = 'alpha.service-controller.kubernetes.io/exclude-balancer';
const FARGATE = { key: 'eks.amazonaws.com/compute-type', value: 'fargate' };

/**
 * The instances of the Nodes that may take traffic: eligible (shared/load-balancers/targets.ts), not excluded as the
 * reference excludes them, Ready, and matching `nodeSelector`; running, as RegisterTargets requires.
 */
export function wantedInstanceIds(
  nodes: readonly Node[],
  nodeSelector: LabelSelector | undefined,
  isRunning: (instanceId: string) => boolean,
): string[] {
  const ids = eligibleNodes(nodes)
    .filter((node) => {
      const labels = node.metadata.labels ?? {};
      if (EXCLUDED_LABELS.some((l) => l in labels) || EXCLUDE_BALANCER in labels) return false;
      if (labels[FARGATE.key] === FARGATE.value) return false;
      return isNodeReady(node) && (!nodeSelector || selectorMatches(nodeSelector, labels));
    })
    .flatMap((node) => instanceIdFromProviderId(node.spec?.providerID) ?? []);
  return [...new Set(ids)].filter(isRunning).sort();
}

/**
 * What to write. A target nobody asked for is deregistered, unless the target group is shared with other clusters
 * (`multiClusterTargetGroup`): then only the targets this binding recorded as its own are. Draining ones count as
 * absent (shared/load-balancers/targets.ts).
 */
export function planBindingTargets(
  wanted: readonly Target[],
  current: readonly TargetHealth[],
  shared: { multiCluster: boolean; recorded: readonly Target[] },
): { register: Target[]; deregister: Target[] } {
  const plan = planTargets(wanted, current);
  if (!shared.multiCluster) return plan;
  const ours = new Set(shared.recorded.map(targetKey));
  return { register: plan.register, deregister: plan.deregister.filter((t) => ours.has(targetKey(t))) };
}
