import type { GroupId } from '../../../../shared/ingress/membership.ts';
import type {
  HttpIngressPath,
  Ingress,
  IngressBackend,
  IngressClassParams,
  IngressRule,
  IngressTls,
  PathType,
} from '../../../../shared/k8s/ingress-types.ts';
import type { Service, ServicePortSpec } from '../../../../shared/k8s/types.ts';
import type { ModelReads, ModelSettings } from '../types.ts';

/**
 * Test builders for the Ingress model: Ingresses, Services, IngressClassParams, reads and settings, with the
 * defaults a test does not care about. Other test files import these; keep their shape stable.
 */

export const TEST_CLUSTER = 'test-cluster';
export const ANN = 'alb.ingress.kubernetes.io/';

/** A backend: a Service port by number or name (`use-annotation` for an `actions.<service>` annotation). */
export function backend(service: string, port: number | string): IngressBackend {
  return { service: { name: service, port: typeof port === 'number' ? { number: port } : { name: port } } };
}

export function path(
  value: string | undefined,
  pathType: PathType | undefined,
  to: IngressBackend = backend('web', 80),
): HttpIngressPath {
  return {
    ...(value !== undefined ? { path: value } : {}),
    ...(pathType !== undefined ? { pathType } : {}),
    backend: to,
  };
}

export function rule(host: string | undefined, ...paths: HttpIngressPath[]): IngressRule {
  return { ...(host ? { host } : {}), http: { paths } };
}

export interface IngressOptions {
  name?: string;
  namespace?: string;
  uid?: string;
  /** Keys without a `/` get the `alb.ingress.kubernetes.io/` prefix. */
  annotations?: Record<string, string>;
  rules?: IngressRule[];
  defaultBackend?: IngressBackend;
  tls?: IngressTls[];
  className?: string;
  finalizers?: string[];
}

function prefixed(annotations: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!annotations) return undefined;
  return Object.fromEntries(Object.entries(annotations).map(([k, v]) => [k.includes('/') ? k : `${ANN}${k}`, v]));
}

export function makeIngress(options: IngressOptions = {}): Ingress {
  const annotations = prefixed(options.annotations);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: options.name ?? 'app',
      namespace: options.namespace ?? 'default',
      uid: options.uid ?? `uid-ingress-${options.name ?? 'app'}`,
      ...(annotations ? { annotations } : {}),
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    },
    spec: {
      ingressClassName: options.className ?? 'alb',
      ...(options.defaultBackend ? { defaultBackend: options.defaultBackend } : {}),
      ...(options.tls ? { tls: options.tls } : {}),
      rules: options.rules ?? [rule(undefined, path('/', 'Prefix'))],
    },
  };
}

export interface ServiceOptions {
  name?: string;
  namespace?: string;
  uid?: string;
  type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer';
  /** Default: `http` 80 -> 8080, node port 30080. */
  ports?: ServicePortSpec[];
  annotations?: Record<string, string>;
  ipFamilies?: ('IPv4' | 'IPv6')[];
}

export function makeService(options: ServiceOptions = {}): Service {
  const annotations = prefixed(options.annotations);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: options.name ?? 'web',
      namespace: options.namespace ?? 'default',
      uid: options.uid ?? `uid-service-${options.name ?? 'web'}`,
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      type: options.type ?? 'NodePort',
      ports: options.ports ?? [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      ...(options.ipFamilies ? { ipFamilies: options.ipFamilies } : {}),
    },
  };
}

export function makeParams(name: string, spec: IngressClassParams['spec'] = {}): IngressClassParams {
  return { apiVersion: 'elbv2.k8s.aws/v1beta1', kind: 'IngressClassParams', metadata: { name }, spec };
}

/** Reads over a fixed set of Services (and certificates); counts Service lookups. */
export function fakeReads(
  services: readonly Service[] = [makeService()],
  certificates: { arn: string; names: string[] }[] = [],
): ModelReads & { serviceLookups: number } {
  const reads = {
    serviceLookups: 0,
    async service(namespace: string, name: string) {
      reads.serviceLookups++;
      return services.find((s) => (s.metadata.namespace ?? 'default') === namespace && s.metadata.name === name);
    },
    async certificates() {
      return certificates.map((c) => ({ ...c, names: [...c.names] }));
    },
  };
  return reads;
}

export function makeSettings(overrides: Partial<ModelSettings> = {}): ModelSettings {
  return {
    clusterName: TEST_CLUSTER,
    defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
    defaultTargetType: 'instance',
    defaultTags: {},
    externalManagedTags: [],
    ...overrides,
  };
}

export function implicitGroup(ingress: Ingress): GroupId {
  return { explicit: false, namespace: ingress.metadata.namespace ?? 'default', name: ingress.metadata.name };
}

export function explicitGroup(name: string): GroupId {
  return { explicit: true, name };
}
