/**
 * The narrow slice of Kubernetes objects the reconcilers read and write. The JSON shapes match the
 * API exactly (so the client-node adapter passes them through), but reconciler code does not depend
 * on @kubernetes/client-node: only the adapter imports it.
 */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  timeAdded?: string;
}

export type NodeAddressType = 'Hostname' | 'InternalIP' | 'ExternalIP' | 'InternalDNS' | 'ExternalDNS';

export interface NodeAddress {
  type: NodeAddressType;
  address: string;
}

export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

export interface Node {
  apiVersion?: 'v1';
  kind?: 'Node';
  metadata: ObjectMeta;
  spec?: {
    providerID?: string;
    podCIDR?: string;
    podCIDRs?: string[];
    taints?: Taint[];
    unschedulable?: boolean;
  };
  status?: {
    addresses?: NodeAddress[];
    conditions?: NodeCondition[];
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
  };
}

/** The object an Event is about. */
export interface ObjectReference {
  apiVersion?: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

export interface EventRecord {
  involvedObject: ObjectReference;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** A JSON merge patch (RFC 7386): `null` deletes a field, arrays are replaced whole. */
export type MergePatch<T> = {
  [K in keyof T]?: NonNullable<T[K]> extends readonly unknown[]
    ? T[K] | null
    : NonNullable<T[K]> extends object
      ? MergePatch<NonNullable<T[K]>> | null
      : T[K] | null;
};

export function nodeRef(node: Node): ObjectReference {
  return { apiVersion: 'v1', kind: 'Node', name: node.metadata.name, uid: node.metadata.uid ?? node.metadata.name };
}
