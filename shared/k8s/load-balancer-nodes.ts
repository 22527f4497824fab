import { instanceIdFromProviderId } from '../aws/provider-id.ts';
import {
  LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS,
  TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
} from './service-port.ts';
import type { Node } from './types.ts';

/**
 * Which Nodes may take load balancer traffic (instance targets), shared by the service controller, which
 * registers them, and the relay, which forwards only the Node changes that can change the answer.
 *
 * Readiness is deliberately not part of it: Kubernetes dropped that rule (KEP-3458,
 * StableLoadBalancerNodeSet, GA in 1.30) because Nodes flapping between Ready and NotReady caused a
 * deregistration (and its delay) on every flip, fanned out to every Service. The load balancer's own health
 * check already stops traffic to a Node that cannot serve it.
 * https://github.com/kubernetes/enhancements/tree/master/keps/sig-network/3458-remove-transient-node-predicates-from-service-controller
 * https://kubernetes.io/docs/reference/labels-annotations-taints/#node-kubernetes-io-exclude-from-external-load-balancers
 */
export function isLoadBalancerNodeCandidate(node: Node): boolean {
  if (node.metadata.deletionTimestamp) return false;
  if (LABEL_EXCLUDE_FROM_EXTERNAL_LOAD_BALANCERS in (node.metadata.labels ?? {})) return false;
  if ((node.spec?.taints ?? []).some((t) => t.key === TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER)) return false;
  return instanceIdFromProviderId(node.spec?.providerID) !== undefined;
}

/** `target-node-labels`: every key present, with the value when one is given. */
export function matchesNodeSelector(node: Node, selector?: Readonly<Record<string, string | undefined>>): boolean {
  const labels = node.metadata.labels ?? {};
  return Object.entries(selector ?? {}).every(
    ([key, value]) => key in labels && (value === undefined || labels[key] === value),
  );
}

/** Nodes that may take load balancer traffic and match `target-node-labels`. */
export function loadBalancerNodes(
  nodes: readonly Node[],
  selector?: Readonly<Record<string, string | undefined>>,
): Node[] {
  return nodes.filter((node) => isLoadBalancerNodeCandidate(node) && matchesNodeSelector(node, selector));
}
