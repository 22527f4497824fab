import { expect } from 'vitest';
import type { Service, ServicePortSpec } from '../../../shared/k8s/types.ts';
import { parseAnnotations } from '../annotations.ts';
import { type LoadBalancerSpec, loadBalancerSpec } from '../model/spec.ts';

/**
 * Test helpers for the pure planning tests: a Service `web` in `shop` of type LoadBalancer (one TCP port
 * 80 -> 8080, node port 30080 unless told otherwise), and the load balancer spec the cluster `prod` builds
 * from it.
 */
export function svc(
  options: {
    annotations?: Record<string, string>;
    ports?: ServicePortSpec[];
    spec?: Partial<NonNullable<Service['spec']>>;
    meta?: Partial<Service['metadata']>;
    hostname?: string;
  } = {},
): Service {
  return {
    metadata: { name: 'web', namespace: 'shop', annotations: options.annotations, ...options.meta },
    spec: {
      type: 'LoadBalancer',
      ports: options.ports ?? [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      ...options.spec,
    },
    ...(options.hostname ? { status: { loadBalancer: { ingress: [{ hostname: options.hostname }] } } } : {}),
  };
}

/** The annotations must parse: these helpers test what the spec makes of valid ones. */
function build(service: Service, externalManagedTags: string[]) {
  const { options, problems } = parseAnnotations(service.metadata.annotations);
  expect(problems).toEqual([]);
  return loadBalancerSpec(service, options, { clusterName: 'prod', externalManagedTags, securityGroupRuleLimit: 60 });
}

export function spec(service: Service, externalManagedTags: string[] = []): LoadBalancerSpec {
  const built = build(service, externalManagedTags);
  if (!built.ok) throw new Error(JSON.stringify(built.problems));
  return built.spec;
}

/** What the spec refuses, as `annotation: message` lines; none when it builds. */
export function problems(service: Service, externalManagedTags: string[] = []): string[] {
  const built = build(service, externalManagedTags);
  return built.ok ? [] : built.problems.map((p) => `${p.annotation}: ${p.message}`);
}
