import type { LabelSelector, LoadBalancerIngress, ObjectMeta, ObjectReference } from './types.ts';

/**
 * Ingresses, IngressClasses and the AWS Load Balancer Controller's IngressClassParams, as the Ingress controller
 * reads them. The JSON shapes are the API's (networking.k8s.io/v1 and elbv2.k8s.aws/v1beta1), so adapters pass
 * them through unchanged.
 * https://kubernetes.io/docs/reference/kubernetes-api/service-resources/ingress-v1/
 */

export type PathType = 'Exact' | 'Prefix' | 'ImplementationSpecific';

/** A backend: a Service port (by number or by name; `use-annotation` names an `actions.<service>` annotation), or a resource. */
export interface IngressBackend {
  service?: { name: string; port?: { name?: string; number?: number } };
  resource?: { apiGroup?: string; kind: string; name: string };
}

export interface HttpIngressPath {
  path?: string;
  pathType?: PathType;
  backend: IngressBackend;
}

export interface IngressRule {
  host?: string;
  http?: { paths: HttpIngressPath[] };
}

export interface IngressTls {
  hosts?: string[];
  secretName?: string;
}

/** One entry of `status.loadBalancer.ingress` of an Ingress: the hostname and the listener ports. */
export interface IngressLoadBalancerIngress extends Omit<LoadBalancerIngress, 'ipMode'> {
  ports?: { port: number; protocol?: 'TCP' | 'UDP' | 'SCTP'; error?: string }[];
}

export interface Ingress {
  apiVersion?: 'networking.k8s.io/v1';
  kind?: 'Ingress';
  metadata: ObjectMeta;
  spec?: {
    ingressClassName?: string;
    defaultBackend?: IngressBackend;
    tls?: IngressTls[];
    rules?: IngressRule[];
  };
  status?: { loadBalancer?: { ingress?: IngressLoadBalancerIngress[] } };
}

export interface IngressClass {
  apiVersion?: 'networking.k8s.io/v1';
  kind?: 'IngressClass';
  metadata: ObjectMeta;
  spec?: {
    controller?: string;
    parameters?: { apiGroup?: string; kind: string; name: string; scope?: 'Cluster' | 'Namespace'; namespace?: string };
  };
}

export interface KeyValue {
  key: string;
  value: string;
}

/** elbv2.k8s.aws/v1beta1 IngressClassParams (cluster-scoped): each field set overrides the matching annotation. */
export interface IngressClassParams {
  apiVersion?: 'elbv2.k8s.aws/v1beta1';
  kind?: 'IngressClassParams';
  metadata: ObjectMeta;
  spec?: {
    loadBalancerName?: string;
    namespaceSelector?: LabelSelector;
    group?: { name: string };
    scheme?: 'internal' | 'internet-facing';
    inboundCIDRs?: string[];
    sslPolicy?: string;
    sslRedirectPort?: string;
    subnets?: { ids?: string[]; tags?: Record<string, string[]> };
    ipAddressType?: 'ipv4' | 'dualstack' | 'dualstack-without-public-ipv4';
    tags?: KeyValue[];
    targetType?: 'instance' | 'ip';
    certificateArn?: string[];
    loadBalancerAttributes?: KeyValue[];
    listeners?: { protocol: 'HTTP' | 'HTTPS'; port: number; listenerAttributes?: KeyValue[] }[];
    minimumLoadBalancerCapacity?: { capacityUnits: number };
    ipamConfiguration?: { ipv4IPAMPoolId?: string };
    prefixListsIDs?: string[];
    PrefixListsIDs?: string[];
    wafv2AclArn?: string;
    wafv2AclName?: string;
  };
}

export interface Namespace {
  apiVersion?: 'v1';
  kind?: 'Namespace';
  metadata: ObjectMeta;
}

export function ingressRef(ingress: Ingress): ObjectReference {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    name: ingress.metadata.name,
    namespace: ingress.metadata.namespace,
    uid: ingress.metadata.uid,
  };
}

/** `namespace/name`: how members, stacks and Events name an Ingress. */
export function ingressKey(ingress: { metadata: { namespace?: string; name: string } }): string {
  return `${ingress.metadata.namespace ?? 'default'}/${ingress.metadata.name}`;
}

/** The names users and tools rely on (the AWS Load Balancer Controller's). */
export const INGRESS_CONTROLLER_NAME = 'ingress.k8s.aws/alb';
export const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
export const DEFAULT_INGRESS_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
export const INGRESS_CLASS_PARAMS_GROUP = 'elbv2.k8s.aws';
export const INGRESS_CLASS_PARAMS_KIND = 'IngressClassParams';
/** The finalizer of an Ingress of an implicit group (one Ingress); an explicit group's is `group.ingress.k8s.aws/<group>`. */
export const IMPLICIT_GROUP_FINALIZER = 'ingress.k8s.aws/resources';
export const EXPLICIT_GROUP_FINALIZER_PREFIX = 'group.ingress.k8s.aws/';
/** Every Ingress annotation the controller reads starts with this. */
export const INGRESS_ANNOTATION_PREFIX = 'alb.ingress.kubernetes.io/';
