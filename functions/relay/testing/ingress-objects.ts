import {
  DEFAULT_INGRESS_CLASS_ANNOTATION,
  INGRESS_CONTROLLER_NAME,
  type Ingress,
  type IngressBackend,
  type IngressClass,
  type IngressClassParams,
} from '../../../shared/k8s/ingress-types.ts';
import type { KubeObject } from '../kinds.ts';

/** Ingresses, IngressClasses and IngressClassParams as the API serves them, for the relay's tests. */

export const ALB = 'alb';

export function makeIngress(
  namespace: string,
  name: string,
  options: {
    className?: string;
    annotations?: Record<string, string>;
    finalizers?: string[];
    /** Backend Services (`name` or `name:use-annotation`), one path each; the first also the default backend. */
    services?: string[];
    generation?: number;
  } = {},
): KubeObject {
  const backend = (service: string): IngressBackend => {
    const [serviceName, port] = service.split(':');
    return { service: { name: serviceName!, port: port ? { name: port } : { number: 80 } } };
  };
  const services = options.services ?? ['web'];
  const ingress: Ingress & { metadata: { generation?: number } } = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      namespace,
      name,
      generation: options.generation ?? 1,
      ...(options.annotations ? { annotations: options.annotations } : {}),
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    },
    spec: {
      ...(options.className === undefined ? {} : { ingressClassName: options.className }),
      rules: [
        {
          host: `${name}.example.com`,
          http: {
            paths: services.map((s, i) => ({ path: `/${i}`, pathType: 'Prefix' as const, backend: backend(s) })),
          },
        },
      ],
    },
  };
  return ingress as unknown as KubeObject;
}

export function makeIngressClass(
  name: string,
  options: { controller?: string; params?: string; isDefault?: boolean } = {},
): KubeObject {
  const ingressClass: IngressClass = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name, ...(options.isDefault ? { annotations: { [DEFAULT_INGRESS_CLASS_ANNOTATION]: 'true' } } : {}) },
    spec: {
      controller: options.controller ?? INGRESS_CONTROLLER_NAME,
      ...(options.params
        ? { parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: options.params } }
        : {}),
    },
  };
  return ingressClass as unknown as KubeObject;
}

export function makeIngressClassParams(name: string, spec: IngressClassParams['spec'] = {}): KubeObject {
  const params: IngressClassParams = {
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'IngressClassParams',
    metadata: { name },
    spec,
  };
  return params as unknown as KubeObject;
}
