import {
  BETA_OS_LABEL,
  IPV4_RESOURCE,
  isFinished,
  isWindowsNode,
  OS_LABEL,
  POD_IP_ANNOTATION,
  requestsPodAddress,
  VPC_CNI_CONFIGMAP,
} from '../../shared/k8s/ipam-names.ts';
import { isLoadBalancerNodeCandidate } from '../../shared/k8s/load-balancer-nodes.ts';
import {
  ANNOTATION_PROVIDED_NODE_IP,
  CONDITION_NETWORK_UNAVAILABLE,
  hasTaint,
  isNodeReady,
  isTerminating,
  nodeCondition,
  podCidrsOf,
  TAINT_SHUTDOWN,
  TAINT_UNINITIALIZED,
} from '../../shared/k8s/node-helpers.ts';
import { ANNOTATION, ANNOTATION_PREFIX } from '../../shared/k8s/service-annotations.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP, LABEL_SERVICE_NAME } from '../../shared/k8s/service-port.ts';
import type { Node, Pod } from '../../shared/k8s/types.ts';
import { sortedEntries } from './fingerprint.ts';
import type { KubeObject, WatchedKind } from './kinds.ts';

/**
 * The forwarding rules: which reconciler queues a change of each kind goes to, and which fields of
 * the object each reconciler reads. It is the one place to look when a reconciler starts reading a
 * new field: a change to a field not listed here never reaches that reconciler (the periodic resync
 * still would). The names and predicates come from shared/, where the reconcilers take them too, and
 * reads-coverage.test.ts runs the reconcilers to check that every field they read is here.
 */

export const RECONCILERS = ['node', 'node-lifecycle', 'route', 'service', 'ipam'] as const;
export type Reconciler = (typeof RECONCILERS)[number];

/** Which key a change becomes on the reconciler's queue. */
export type KeyTarget =
  /** The object's own key. */
  | 'self'
  /** The route controller's single key `RouteTable/cluster`, hinted with the Node (docs/adr/0003). */
  | 'route-table'
  /** EndpointSlice -> its Service (label `kubernetes.io/service-name`), for LoadBalancer Services with IP targets. */
  | 'owning-service'
  /** Node -> every LoadBalancer Service: the Node may take their traffic (instance targets) or need their rules (IP targets). */
  | 'load-balancers'
  /** Pod -> its Node's key (`spec.nodeName`): the Node's address pool is what changes, one FIFO group per Node. */
  | 'pod-node'
  /** ConfigMap -> the key of every Node the same reconciler's Node rule reads (for ipam: every Windows Node). */
  | 'reconciled-nodes';

export interface ForwardingRule {
  reconciler: Reconciler;
  target: KeyTarget;
  /** Whether deleting the object leaves something for the reconciler to clean up. */
  onDelete: boolean;
  /** The fields the reconciler reads (hashed into the fingerprint), or undefined when the object is none of its business. */
  reads(object: KubeObject): unknown[] | undefined;
}

interface ServiceObject extends KubeObject {
  spec?: {
    type?: string;
    loadBalancerClass?: string;
    ports?: { name?: string; protocol?: string; port?: number; targetPort?: number | string; nodePort?: number }[];
    externalTrafficPolicy?: string;
    healthCheckNodePort?: number;
    loadBalancerSourceRanges?: string[];
    loadBalancerIP?: string;
    ipFamilies?: string[];
    ipFamilyPolicy?: string;
    allocateLoadBalancerNodePorts?: boolean;
  };
}

interface EndpointSliceObject extends KubeObject {
  addressType?: string;
  endpoints?: {
    addresses?: string[];
    conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
    nodeName?: string;
    zone?: string;
  }[];
  ports?: { name?: string; port?: number; protocol?: string }[];
}

interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

const asNode = (object: KubeObject) => object as unknown as Node;
const deleting = (object: KubeObject) => Boolean(object.metadata?.deletionTimestamp);

/**
 * functions/node: initializes tainted Nodes (provider ID, labels, addresses) and keeps addresses
 * current. Heartbeats (`lastHeartbeatTime`), images, capacity, volumes and the like are left out.
 */
function nodeInitReads(object: KubeObject): unknown[] {
  const node = asNode(object);
  return [
    node.metadata.uid,
    node.spec?.providerID,
    hasTaint(node, TAINT_UNINITIALIZED),
    node.metadata.annotations?.[ANNOTATION_PROVIDED_NODE_IP],
    (node.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`),
  ];
}

/**
 * functions/node-lifecycle: readiness, the shutdown taint and the instance behind the Node. Ready
 * False and Unknown (kubelet silent) are both not ready: flapping between them is not news.
 */
function nodeLifecycleReads(object: KubeObject): unknown[] {
  const node = asNode(object);
  return [node.metadata.uid, node.spec?.providerID, isNodeReady(node), hasTaint(node, TAINT_SHUTDOWN)];
}

/** functions/route: one route per pod CIDR to the Node's instance; it also owns NetworkUnavailable. */
function nodeRouteReads(object: KubeObject): unknown[] {
  const node = asNode(object);
  return [
    node.metadata.uid,
    node.spec?.providerID,
    podCidrsOf(node.spec),
    isTerminating(node),
    nodeCondition(node, CONDITION_NETWORK_UNAVAILABLE)?.status,
  ];
}

/**
 * functions/service, instance targets: the Node's instance and every label (`target-node-labels` may name any),
 * for a Node that may take load balancer traffic (the service controller's own predicate). A Node that may not (no
 * instance yet, excluded, being deleted or scaled down) is in no load balancer's targets and opens no security
 * group, whatever else it says: nothing of it is read, so its arrival, its changes and its deletion send nothing;
 * becoming a candidate and ceasing to be one each send every LoadBalancer Service's key once. A joining Node so
 * costs one such round, when it gets its instance, not two (its creation too); a Node the cluster autoscaler
 * removes costs one, when it is marked, not two (its deletion too). Readiness is not part of it (KEP-3458,
 * shared/k8s/load-balancer-nodes.ts), so a Node flapping between Ready and NotReady sends nothing either. A change
 * of labels alone sends nothing while no LoadBalancer Service has `target-node-labels` (the change router keeps
 * `nodeTargetInstance` apart to tell).
 */
function nodeTargetReads(object: KubeObject): unknown[] | undefined {
  const instance = nodeTargetInstance(object);
  return instance && [...instance, sortedEntries(asNode(object).metadata.labels)];
}

/** Of `nodeTargetReads`, what does not depend on labels: the Node's instance, for a candidate. */
export function nodeTargetInstance(object: KubeObject): unknown[] | undefined {
  const node = asNode(object);
  return isLoadBalancerNodeCandidate(node) ? [node.metadata.uid, node.spec?.providerID] : undefined;
}

/** Whether a Service picks its load balancer's Nodes by label (`target-node-labels`), so Node labels matter. */
export function selectsNodesByLabel(object: KubeObject): boolean {
  return Boolean(object.metadata?.annotations?.[ANNOTATION.targetNodeLabels]?.trim());
}

/**
 * functions/service: LoadBalancer Services, and any Service still carrying the cleanup finalizer (it
 * was one, and its load balancer must go). `loadBalancerClass` and the `aws-load-balancer-type`
 * annotation are forwarded rather than judged here: whether a class or type is ours is the
 * reconciler's decision. Status is left out: the reconciler writes it.
 */
function serviceReads(object: KubeObject): unknown[] | undefined {
  const service = object as ServiceObject;
  const loadBalancer = service.spec?.type === 'LoadBalancer';
  const cleanup = (service.metadata?.finalizers ?? []).includes(FINALIZER_LOAD_BALANCER_CLEANUP);
  if (!loadBalancer && !cleanup) return undefined;
  const spec = service.spec ?? {};
  return [
    service.metadata?.uid,
    loadBalancer,
    cleanup,
    deleting(object),
    spec.loadBalancerClass,
    sortedEntries(
      service.metadata?.annotations,
      (key) => key.startsWith(ANNOTATION_PREFIX) || key === ANNOTATION.sourceRanges,
    ),
    (spec.ports ?? []).map((p) => [p.name, p.protocol, p.port, p.targetPort, p.nodePort]),
    spec.externalTrafficPolicy,
    spec.healthCheckNodePort,
    spec.loadBalancerSourceRanges,
    spec.loadBalancerIP,
    spec.ipFamilies,
    spec.ipFamilyPolicy,
    spec.allocateLoadBalancerNodePorts,
  ];
}

/** functions/service, IP targets: the ready addresses and ports behind the Service. */
function endpointSliceReads(object: KubeObject): unknown[] | undefined {
  const slice = object as EndpointSliceObject;
  if (!slice.metadata?.labels?.[LABEL_SERVICE_NAME]) return undefined;
  return [
    slice.metadata.uid,
    slice.addressType,
    (slice.endpoints ?? []).map((e) => [
      e.addresses,
      e.conditions?.ready,
      e.conditions?.serving,
      e.conditions?.terminating,
      e.nodeName,
      e.zone,
    ]),
    (slice.ports ?? []).map((p) => [p.name, p.port, p.protocol]),
  ];
}

/**
 * functions/ipam, Windows Nodes: whether the Node is Windows, its instance, and the address capacity it
 * advertises (the reconciler advertises it again when it went missing). The pool the reconciler records on
 * the Node (annotation `serverless-ccm/ipam-pool`) is left out: forwarding its own writes back would loop.
 */
export function windowsNodeAddressReads(object: KubeObject): unknown[] | undefined {
  const node = asNode(object);
  if (!isWindowsNode(node)) return undefined;
  const labels = node.metadata.labels ?? {};
  return [
    node.metadata.uid,
    labels[OS_LABEL],
    labels[BETA_OS_LABEL],
    node.spec?.providerID,
    node.status?.capacity?.[IPV4_RESOURCE],
    node.status?.allocatable?.[IPV4_RESOURCE],
    deleting(object),
  ];
}

/**
 * functions/ipam, Pods: a Pod bound to a Node that asks for a VPC address (the resource the mutating webhook
 * adds) or holds one (the annotation) needs one; a finished or deleted one gives it back. Host-network Pods
 * use the Node's address. Container statuses, conditions and restarts (most Pod updates) are left out.
 */
export function podAddressReads(object: KubeObject): unknown[] | undefined {
  const pod = object as unknown as Pod;
  const nodeName = pod.spec?.nodeName;
  if (!nodeName || pod.spec?.hostNetwork) return undefined;
  const address = pod.metadata?.annotations?.[POD_IP_ANNOTATION];
  if (address === undefined && !requestsPodAddress(pod)) return undefined;
  // Not the address itself: the controller writes it, and hearing its own write back would double every pass. Only
  // the controller may write it (the validating webhook), and what it wrote is in its journal on the Node.
  return [pod.metadata?.uid, nodeName, isFinished(pod), deleting(object)];
}

/** functions/ipam, the VPC CNI's ConfigMap: its keys switch Windows IPAM on and size the warm pool. */
export function vpcCniConfigReads(object: KubeObject): unknown[] | undefined {
  const configMap = object as ConfigMapObject;
  const { namespace, name } = configMap.metadata ?? {};
  if (namespace !== VPC_CNI_CONFIGMAP.namespace || name !== VPC_CNI_CONFIGMAP.name) return undefined;
  return [configMap.metadata?.uid, sortedEntries(configMap.data)];
}

export const FORWARDING_RULES: Readonly<Record<WatchedKind, readonly ForwardingRule[]>> = {
  Node: [
    { reconciler: 'node', target: 'self', onDelete: false, reads: nodeInitReads },
    { reconciler: 'node-lifecycle', target: 'self', onDelete: false, reads: nodeLifecycleReads },
    { reconciler: 'route', target: 'route-table', onDelete: true, reads: nodeRouteReads },
    { reconciler: 'service', target: 'load-balancers', onDelete: true, reads: nodeTargetReads },
    { reconciler: 'ipam', target: 'self', onDelete: true, reads: windowsNodeAddressReads },
  ],
  Service: [{ reconciler: 'service', target: 'self', onDelete: true, reads: serviceReads }],
  EndpointSlice: [{ reconciler: 'service', target: 'owning-service', onDelete: true, reads: endpointSliceReads }],
  Pod: [{ reconciler: 'ipam', target: 'pod-node', onDelete: true, reads: podAddressReads }],
  ConfigMap: [{ reconciler: 'ipam', target: 'reconciled-nodes', onDelete: true, reads: vpcCniConfigReads }],
};

/** The rule for one reconciler and kind, if that reconciler reads that kind. */
export function ruleFor(kind: WatchedKind, reconciler: Reconciler): ForwardingRule | undefined {
  return FORWARDING_RULES[kind].find((r) => r.reconciler === reconciler);
}

/** How a LoadBalancer Service picks its targets, or undefined when it is not a LoadBalancer. */
export function loadBalancerTargets(object: KubeObject): 'instance' | 'ip' | undefined {
  const service = object as ServiceObject;
  if (service.spec?.type !== 'LoadBalancer') return undefined;
  const annotations = service.metadata?.annotations ?? {};
  const ip = annotations[ANNOTATION.nlbTargetType] === 'ip' || annotations[ANNOTATION.type] === 'nlb-ip';
  return ip ? 'ip' : 'instance';
}

/**
 * Names a LeaderMigrationConfiguration may give each reconciler's controller (the short names and the
 * `-controller` names the cloud-controller-manager has used). IPAM has no in-tree counterpart.
 * https://kubernetes.io/docs/tasks/administer-cluster/controller-manager-leader-migration/
 */
export const MIGRATION_CONTROLLER_NAMES: Readonly<Record<Reconciler, readonly string[]>> = {
  node: ['cloud-node', 'cloud-node-controller'],
  'node-lifecycle': ['cloud-node-lifecycle', 'cloud-node-lifecycle-controller'],
  route: ['route', 'route-controller', 'node-route-controller'],
  service: ['service', 'service-controller', 'service-lb-controller'],
  ipam: [],
};

/**
 * The kinds whose changes some of these reconcilers read: the only kinds the relay lists and
 * watches (and its RBAC must allow), so a kind no configured queue consumes is never watched.
 */
export function kindsFor(reconcilers: Iterable<Reconciler>): WatchedKind[] {
  const wanted = new Set(reconcilers);
  return (Object.keys(FORWARDING_RULES) as WatchedKind[]).filter((kind) =>
    FORWARDING_RULES[kind].some((r) => wanted.has(r.reconciler)),
  );
}
