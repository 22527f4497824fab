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
  ownerReferences?: OwnerReference[];
  /** Set with deletionTimestamp on a graceful delete (Pods): the grace period it was given. */
  deletionGracePeriodSeconds?: number;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  /** The managing controller (at most one owner has it): what `metav1.GetControllerOf` returns. */
  controller?: boolean;
  blockOwnerDeletion?: boolean;
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

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

/** The slice of a Pod a drain reads (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/). */
export interface Pod {
  apiVersion?: 'v1';
  kind?: 'Pod';
  metadata: ObjectMeta;
  spec?: {
    nodeName?: string;
    /** Unset means 30 seconds. */
    terminationGracePeriodSeconds?: number;
    [field: string]: unknown;
  };
  status?: {
    phase?: PodPhase;
    conditions?: {
      type: string;
      status: 'True' | 'False' | 'Unknown';
      reason?: string;
      message?: string;
      lastTransitionTime?: string;
    }[];
    [field: string]: unknown;
  };
}

/** metav1.LabelSelector: matchLabels and matchExpressions must all hold; `{}` selects everything. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** policy/v1 PodDisruptionBudget (https://kubernetes.io/docs/reference/kubernetes-api/policy-resources/pod-disruption-budget-v1/). */
export interface PodDisruptionBudget {
  apiVersion?: 'policy/v1';
  kind?: 'PodDisruptionBudget';
  metadata: ObjectMeta;
  spec?: {
    /** An integer or a percentage (`"50%"`); exclusive with maxUnavailable. */
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    /** Unset selects no Pods; `{}` selects every Pod of the namespace. */
    selector?: LabelSelector;
    unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
  };
  status?: {
    observedGeneration?: number;
    disruptionsAllowed: number;
    currentHealthy: number;
    desiredHealthy: number;
    expectedPods: number;
  };
}

/** One entry of `spec.ports` of a Service (the API's ServicePort). */
export interface ServicePortSpec {
  name?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  port: number;
  /** A number, or the name of a container port (resolved per Pod in the EndpointSlices). */
  targetPort?: number | string;
  nodePort?: number;
  appProtocol?: string;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  ipMode?: 'VIP' | 'Proxy';
}

export interface Service {
  apiVersion?: 'v1';
  kind?: 'Service';
  metadata: ObjectMeta;
  spec?: {
    type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
    ports?: ServicePortSpec[];
    selector?: Record<string, string>;
    clusterIP?: string;
    loadBalancerClass?: string;
    externalTrafficPolicy?: 'Cluster' | 'Local';
    healthCheckNodePort?: number;
    loadBalancerSourceRanges?: string[];
    loadBalancerIP?: string;
    ipFamilies?: ('IPv4' | 'IPv6')[];
    ipFamilyPolicy?: string;
    allocateLoadBalancerNodePorts?: boolean;
  };
  status?: {
    loadBalancer?: { ingress?: LoadBalancerIngress[] };
    conditions?: NodeCondition[];
  };
}

/** discovery.k8s.io/v1 Endpoint: one backend (a Pod) of a Service. */
export interface Endpoint {
  addresses: string[];
  /** `ready` unset means ready (https://kubernetes.io/docs/reference/kubernetes-api/service-resources/endpoint-slice-v1/). */
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  nodeName?: string;
  zone?: string;
  targetRef?: ObjectReference;
}

export interface EndpointPort {
  name?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  port?: number;
  appProtocol?: string;
}

export interface EndpointSlice {
  apiVersion?: 'discovery.k8s.io/v1';
  kind?: 'EndpointSlice';
  metadata: ObjectMeta;
  addressType: 'IPv4' | 'IPv6' | 'FQDN';
  endpoints: Endpoint[];
  ports?: EndpointPort[];
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

export function serviceRef(service: Service): ObjectReference {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    name: service.metadata.name,
    namespace: service.metadata.namespace,
    uid: service.metadata.uid,
  };
}

export function podRef(pod: Pod): ObjectReference {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    uid: pod.metadata.uid,
  };
}
