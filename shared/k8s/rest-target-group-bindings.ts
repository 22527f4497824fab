import { isNotFound } from './errors.ts';
import type { Namespace } from './ingress-types.ts';
import type { LeaseReadPort, LeaseSnapshot } from './lbc-lease.ts';
import { podConditionPatch } from './pod-conditions.ts';
import type { WriteGuard } from './port.ts';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, listAll } from './rest-api.ts';
import { guardedPatch, KubernetesRestClient, type TokenKubeConfig } from './rest-client.ts';
import type { RestPortOptions } from './rest-ports.ts';
import type { StackBindingWrites } from './stack-bindings.ts';
import { annotationsPatch, finalizersPatch, specFillPatch, statusPatch } from './tgb-patches.ts';
import type { PodConditionWrite, PodGatesPort, TargetGroupBindingsPort } from './tgb-port.ts';
import {
  type TargetGroupBinding,
  type TargetGroupBindingStatus,
  TGB_GROUP,
  TGB_PLURAL,
  type TgbInferredFields,
} from './tgb-types.ts';
import type { Pod } from './types.ts';

/**
 * The binding controller's ports over the Lambdas' REST client (docs/adr/0010-lambda-cold-start.md): the same
 * requests, answers and errors as `client-node-target-group-bindings.ts`, whose adapter tests run against both.
 * - TargetGroupBindings are a custom resource (`elbv2.k8s.aws/v1beta1`, namespaced, deploy/crds/): lists paged,
 *   a 404 on a list or a read (the binding, or the CRD, is missing) is [] or undefined; writes are JSON merge
 *   patches (tgb-patches.ts), guarded by resourceVersion but for the status, which the controller owns whole.
 * - A Pod's readiness gate condition: the Pod is read, then its status strategic-merge-patched by condition type
 *   (pod-conditions.ts), or not written when it has the condition already; a 404 either way is 'gone'.
 * - The reference controller's leader Lease is read (`coordination.k8s.io/v1`); 404 is undefined.
 * - The Ingress and service controllers' stack bindings (stack-bindings.ts) are created (POST; 409 AlreadyExists
 *   when the name is taken, 404 without the CRD) and deleted (DELETE, the uid as a precondition when given: 409 when
 *   another object holds the name; 404 is 'gone').
 */

export const TGB_VERSION = 'v1beta1';

/**
 * What both adapters of TargetGroupBindings serve: the binding controller's port, and the stack bindings' writes.
 * The classes name each interface in their `implements` (test/helpers/code-usage.ts follows interfaces by name).
 */
export type TgbAdapterPort = TargetGroupBindingsPort & StackBindingWrites;

export class RestTargetGroupBindings implements TargetGroupBindingsPort, StackBindingWrites {
  private readonly custom: CustomObjectsApi;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    this.custom = new CustomObjectsApi(new KubernetesRestClient(kubeConfig, options.userAgent));
  }

  async listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]> {
    try {
      return await listAll((query) =>
        namespace === undefined
          ? this.custom.listCustomObjectForAllNamespaces<TargetGroupBinding>(TGB_GROUP, TGB_VERSION, TGB_PLURAL, query)
          : this.custom.listNamespacedCustomObject<TargetGroupBinding>(
              TGB_GROUP,
              TGB_VERSION,
              namespace,
              TGB_PLURAL,
              query,
            ),
      );
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  getTargetGroupBinding(namespace: string, name: string): Promise<TargetGroupBinding | undefined> {
    return orUndefined(() =>
      this.custom.getNamespacedCustomObject<TargetGroupBinding>(TGB_GROUP, TGB_VERSION, namespace, TGB_PLURAL, name),
    );
  }

  setTargetGroupBindingFinalizers(
    namespace: string,
    name: string,
    finalizers: string[],
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    return this.patch(namespace, name, guardedPatch(finalizersPatch(finalizers), guard));
  }

  setTargetGroupBindingAnnotations(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    return this.patch(namespace, name, guardedPatch(annotationsPatch(annotations), guard));
  }

  fillTargetGroupBindingSpec(
    namespace: string,
    name: string,
    fields: TgbInferredFields,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    return this.patch(namespace, name, guardedPatch(specFillPatch(fields), guard));
  }

  setTargetGroupBindingStatus(
    namespace: string,
    name: string,
    status: TargetGroupBindingStatus,
  ): Promise<TargetGroupBinding> {
    return this.custom.patchNamespacedCustomObjectStatus<TargetGroupBinding>(
      TGB_GROUP,
      TGB_VERSION,
      namespace,
      TGB_PLURAL,
      name,
      statusPatch(status),
    );
  }

  createTargetGroupBinding(binding: TargetGroupBinding): Promise<TargetGroupBinding> {
    const namespace = binding.metadata.namespace ?? 'default';
    return this.custom.createNamespacedCustomObject<TargetGroupBinding>(
      TGB_GROUP,
      TGB_VERSION,
      namespace,
      TGB_PLURAL,
      binding,
    );
  }

  async deleteTargetGroupBinding(namespace: string, name: string, uid?: string): Promise<'deleted' | 'gone'> {
    const options = deleteOptions(uid);
    try {
      await this.custom.deleteNamespacedCustomObject(TGB_GROUP, TGB_VERSION, namespace, TGB_PLURAL, name, options);
      return 'deleted';
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  private patch(namespace: string, name: string, body: object): Promise<TargetGroupBinding> {
    return this.custom.patchNamespacedCustomObject<TargetGroupBinding>(
      TGB_GROUP,
      TGB_VERSION,
      namespace,
      TGB_PLURAL,
      name,
      body,
    );
  }
}

export class RestPodGates implements PodGatesPort {
  private readonly core: CoreV1Api;
  private readonly now: () => number;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    this.core = new CoreV1Api(new KubernetesRestClient(kubeConfig, options.userAgent));
    this.now = () => (options.clock ? options.clock.now() : Date.now());
  }

  listPods(namespace: string, selector: Record<string, string>): Promise<Pod[]> {
    const labelSelector = labelSelectorOf(selector);
    return listAll((query) => this.core.listNamespacedPod<Pod>(namespace, { ...query, labelSelector }));
  }

  async setPodCondition(namespace: string, name: string, condition: PodConditionWrite): Promise<Pod | 'gone'> {
    const pod = await orUndefined(() => this.core.readNamespacedPod<Pod>(namespace, name));
    if (!pod) return 'gone';
    const patch = podConditionPatch(pod, condition, this.now());
    if (!patch) return pod;
    return (await orUndefined(() => this.core.patchNamespacedPodStatus<Pod>(namespace, name, patch))) ?? 'gone';
  }

  getNamespace(name: string): Promise<Namespace | undefined> {
    return orUndefined(() => this.core.readNamespace<Namespace>(name));
  }
}

export class RestLeaseRead implements LeaseReadPort {
  private readonly coordination: CoordinationV1Api;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    this.coordination = new CoordinationV1Api(new KubernetesRestClient(kubeConfig, options.userAgent));
  }

  getLease(namespace: string, name: string): Promise<LeaseSnapshot | undefined> {
    return orUndefined(() => this.coordination.readNamespacedLease<LeaseSnapshot>(namespace, name));
  }
}

/**
 * With a uid, the precondition that makes the API server answer 409 instead of deleting another object of that name.
 * https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/delete-options/
 */
export function deleteOptions(uid: string | undefined): object | undefined {
  return uid === undefined ? undefined : { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid } };
}

/** A Service's selector as a `labelSelector` (`a=b,c=d`, keys sorted); `{}` is no selector (every Pod). */
export function labelSelectorOf(selector: Readonly<Record<string, string>>): string | undefined {
  const terms = Object.entries(selector)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`);
  return terms.length > 0 ? terms.join(',') : undefined;
}

async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
