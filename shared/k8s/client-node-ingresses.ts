import { CoreV1Api, CustomObjectsApi, type KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
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
import type { IngressesPort } from './ingress-port.ts';
import {
  INGRESS_CLASS_PARAMS_GROUP,
  type Ingress,
  type IngressClass,
  type IngressClassParams,
  type IngressLoadBalancerIngress,
  type Namespace,
} from './ingress-types.ts';
import type { WriteGuard } from './port.ts';
import { INGRESS_CLASS_PARAMS_PLURAL, INGRESS_CLASS_PARAMS_VERSION } from './rest-ingresses.ts';

/**
 * The IngressesPort over @kubernetes/client-node 2.x, built as `client-node-services.ts` is: one client-node
 * configuration (`apiConfiguration`), lists paged 500 at a time and started again once on 410, JSON merge patches
 * guarded by resourceVersion, plain API JSON out and `KubernetesApiError` for every API error.
 * IngressClassParams are a custom resource (elbv2.k8s.aws/v1beta1, cluster-scoped, deploy/crds/); a 404 for it,
 * whether the object or its CRD is missing, is undefined.
 */

export class ClientNodeIngresses implements IngressesPort {
  private readonly networking: NetworkingV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;

  constructor(kubeConfig: KubeConfig, options: { userAgent?: string } = {}) {
    const configuration = apiConfiguration(kubeConfig, options.userAgent);
    this.networking = new NetworkingV1Api(configuration);
    this.custom = new CustomObjectsApi(configuration);
    this.core = new CoreV1Api(configuration);
  }

  listIngresses(): Promise<Ingress[]> {
    return relistOnExpired(() =>
      listAllPages<Ingress>((token) =>
        this.networking.listIngressForAllNamespaces({ limit: LIST_PAGE_SIZE, _continue: token }),
      ),
    );
  }

  getIngress(namespace: string, name: string): Promise<Ingress | undefined> {
    return orUndefined(async () => toPlainJson(await this.networking.readNamespacedIngress({ name, namespace })));
  }

  listIngressClasses(): Promise<IngressClass[]> {
    return relistOnExpired(() =>
      listAllPages<IngressClass>((token) =>
        this.networking.listIngressClass({ limit: LIST_PAGE_SIZE, _continue: token }),
      ),
    );
  }

  getIngressClassParams(name: string): Promise<IngressClassParams | undefined> {
    return orUndefined(async () =>
      toPlainJson(
        await this.custom.getClusterCustomObject({
          group: INGRESS_CLASS_PARAMS_GROUP,
          version: INGRESS_CLASS_PARAMS_VERSION,
          plural: INGRESS_CLASS_PARAMS_PLURAL,
          name,
        }),
      ),
    );
  }

  getNamespace(name: string): Promise<Namespace | undefined> {
    return orUndefined(async () => toPlainJson(await this.core.readNamespace({ name })));
  }

  /** `null` for none: a merge patch with `[]` would do too, but `null` says "remove the field" plainly. */
  setIngressFinalizers(namespace: string, name: string, finalizers: string[], guard: WriteGuard): Promise<Ingress> {
    const body = guardedPatch({ metadata: { finalizers: finalizers.length > 0 ? finalizers : null } }, guard);
    return translated(
      async () =>
        toPlainJson(await this.networking.patchNamespacedIngress({ name, namespace, body }, MERGE_PATCH)) as Ingress,
    );
  }

  /**
   * Unguarded: the controller owns `status.loadBalancer` and writes it whole, so another writer's change in between
   * (a label) is no reason to fail. An empty list removes the field, as the API server stores it anyway.
   */
  setIngressStatus(namespace: string, name: string, ingress: IngressLoadBalancerIngress[]): Promise<Ingress> {
    const body = { status: { loadBalancer: { ingress: ingress.length > 0 ? ingress : null } } };
    return translated(
      async () =>
        toPlainJson(
          await this.networking.patchNamespacedIngressStatus({ name, namespace, body }, MERGE_PATCH),
        ) as Ingress,
    );
  }
}

async function orUndefined<T>(read: () => Promise<unknown>): Promise<T | undefined> {
  try {
    return (await translated(read)) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
