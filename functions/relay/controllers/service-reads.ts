import { isLoadBalancerNodeCandidate } from '../../../shared/k8s/load-balancer-nodes.ts';
import { ANNOTATION, ANNOTATION_PREFIX } from '../../../shared/k8s/service-annotations.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP, LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import { sortedEntries } from '../fingerprint.ts';
import type { KindInfo, KubeObject } from '../kube-object.ts';
import { asNode } from './node-kind.ts';

/**
 * What the service controller (functions/service) reads of Nodes, Services and EndpointSlices: the fingerprints of
 * its module (service.ts), apart so the module's routing state fits beside its table entry.
 */

export const SERVICE_KIND = { name: 'Service', path: '/api/v1/services', namespaced: true } as const satisfies KindInfo;

/** The owner kept per slice is its Service (label `kubernetes.io/service-name`), for a deletion a relist finds. */
export const ENDPOINT_SLICE_KIND = {
  name: 'EndpointSlice',
  path: '/apis/discovery.k8s.io/v1/endpointslices',
  namespaced: true,
  owner: (object: KubeObject) => object.metadata?.labels?.[LABEL_SERVICE_NAME],
} as const satisfies KindInfo;

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

const deleting = (object: KubeObject) => Boolean(object.metadata?.deletionTimestamp);

/**
 * Instance targets: the Node's instance and every label (`target-node-labels` may name any), for a Node that may
 * take load balancer traffic (the service controller's own predicate). A Node that may not (no instance yet,
 * excluded, being deleted or scaled down) is in no load balancer's targets and opens no security group, whatever
 * else it says: nothing of it is read, so its arrival, its changes and its deletion send nothing; becoming a
 * candidate and ceasing to be one each send every LoadBalancer Service's key once. A joining Node so costs one such
 * round, when it gets its instance, not two (its creation too); a Node the cluster autoscaler removes costs one,
 * when it is marked, not two (its deletion too). Readiness is not part of it (KEP-3458,
 * shared/k8s/load-balancer-nodes.ts), so a Node flapping between Ready and NotReady sends nothing either. A change
 * of labels alone sends nothing while no LoadBalancer Service has `target-node-labels` (the routing keeps
 * `nodeTargetInstance` apart to tell: service.ts).
 */
export function nodeTargetReads(object: KubeObject): unknown[] | undefined {
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
 * LoadBalancer Services, and any Service still carrying the cleanup finalizer (it was one, and its load balancer
 * must go). `loadBalancerClass` and the `aws-load-balancer-type` annotation are forwarded rather than judged here:
 * whether a class or type is ours is the reconciler's decision. Status is left out: the reconciler writes it.
 */
export function serviceReads(object: KubeObject): unknown[] | undefined {
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

/** IP targets: the ready addresses and ports behind the Service. */
export function endpointSliceReads(object: KubeObject): unknown[] | undefined {
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

/** How a LoadBalancer Service picks its targets, or undefined when it is not a LoadBalancer. */
export function loadBalancerTargets(object: KubeObject): 'instance' | 'ip' | undefined {
  const service = object as ServiceObject;
  if (service.spec?.type !== 'LoadBalancer') return undefined;
  const annotations = service.metadata?.annotations ?? {};
  const ip = annotations[ANNOTATION.nlbTargetType] === 'ip' || annotations[ANNOTATION.type] === 'nlb-ip';
  return ip ? 'ip' : 'instance';
}
