import type { Node, Taint } from './types.ts';

export const TAINT_UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
export const TAINT_SHUTDOWN = 'node.cloudprovider.kubernetes.io/shutdown';
export const ANNOTATION_PROVIDED_NODE_IP = 'alpha.kubernetes.io/provided-node-ip';

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

export function isTerminating(node: Node): boolean {
  return Boolean(node.metadata.deletionTimestamp);
}
