import type { Namespace } from './ingress-types.ts';
import type { LeaseReadPort } from './lbc-lease.ts';
import type { KubernetesPort, WriteGuard } from './port.ts';
import type { ServicesPort } from './service-port.ts';
import type { TargetGroupBinding, TargetGroupBindingStatus, TgbInferredFields } from './tgb-types.ts';
import type { Pod } from './types.ts';

/**
 * TargetGroupBindings as the binding controller needs them. As the other ports, a finalizer or annotation write is a
 * merge patch guarded by `metadata.resourceVersion` (409 Conflict when the binding changed since it was read).
 */
export interface TargetGroupBindingsPort {
  /** Every binding of one namespace, or of every namespace; [] when the CRD is not installed. */
  listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]>;
  /** undefined when it does not exist, or when the CRD is not installed. */
  getTargetGroupBinding(namespace: string, name: string): Promise<TargetGroupBinding | undefined>;
  /** Replaces `metadata.finalizers`; answers the binding as written. */
  setTargetGroupBindingFinalizers(
    namespace: string,
    name: string,
    finalizers: string[],
    guard: WriteGuard,
  ): Promise<TargetGroupBinding>;
  /** Sets or (null) removes annotations (the multi-cluster record of registered targets); answers the binding. */
  setTargetGroupBindingAnnotations(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding>;
  /** Fills spec fields left out (read from the target group); answers the binding. */
  fillTargetGroupBindingSpec(
    namespace: string,
    name: string,
    fields: TgbInferredFields,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding>;
  /** Replaces `status` (the status subresource). */
  setTargetGroupBindingStatus(
    namespace: string,
    name: string,
    status: TargetGroupBindingStatus,
  ): Promise<TargetGroupBinding>;
}

/** A Pod condition as the readiness gate sets it. */
export interface PodConditionWrite {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
}

/** The Pods behind a binding, and their readiness gate conditions. */
export interface PodGatesPort {
  /** The Pods of a namespace that match a Service's selector (every label equal). */
  listPods(namespace: string, selector: Record<string, string>): Promise<Pod[]>;
  /**
   * Sets one condition of a Pod's status by type, leaving the others (a strategic merge patch of `pods/status`,
   * `conditions` merged by `type`; `lastTransitionTime` moves when the status changes). 'gone' when the Pod is.
   */
  setPodCondition(namespace: string, name: string, condition: PodConditionWrite): Promise<Pod | 'gone'>;
  /** undefined when it does not exist. */
  getNamespace(name: string): Promise<Namespace | undefined>;
}

/** What the binding controller reads and writes in Kubernetes. */
export type TgbControllerKube = TargetGroupBindingsPort &
  PodGatesPort &
  LeaseReadPort &
  Pick<ServicesPort, 'getService' | 'listEndpointSlices'> &
  Pick<KubernetesPort, 'listNodes' | 'recordEvent'>;

/**
 * The binding controller's view of Kubernetes: bindings from one port, Pods' gates and Namespaces from another, the
 * reference's Lease from a third, Services and EndpointSlices, then Nodes and Events, as `ingressControllerKube`.
 */
export function tgbControllerKube(
  bindings: TargetGroupBindingsPort,
  gates: PodGatesPort,
  lease: LeaseReadPort,
  services: Pick<ServicesPort, 'getService' | 'listEndpointSlices'>,
  nodes: Pick<KubernetesPort, 'listNodes' | 'recordEvent'>,
): TgbControllerKube {
  return {
    listTargetGroupBindings: (namespace) => bindings.listTargetGroupBindings(namespace),
    getTargetGroupBinding: (namespace, name) => bindings.getTargetGroupBinding(namespace, name),
    setTargetGroupBindingFinalizers: (namespace, name, finalizers, guard) =>
      bindings.setTargetGroupBindingFinalizers(namespace, name, finalizers, guard),
    setTargetGroupBindingAnnotations: (namespace, name, annotations, guard) =>
      bindings.setTargetGroupBindingAnnotations(namespace, name, annotations, guard),
    fillTargetGroupBindingSpec: (namespace, name, fields, guard) =>
      bindings.fillTargetGroupBindingSpec(namespace, name, fields, guard),
    setTargetGroupBindingStatus: (namespace, name, status) =>
      bindings.setTargetGroupBindingStatus(namespace, name, status),
    listPods: (namespace, selector) => gates.listPods(namespace, selector),
    setPodCondition: (namespace, name, condition) => gates.setPodCondition(namespace, name, condition),
    getNamespace: (name) => gates.getNamespace(name),
    getLease: (namespace, name) => lease.getLease(namespace, name),
    getService: (namespace, name) => services.getService(namespace, name),
    listEndpointSlices: (namespace, name) => services.listEndpointSlices(namespace, name),
    listNodes: () => nodes.listNodes(),
    recordEvent: (event) => nodes.recordEvent(event),
  };
}
