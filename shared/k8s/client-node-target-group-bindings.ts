import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1DeleteOptions,
} from '@kubernetes/client-node';
import { type Clock, systemClock } from '../clock.ts';
import {
  apiConfiguration,
  guardedPatch,
  LIST_PAGE_SIZE,
  listAllPages,
  MERGE_PATCH,
  relistOnExpired,
  toPlainJson,
  translated,
} from './client-node-adapter.ts';
import { isNotFound } from './errors.ts';
import type { Namespace } from './ingress-types.ts';
import type { LeaseReadPort, LeaseSnapshot } from './lbc-lease.ts';
import { podConditionPatch } from './pod-conditions.ts';
import type { WriteGuard } from './port.ts';
import { deleteOptions, labelSelectorOf, TGB_VERSION } from './rest-target-group-bindings.ts';
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
 * The binding controller's ports over @kubernetes/client-node 2.x, built as `client-node-ingresses.ts` is (one
 * client-node configuration, lists paged 500 at a time and started again once on 410, plain API JSON out,
 * `KubernetesApiError` for every API error), with the requests of `rest-target-group-bindings.ts`:
 * TargetGroupBindings through the custom objects API (a 404 on a list or a read is [] or undefined: the binding or
 * its CRD is missing), JSON merge patches (tgb-patches.ts) guarded by resourceVersion but for the status; a Pod's
 * condition as a strategic merge patch of `pods/<name>/status` after reading the Pod; the reference's Lease read;
 * the stack bindings' create (POST) and delete (DELETE, with the uid precondition when given; 404 is 'gone').
 */

const STRATEGIC_MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

export class ClientNodeTargetGroupBindings implements TargetGroupBindingsPort, StackBindingWrites {
  private readonly custom: CustomObjectsApi;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string } = {}) {
    this.custom = new CustomObjectsApi(apiConfiguration(kubeConfig, options.userAgent));
  }

  async listTargetGroupBindings(namespace?: string): Promise<TargetGroupBinding[]> {
    const [group, version, plural] = [TGB_GROUP, TGB_VERSION, TGB_PLURAL];
    try {
      return await relistOnExpired(() =>
        listAllPages<TargetGroupBinding>(async (token) =>
          customPage(
            namespace === undefined
              ? this.custom.listCustomObjectForAllNamespaces({
                  group,
                  version,
                  resourcePlural: plural,
                  limit: LIST_PAGE_SIZE,
                  _continue: token,
                })
              : this.custom.listNamespacedCustomObject({
                  group,
                  version,
                  namespace,
                  plural,
                  limit: LIST_PAGE_SIZE,
                  _continue: token,
                }),
          ),
        ),
      );
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  getTargetGroupBinding(namespace: string, name: string): Promise<TargetGroupBinding | undefined> {
    return orUndefined(async () =>
      toPlainJson(
        await this.custom.getNamespacedCustomObject({
          group: TGB_GROUP,
          version: TGB_VERSION,
          namespace,
          plural: TGB_PLURAL,
          name,
        }),
      ),
    );
  }

  setTargetGroupBindingFinalizers(
    namespace: string,
    name: string,
    finalizers: string[],
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    return this.patch(namespace, name, guardedPatch(finalizersPatch(finalizers), guard), false);
  }

  setTargetGroupBindingAnnotations(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    return this.patch(namespace, name, guardedPatch(annotationsPatch(annotations), guard), false);
  }

  fillTargetGroupBindingSpec(
    namespace: string,
    name: string,
    fields: TgbInferredFields,
    guard: WriteGuard,
  ): Promise<TargetGroupBinding> {
    return this.patch(namespace, name, guardedPatch(specFillPatch(fields), guard), false);
  }

  setTargetGroupBindingStatus(
    namespace: string,
    name: string,
    status: TargetGroupBindingStatus,
  ): Promise<TargetGroupBinding> {
    return this.patch(namespace, name, statusPatch(status), true);
  }

  createTargetGroupBinding(binding: TargetGroupBinding): Promise<TargetGroupBinding> {
    const namespace = binding.metadata.namespace ?? 'default';
    const request = { group: TGB_GROUP, version: TGB_VERSION, namespace, plural: TGB_PLURAL, body: binding };
    return translated(
      async () => toPlainJson(await this.custom.createNamespacedCustomObject(request)) as TargetGroupBinding,
    );
  }

  async deleteTargetGroupBinding(namespace: string, name: string, uid?: string): Promise<'deleted' | 'gone'> {
    const body = deleteOptions(uid) as V1DeleteOptions | undefined;
    const request = { group: TGB_GROUP, version: TGB_VERSION, namespace, plural: TGB_PLURAL, name, body };
    try {
      await translated(() => this.custom.deleteNamespacedCustomObject(request));
      return 'deleted';
    } catch (err) {
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  private patch(namespace: string, name: string, body: object, status: boolean): Promise<TargetGroupBinding> {
    const request = { group: TGB_GROUP, version: TGB_VERSION, namespace, plural: TGB_PLURAL, name, body };
    return translated(
      async () =>
        toPlainJson(
          status
            ? await this.custom.patchNamespacedCustomObjectStatus(request, MERGE_PATCH)
            : await this.custom.patchNamespacedCustomObject(request, MERGE_PATCH),
        ) as TargetGroupBinding,
    );
  }
}

export class ClientNodePodGates implements PodGatesPort {
  private readonly core: CoreV1Api;
  private readonly clock: Clock;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string; clock?: Clock } = {}) {
    this.core = new CoreV1Api(apiConfiguration(kubeConfig, options.userAgent));
    this.clock = options.clock ?? systemClock;
  }

  listPods(namespace: string, selector: Record<string, string>): Promise<Pod[]> {
    const labelSelector = labelSelectorOf(selector);
    return relistOnExpired(() =>
      listAllPages<Pod>((token) =>
        this.core.listNamespacedPod({ namespace, labelSelector, limit: LIST_PAGE_SIZE, _continue: token }),
      ),
    );
  }

  async setPodCondition(namespace: string, name: string, condition: PodConditionWrite): Promise<Pod | 'gone'> {
    const pod = await orUndefined<Pod>(async () => toPlainJson(await this.core.readNamespacedPod({ name, namespace })));
    if (!pod) return 'gone';
    const body = podConditionPatch(pod, condition, this.clock.now());
    if (!body) return pod;
    const written = await orUndefined<Pod>(async () =>
      toPlainJson(await this.core.patchNamespacedPodStatus({ name, namespace, body }, STRATEGIC_MERGE_PATCH)),
    );
    return written ?? 'gone';
  }

  getNamespace(name: string): Promise<Namespace | undefined> {
    return orUndefined(async () => toPlainJson(await this.core.readNamespace({ name })));
  }
}

export class ClientNodeLeaseRead implements LeaseReadPort {
  private readonly coordination: CoordinationV1Api;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string } = {}) {
    this.coordination = new CoordinationV1Api(apiConfiguration(kubeConfig, options.userAgent));
  }

  /** client-node reads MicroTimes as Dates: they come back as RFC 3339 in milliseconds, which is all the check reads. */
  getLease(namespace: string, name: string): Promise<LeaseSnapshot | undefined> {
    return orUndefined(async () => toPlainJson(await this.coordination.readNamespacedLease({ name, namespace })));
  }
}

/**
 * A custom object list is handed out as the API's JSON, not a model: its continue token is `metadata.continue`,
 * which `listAllPages` reads as client-node's models name it (`_continue`).
 */
async function customPage(list: Promise<unknown>) {
  const page = (await list) as { items?: object[]; metadata?: { continue?: string } };
  return { items: page.items ?? [], metadata: { _continue: page.metadata?.continue } };
}

async function orUndefined<T>(read: () => Promise<unknown>): Promise<T | undefined> {
  try {
    return (await translated(read)) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
