import type { Service, ServicePortSpec } from '../../../shared/k8s/types.ts';
import type { KeyMessage } from '../../../shared/queue/message.ts';
import { fifoRecord } from '../../../test/helpers/records.ts';
import { SERVICE_QUEUE_ARN, type ServiceWorld } from '../../../test/helpers/service-world.ts';
import type { ServiceDeps } from '../deps.ts';
import { serviceReconciler } from '../reconciler.ts';

/**
 * A service world's controller with SERVICE_LBC_SERVICES on. Its Kubernetes access is the world's FakeKubernetes, which
 * also answers the AWS Load Balancer Controller's leader Lease (`w.kube.workloads.leases`: none unless a test holds it).
 */
export function lbcWorld(w: ServiceWorld) {
  const deps: ServiceDeps = { ...w.serviceDeps, kube: w.kube, lbcServices: true };
  let sent = 0;
  const key = (name: string, namespace = 'default'): KeyMessage => ({
    kind: 'Service',
    namespace,
    name,
    hint: { eventType: 'RESYNC', eventId: `lbc-${++sent}` },
  });
  return {
    deps,
    /** How often the Lease was read. */
    leaseReads: () => w.kube.callCount('getLease'),
    /** One Lambda invocation for the Service's key. */
    pass: (name = 'web', options: { deps?: ServiceDeps } = {}) =>
      w.invoke(serviceReconciler, options.deps ?? deps, [fifoRecord(key(name), { queueArn: SERVICE_QUEUE_ARN })]),
    /** The Service's key played until the queue is empty. */
    converge: (name = 'web', options: { deps?: ServiceDeps } = {}) => w.converge([key(name)], options.deps ?? deps),
  };
}

/** A uid fixed per test, so the reference's names (which hash it) are known. */
export const WEB_UID = '3f6c1b2a-9d7e-4c1f-8a5b-0e2d4c6f8a9b';

/** A Service the reference serves: class `service.k8s.aws/nlb` unless `annotations` hand it over by type. */
export function putLbcService(
  w: ServiceWorld,
  options: {
    name?: string;
    annotations?: Record<string, string>;
    ports?: ServicePortSpec[];
    byClass?: boolean;
    spec?: Partial<NonNullable<Service['spec']>>;
    finalizers?: string[];
    hostname?: string;
  } = {},
): Service {
  const name = options.name ?? 'web';
  return w.kube.putService({
    metadata: {
      name,
      namespace: 'default',
      uid: name === 'web' ? WEB_UID : `${WEB_UID.slice(0, -4)}${name.slice(0, 4).padEnd(4, '0')}`,
      annotations: options.annotations ?? {},
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    },
    spec: {
      type: 'LoadBalancer',
      ports: options.ports ?? [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      selector: { app: name },
      externalTrafficPolicy: 'Cluster',
      ...(options.byClass === false ? {} : { loadBalancerClass: 'service.k8s.aws/nlb' }),
      ...options.spec,
    },
    ...(options.hostname ? { status: { loadBalancer: { ingress: [{ hostname: options.hostname }] } } } : {}),
  });
}
