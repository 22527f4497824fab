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
import { CoreV1Api, CustomObjectsApi, listAll, NetworkingV1Api } from './rest-api.ts';
import { guardedPatch, KubernetesRestClient, type TokenKubeConfig } from './rest-client.ts';
import type { RestPortOptions } from './rest-ports.ts';

/** Where the API serves IngressClassParams (deploy/crds/ingressclassparams.yaml): `elbv2.k8s.aws/v1beta1`, cluster-scoped. */
export const INGRESS_CLASS_PARAMS_VERSION = 'v1beta1';
export const INGRESS_CLASS_PARAMS_PLURAL = 'ingressclassparams';

/**
 * The Ingress controller's IngressesPort over the Lambdas' REST client (docs/adr/0010-lambda-cold-start.md): the
 * same requests, answers and errors as `client-node-ingresses.ts`, whose adapter tests run against both.
 */
export class RestIngresses implements IngressesPort {
  private readonly networking: NetworkingV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;

  constructor(kubeConfig: TokenKubeConfig, options: RestPortOptions = {}) {
    const api = new KubernetesRestClient(kubeConfig, options.userAgent);
    this.networking = new NetworkingV1Api(api);
    this.custom = new CustomObjectsApi(api);
    this.core = new CoreV1Api(api);
  }

  listIngresses(): Promise<Ingress[]> {
    return listAll((query) => this.networking.listIngressForAllNamespaces<Ingress>(query));
  }

  getIngress(namespace: string, name: string): Promise<Ingress | undefined> {
    return orUndefined(() => this.networking.readNamespacedIngress<Ingress>(namespace, name));
  }

  listIngressClasses(): Promise<IngressClass[]> {
    return listAll((query) => this.networking.listIngressClass<IngressClass>(query));
  }

  /** A 404 whether the object or the CRD is missing. */
  getIngressClassParams(name: string): Promise<IngressClassParams | undefined> {
    return orUndefined(() =>
      this.custom.getClusterCustomObject<IngressClassParams>(
        INGRESS_CLASS_PARAMS_GROUP,
        INGRESS_CLASS_PARAMS_VERSION,
        INGRESS_CLASS_PARAMS_PLURAL,
        name,
      ),
    );
  }

  getNamespace(name: string): Promise<Namespace | undefined> {
    return orUndefined(() => this.core.readNamespace<Namespace>(name));
  }

  setIngressFinalizers(namespace: string, name: string, finalizers: string[], guard: WriteGuard): Promise<Ingress> {
    const body = guardedPatch({ metadata: { finalizers: finalizers.length > 0 ? finalizers : null } }, guard);
    return this.networking.patchNamespacedIngress<Ingress>(namespace, name, body);
  }

  setIngressStatus(namespace: string, name: string, ingress: IngressLoadBalancerIngress[]): Promise<Ingress> {
    const body = { status: { loadBalancer: { ingress: ingress.length > 0 ? ingress : null } } };
    return this.networking.patchNamespacedIngressStatus<Ingress>(namespace, name, body);
  }
}

async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
