import { describe, expect, it } from 'vitest';
import { targetGroupName } from './names.ts';
import { buildTargetGroup, parseStringMap } from './target-groups.ts';
import { makeIngress, makeParams, makeService, makeSettings, TEST_CLUSTER } from './testing/builders.ts';

const group = { explicit: false, namespace: 'default', name: 'app' } as const;
const input = (overrides: Partial<Parameters<typeof buildTargetGroup>[0]> = {}) => ({
  ingress: makeIngress(),
  group,
  service: makeService(),
  servicePort: 80 as number | string,
  settings: makeSettings(),
  ...overrides,
});
const built = (overrides: Partial<Parameters<typeof buildTargetGroup>[0]> = {}) => {
  const result = buildTargetGroup(input(overrides));
  if ('problems' in result) throw new Error(JSON.stringify(result.problems));
  return result.targetGroup;
};

describe('buildTargetGroup', () => {
  it('builds an instance target group on the node port with the defaults', () => {
    const tg = built();
    expect(tg).toMatchObject({
      resourceId: 'default/app-web:80',
      targetType: 'instance',
      protocol: 'HTTP',
      protocolVersion: 'HTTP1',
      port: 30080,
      ipAddressType: 'ipv4',
      attributes: {},
      tags: {},
      member: 'default/app',
      service: { namespace: 'default', name: 'web', port: { name: 'http', port: 80 } },
    });
    expect(tg.name).toBe(
      targetGroupName({
        clusterName: TEST_CLUSTER,
        group,
        ingress: { namespace: 'default', name: 'app' },
        service: { namespace: 'default', name: 'web', uid: 'uid-service-web' },
        servicePort: 80,
        port: 30080,
        targetType: 'instance',
        protocol: 'HTTP',
        protocolVersion: 'HTTP1',
      }),
    );
  });

  it('names the group by the port as the backend names it', () => {
    expect(built({ servicePort: 'http' }).resourceId).toBe('default/app-web:http');
    expect(built({ servicePort: 'http' }).name).not.toBe(built().name);
  });

  it('uses the numeric target port for ip targets, and 1 for a named one', () => {
    expect(built({ settings: makeSettings({ defaultTargetType: 'ip' }) }).port).toBe(8080);
    const named = makeService({ ports: [{ name: 'http', port: 80, targetPort: 'web' }] });
    expect(built({ service: named, settings: makeSettings({ defaultTargetType: 'ip' }) }).port).toBe(1);
    const unset = makeService({ ports: [{ name: 'http', port: 80 }] });
    expect(built({ service: unset, settings: makeSettings({ defaultTargetType: 'ip' }) }).port).toBe(80);
  });

  it('takes the target type from class params, then the Service, then the Ingress, then the settings', () => {
    const ingress = makeIngress({ annotations: { 'target-type': 'ip' } });
    const service = makeService({ annotations: { 'target-type': 'instance' } });
    const params = makeParams('p', { targetType: 'ip' });
    expect(built({ settings: makeSettings({ defaultTargetType: 'ip' }) }).targetType).toBe('ip');
    expect(built({ ingress }).targetType).toBe('ip');
    expect(built({ ingress, service }).targetType).toBe('instance');
    expect(built({ ingress, service, params }).targetType).toBe('ip');
  });

  it("lets the Service's annotations override the Ingress's", () => {
    const ingress = makeIngress({
      annotations: {
        'backend-protocol': 'HTTPS',
        'backend-protocol-version': 'HTTP2',
        'healthcheck-path': '/ing',
        'target-group-attributes': 'deregistration_delay.timeout_seconds=30',
      },
    });
    const service = makeService({
      annotations: {
        'backend-protocol-version': 'GRPC',
        'target-group-attributes': 'stickiness.enabled=true, stickiness.type=lb_cookie',
      },
    });
    const tg = built({ ingress, service });
    expect(tg).toMatchObject({
      protocol: 'HTTPS',
      protocolVersion: 'GRPC',
      attributes: { 'stickiness.enabled': 'true', 'stickiness.type': 'lb_cookie' },
      healthCheck: { protocol: 'HTTPS', path: '/ing', matcher: { grpcCode: '12' } },
    });
  });

  it("merges tags: the Service's over the Ingress's, class params' over both, the settings' over all", () => {
    const ingress = makeIngress({ annotations: { tags: 'team=ing,env=dev,a=1' } });
    const service = makeService({ annotations: { tags: 'team=svc,b=2' } });
    const params = makeParams('p', {
      tags: [
        { key: 'env', value: 'prod' },
        { key: 'c', value: '3' },
      ],
    });
    const settings = makeSettings({ defaultTags: { c: 'default', owner: 'platform' } });
    expect(built({ ingress, service, params, settings }).tags).toEqual({
      team: 'svc',
      env: 'prod',
      a: '1',
      b: '2',
      c: 'default',
      owner: 'platform',
    });
  });

  it('uses IPv6 targets when the Service has an IPv6 family', () => {
    expect(built({ service: makeService({ ipFamilies: ['IPv4', 'IPv6'] }) }).ipAddressType).toBe('ipv6');
  });

  it.each([
    ['an unknown port', { servicePort: 81 }, 'Service default/web', /port 81 not found/],
    [
      'a port without node port',
      { service: makeService({ ports: [{ name: 'http', port: 80, targetPort: 8080 }] }) },
      'Service default/web',
      /must be NodePort or LoadBalancer/,
    ],
    [
      'a bad target type',
      { ingress: makeIngress({ annotations: { 'target-type': 'lambda' } }) },
      'alb.ingress.kubernetes.io/target-type',
      /instance, ip/,
    ],
    [
      'a bad protocol',
      { service: makeService({ annotations: { 'backend-protocol': 'TCP' } }) },
      'alb.ingress.kubernetes.io/backend-protocol',
      /HTTP, HTTPS/,
    ],
    [
      'a bad protocol version',
      { ingress: makeIngress({ annotations: { 'backend-protocol-version': 'HTTP3' } }) },
      'alb.ingress.kubernetes.io/backend-protocol-version',
      /HTTP1, HTTP2, GRPC/,
    ],
    [
      'bad attributes',
      { ingress: makeIngress({ annotations: { 'target-group-attributes': 'a' } }) },
      'alb.ingress.kubernetes.io/target-group-attributes',
      /key=value/,
    ],
    [
      'bad tags',
      { service: makeService({ annotations: { tags: '=x' } }) },
      'alb.ingress.kubernetes.io/tags',
      /Service default\/web/,
    ],
    [
      'a bad health check',
      { ingress: makeIngress({ annotations: { 'healthy-threshold-count': 'two' } }) },
      'alb.ingress.kubernetes.io/healthy-threshold-count',
      /integer/,
    ],
  ] as const)('refuses %s, naming it', (_, overrides, at, message) => {
    expect(buildTargetGroup(input(overrides))).toEqual({
      problems: [{ at, message: expect.stringMatching(message) }],
    });
  });
});

describe('parseStringMap', () => {
  it('reads key=value pairs as the reference does', () => {
    expect(parseStringMap(' a=1 , b = 2,,c=x=y ')).toEqual({ a: '1', b: '2', c: 'x=y' });
    expect(parseStringMap('a=x\\,y,b=\\=2')).toEqual({ a: 'x,y', b: '=2' });
    expect(parseStringMap('')).toEqual({});
    expect(parseStringMap('a=1,b')).toBeUndefined();
    expect(parseStringMap('=1')).toBeUndefined();
    expect(parseStringMap(' =1')).toBeUndefined();
  });
});
