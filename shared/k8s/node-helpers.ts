import type { Node, NodeCondition, Taint } from './types.ts';

export const TAINT_UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
export const TAINT_SHUTDOWN = 'node.cloudprovider.kubernetes.io/shutdown';
export const ANNOTATION_PROVIDED_NODE_IP = 'alpha.kubernetes.io/provided-node-ip';
/** The condition the route controller owns: False (reason RouteCreated) once the Node's pod routes exist. */
export const CONDITION_NETWORK_UNAVAILABLE = 'NetworkUnavailable';

export function hasTaint(node: Node, key: string): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === key);
}

export function withoutTaint(node: Node, key: string): Taint[] {
  return (node.spec?.taints ?? []).filter((t) => t.key !== key);
}

/** Ready means the Ready condition is True; False and Unknown (kubelet silent) are not ready. */
export function isNodeReady(node: Node): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The Node's condition of that type, if it reports one. */
export function nodeCondition(node: Node, type: string): NodeCondition | undefined {
  return node.status?.conditions?.find((c) => c.type === type);
}

/** Pod CIDRs as the Node states them: the dual-stack list when present, else the single field. */
export function podCidrsOf(spec: { podCIDR?: string; podCIDRs?: string[] } | undefined): string[] {
  if (spec?.podCIDRs && spec.podCIDRs.length > 0) return [...spec.podCIDRs];
  return spec?.podCIDR ? [spec.podCIDR] : [];
}

export function isTerminating(node: Node): boolean {
  return Boolean(node.metadata.deletionTimestamp);
}

/**
 * EC2 is eventually consistent: a brand-new instance may be missing from DescribeInstances for a while after
 * its kubelet registered the Node. Within this age of the Node, a missing instance is waited for, never taken
 * as gone (a deleted Node is not registered again by its kubelet, so the instance would be stranded).
 * https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html
 */
export const NEW_INSTANCE_GRACE_MS = 5 * 60_000;

/** How long a Node's missing instance may still appear (0 once the grace is over or the age is unknown). */
export function instanceGraceLeftMs(node: Node, now: number): number {
  const created = Date.parse(node.metadata.creationTimestamp ?? '');
  return Number.isFinite(created) ? Math.max(0, created + NEW_INSTANCE_GRACE_MS - now) : 0;
}
