import { isLoadBalancerNodeCandidate } from '../../../shared/k8s/load-balancer-nodes.ts';
import { LABEL_SERVICE_NAME } from '../../../shared/k8s/service-port.ts';
import {
  LEGACY_READINESS_GATE_PREFIX,
  READINESS_GATE_PREFIX,
  type TargetGroupBinding,
  TGB_GROUP,
  TGB_PLURAL,
} from '../../../shared/k8s/tgb-types.ts';
import type { Endpoint, Service } from '../../../shared/k8s/types.ts';
import { sortedEntries } from '../fingerprint.ts';
import type { KindInfo, KubeObject } from '../kube-object.ts';
import { asNode } from './node-kind.ts';

/**
 * What the TargetGroupBinding controller (functions/target-group-binding) reads of bindings, Services,
 * EndpointSlices, Nodes and Pods: the fingerprints of its module (target-group-binding.ts), and the little the module
 * keeps of each binding (`BindingFacts`).
 */

/**
 * The AWS Load Balancer Controller's TargetGroupBinding (namespaced). Its CustomResourceDefinition may not be
 * installed (deploy/crds/targetgroupbindings.yaml): `optional`, so a 404 is an empty kind, listed again later.
 */
export const TARGET_GROUP_BINDING_KIND = {
  name: 'TargetGroupBinding',
  path: `/apis/${TGB_GROUP}/v1beta1/${TGB_PLURAL}`,
  namespaced: true,
  optional: true,
} as const satisfies KindInfo;

const deleting = (object: KubeObject) => Boolean(object.metadata?.deletionTimestamp);

/**
 * Every binding: its spec, generation, deletion, finalizers and labels (the reference's stack labels say its targets
 * are another controller's). Not its status (the controller writes it) nor its annotations (the controller's own
 * record of registered targets, written by itself: hearing it back would double every multi-cluster pass).
 */
export function bindingReads(object: KubeObject): unknown[] | undefined {
  const binding = object as unknown as TargetGroupBinding & { metadata: { generation?: number } };
  return [
    binding.metadata?.uid,
    binding.metadata?.generation,
    deleting(object),
    binding.metadata?.finalizers ?? [],
    sortedEntries(binding.metadata?.labels),
    binding.spec ?? null,
  ];
}

/**
 * Services, as a binding's backend: the selector (the Pods behind it), the ports (by name or number, the node port of
 * instance targets, the target port of IP targets), the type and IP families. Every Service: the module sends keys
 * only for those a binding names, which it cannot know from the Service alone.
 */
export function bindingServiceReads(object: KubeObject): unknown[] | undefined {
  const service = object as unknown as Service;
  const spec = service.spec ?? {};
  return [
    service.metadata?.uid,
    spec.type,
    sortedEntries(spec.selector),
    (spec.ports ?? []).map((p) => [p.name, p.protocol, p.port, p.targetPort, p.nodePort]),
    spec.ipFamilies,
  ];
}

interface SliceObject extends KubeObject {
  addressType?: string;
  endpoints?: Endpoint[];
  ports?: { name?: string; port?: number; protocol?: string }[];
}

/**
 * IP targets: each endpoint's addresses, conditions, Node and zone, and the Pod behind it (a not-ready endpoint whose
 * Pod waits only for its readiness gate is registered too), and the slice's ports.
 */
export function bindingSliceReads(object: KubeObject): unknown[] | undefined {
  const slice = object as SliceObject;
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
      e.targetRef ? [e.targetRef.kind, e.targetRef.namespace, e.targetRef.name, e.targetRef.uid] : null,
    ]),
    (slice.ports ?? []).map((p) => [p.name, p.port, p.protocol]),
  ];
}

/**
 * Instance targets: a Node that may take load balancer traffic (the service controller's predicate,
 * shared/k8s/load-balancer-nodes.ts: not excluded, not being deleted or scaled down, with an instance): its instance,
 * its readiness (the reference registers Ready Nodes only) and every label (a binding's `nodeSelector` may name any;
 * the reference's default exclusions are labels too). Any other Node is in no binding's targets: nothing is read.
 */
export function bindingNodeReads(object: KubeObject): unknown[] | undefined {
  const node = asNode(object);
  if (!isLoadBalancerNodeCandidate(node)) return undefined;
  const ready = (node.status?.conditions ?? []).find((c) => c.type === 'Ready')?.status;
  return [node.metadata.uid, node.spec?.providerID, ready, sortedEntries(node.metadata.labels)];
}

interface GatedPod extends KubeObject {
  spec?: { readinessGates?: { conditionType?: string }[]; nodeName?: string };
  status?: {
    podIP?: string;
    podIPs?: { ip?: string }[];
    conditions?: { type?: string; status?: string }[];
  };
}

/** A readiness gate of a binding: the current prefix, or the one the reference's older releases injected. */
export function gateBinding(conditionType: string | undefined): string | undefined {
  if (conditionType?.startsWith(READINESS_GATE_PREFIX)) return conditionType.slice(READINESS_GATE_PREFIX.length);
  if (conditionType?.startsWith(LEGACY_READINESS_GATE_PREFIX)) {
    return conditionType.slice(LEGACY_READINESS_GATE_PREFIX.length);
  }
  return undefined;
}

/** The condition types of a Pod's binding readiness gates, in spec order (a Pod's spec never changes them). */
export function bindingGates(object: KubeObject): string[] {
  const gates = (object as GatedPod).spec?.readinessGates ?? [];
  const out: string[] = [];
  for (const gate of gates) if (gateBinding(gate.conditionType) !== undefined) out.push(gate.conditionType!);
  return out;
}

/**
 * Only Pods with a binding's readiness gate: the gates, the Pod's IP, the status of its gate conditions and of
 * ContainersReady (a gated Pod whose containers are ready is registered before it is Ready), and its deletion. Not
 * the conditions' reasons and messages: the controller copies ELB's target health into them itself. Every other Pod
 * (most of them) is none of the controller's business: its endpoints reach it through the EndpointSlices.
 */
export function bindingPodReads(object: KubeObject): unknown[] | undefined {
  const gates = bindingGates(object);
  if (gates.length === 0) return undefined;
  const pod = object as GatedPod;
  const watched = new Set([...gates, 'ContainersReady', 'Ready']);
  const conditions = (pod.status?.conditions ?? [])
    .filter((c) => c.type !== undefined && watched.has(c.type))
    .map((c) => `${c.type}=${c.status}`)
    .sort();
  return [
    pod.metadata?.uid,
    gates,
    pod.status?.podIP,
    (pod.status?.podIPs ?? []).map((p) => p.ip),
    conditions,
    deleting(object),
  ];
}

/**
 * The little the module keeps of a binding instead of the object: the Service it names and its target type (unset
 * until the controller fills it from the target group: then both kinds of change concern it).
 */
export interface BindingFacts {
  service: string;
  targetType?: string;
}

export function bindingFacts(object: KubeObject): BindingFacts {
  const spec = (object as unknown as TargetGroupBinding).spec;
  const facts: BindingFacts = { service: spec?.serviceRef?.name ?? '' };
  if (spec?.targetType !== undefined) facts.targetType = spec.targetType;
  return facts;
}
