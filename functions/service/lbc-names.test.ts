import { describe, expect, it } from 'vitest';
import type { Service } from '../../shared/k8s/types.ts';
import { lbcLoadBalancerName, lbcSecurityGroupName, lbcTargetGroupName } from './lbc/names.ts';
import { parseLbcAnnotations } from './lbc/options.ts';
import { loadBalancerSpec } from './model/spec.ts';

/**
 * The reference's names, byte for byte: the expected values are those its own unit tests pin
 * (pkg/service/model_builder_test.go of kubernetes-sigs/aws-load-balancer-controller, cluster `my-cluster`), so a
 * load balancer it made is the one this controller looks for.
 */

const SIMPLE = {
  clusterName: 'my-cluster',
  namespace: 'default',
  name: 'nlb-ip-svc-tls',
  uid: 'bdca2bd0-bfc6-449a-88a3-03451f05f18c',
};
const MULTI = {
  clusterName: 'my-cluster',
  namespace: 'default',
  name: 'nlb-ip-svc',
  uid: '7ab4be33-11c2-4a7b-b655-7add8affab36',
};

describe('the reference names', () => {
  it.each([
    [SIMPLE, 'internal', 'k8s-default-nlbipsvc-6b0ba8ff70'],
    [SIMPLE, 'internet-facing', 'k8s-default-nlbipsvc-4d831c6ca6'],
    [MULTI, 'internal', 'k8s-default-nlbipsvc-518cdfc227'],
    [MULTI, 'internet-facing', 'k8s-default-nlbipsvc-33e41aa671'],
  ] as const)('load balancer of %o, %s: %s', (id, scheme, name) => {
    expect(lbcLoadBalancerName(id, scheme)).toBe(name);
  });

  it.each([
    [SIMPLE, { port: 80, servicePort: 80, healthCheckProtocol: 'TCP' }, 'k8s-default-nlbipsvc-d4818dcd51'],
    [MULTI, { port: 80, servicePort: 80, healthCheckProtocol: 'HTTP' }, 'k8s-default-nlbipsvc-62f81639fc'],
    [MULTI, { port: 80, servicePort: 83, healthCheckProtocol: 'HTTP' }, 'k8s-default-nlbipsvc-3ede6b28b6'],
    [MULTI, { port: 8883, servicePort: 83, healthCheckProtocol: 'HTTP' }, 'k8s-default-nlbipsvc-77ea0c7734'],
  ] as const)('target group of %o, %o: %s', (id, group, name) => {
    expect(
      lbcTargetGroupName(id, { ...group, targetType: 'ip', protocol: 'TCP', healthCheckIntervalSeconds: 10 }),
    ).toBe(name);
  });

  it('keeps letters and digits only, 8 of each part, and hashes the managed group over cluster, name, namespace, uid', () => {
    const id = { clusterName: 'c', namespace: 'team-payments', name: 'api.gateway-v2', uid: 'u' };
    expect(lbcSecurityGroupName(id)).toMatch(/^k8s-teampaym-apigatew-[0-9a-f]{10}$/);
    expect(lbcSecurityGroupName(id)).not.toBe(lbcSecurityGroupName({ ...id, uid: 'v' }));
    expect(lbcSecurityGroupName(id)).not.toBe(lbcLoadBalancerName(id, 'internal'));
  });
});

describe('a Service built the reference way', () => {
  const service = (annotations: Record<string, string>, ports: NonNullable<Service['spec']>['ports']): Service => ({
    metadata: { name: MULTI.name, namespace: 'default', uid: MULTI.uid, annotations },
    spec: { type: 'LoadBalancer', ports },
  });

  it('gives the reference test case its names: load balancer, one target group per port', () => {
    const svc = service(
      {
        'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb-ip',
        'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internal',
        'service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol': 'HTTP',
        'service.beta.kubernetes.io/aws-load-balancer-healthcheck-port': '8888',
        'service.beta.kubernetes.io/aws-load-balancer-healthcheck-path': '/healthz',
        'service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval': '10',
        'service.beta.kubernetes.io/aws-load-balancer-healthcheck-timeout': '30',
        'service.beta.kubernetes.io/aws-load-balancer-healthcheck-healthy-threshold': '2',
        'service.beta.kubernetes.io/aws-load-balancer-healthcheck-unhealthy-threshold': '2',
      },
      [
        { name: 'http', port: 80, targetPort: 80, protocol: 'TCP' },
        { name: 'alt2', port: 83, targetPort: 80, protocol: 'TCP' },
      ],
    );
    const { options, problems } = parseLbcAnnotations(svc);
    expect(problems).toEqual([]);
    const built = loadBalancerSpec(svc, options, { clusterName: 'my-cluster' });
    if (!built.ok) throw new Error(JSON.stringify(built.problems));
    expect(built.spec.loadBalancerName).toBe('k8s-default-nlbipsvc-518cdfc227');
    expect(built.spec.scheme).toBe('internal');
    expect(built.spec.targetGroups.map((g) => [g.name, g.port, g.targetType])).toEqual([
      ['k8s-default-nlbipsvc-62f81639fc', 80, 'ip'],
      ['k8s-default-nlbipsvc-3ede6b28b6', 80, 'ip'],
    ]);
  });

  it('a named target port is the group port 1, as the reference writes and hashes it', () => {
    const svc = service({ 'service.beta.kubernetes.io/aws-load-balancer-type': 'nlb-ip' }, [
      { name: 'http', port: 80, targetPort: 'web', protocol: 'TCP' },
    ]);
    const built = loadBalancerSpec(svc, parseLbcAnnotations(svc).options, { clusterName: 'my-cluster' });
    if (!built.ok) throw new Error('not built');
    const [group] = built.spec.targetGroups;
    expect(group!.port).toBe(1);
    expect(group!.name).toBe(
      lbcTargetGroupName(MULTI, {
        port: 1,
        servicePort: 80,
        targetType: 'ip',
        protocol: 'TCP',
        healthCheckProtocol: 'TCP',
        healthCheckIntervalSeconds: 10,
      }),
    );
  });
});
