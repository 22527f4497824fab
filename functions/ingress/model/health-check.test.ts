import { describe, expect, it } from 'vitest';
import { buildHealthCheck, findServicePort, parseIntAnnotation } from './health-check.ts';
import { ANN, makeService } from './testing/builders.ts';

const service = makeService({
  ports: [
    { name: 'http', port: 80, targetPort: 8080, nodePort: 30080 },
    { name: 'admin', port: 9000, targetPort: 'admin-port', nodePort: 30900 },
    { name: 'metrics', port: 9100 },
  ],
});
const base = { service, targetType: 'instance', protocol: 'HTTP', protocolVersion: 'HTTP1' } as const;

describe('buildHealthCheck', () => {
  it("uses the reference's defaults", () => {
    expect(buildHealthCheck({ ...base, annotations: {} })).toEqual({
      healthCheck: {
        protocol: 'HTTP',
        port: 'traffic-port',
        path: '/',
        matcher: { httpCode: '200' },
        intervalSeconds: 15,
        timeoutSeconds: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 2,
      },
    });
  });

  it('checks gRPC groups on /AWS.ALB/healthcheck for gRPC code 12, over the group protocol', () => {
    expect(buildHealthCheck({ ...base, protocol: 'HTTPS', protocolVersion: 'GRPC', annotations: {} })).toMatchObject({
      healthCheck: { protocol: 'HTTPS', path: '/AWS.ALB/healthcheck', matcher: { grpcCode: '12' } },
    });
  });

  it('reads every annotation', () => {
    const annotations = {
      [`${ANN}healthcheck-port`]: '8081',
      [`${ANN}healthcheck-protocol`]: 'HTTPS',
      [`${ANN}healthcheck-path`]: '/healthz',
      [`${ANN}healthcheck-interval-seconds`]: '30',
      [`${ANN}healthcheck-timeout-seconds`]: '10',
      [`${ANN}healthy-threshold-count`]: '3',
      [`${ANN}unhealthy-threshold-count`]: '4',
      [`${ANN}success-codes`]: '200-299',
    };
    expect(buildHealthCheck({ ...base, annotations })).toEqual({
      healthCheck: {
        protocol: 'HTTPS',
        port: '8081',
        path: '/healthz',
        matcher: { httpCode: '200-299' },
        intervalSeconds: 30,
        timeoutSeconds: 10,
        healthyThreshold: 3,
        unhealthyThreshold: 4,
      },
    });
  });

  it('resolves a named port to the node port (instance) or the numeric target port (ip)', () => {
    const annotations = { [`${ANN}healthcheck-port`]: 'http' };
    expect(buildHealthCheck({ ...base, annotations })).toMatchObject({ healthCheck: { port: '30080' } });
    expect(buildHealthCheck({ ...base, targetType: 'ip', annotations })).toMatchObject({
      healthCheck: { port: '8080' },
    });
  });

  it.each([
    [
      'an unknown port name',
      { [`${ANN}healthcheck-port`]: 'nope' },
      'instance',
      /port nope not found on Service default\/web/,
    ],
    ['a named target port with ip targets', { [`${ANN}healthcheck-port`]: 'admin' }, 'ip', /named/],
    ['a port without node port', { [`${ANN}healthcheck-port`]: 'metrics' }, 'instance', /no node port/],
    ['a protocol other than HTTP(S)', { [`${ANN}healthcheck-protocol`]: 'TCP' }, 'instance', /HTTP or HTTPS/],
    [
      'an interval that is not an integer',
      { [`${ANN}healthcheck-interval-seconds`]: '15s' },
      'instance',
      /not an integer/,
    ],
  ] as const)('refuses %s, naming the annotation', (_, annotations, targetType, message) => {
    const result = buildHealthCheck({ ...base, targetType, annotations });
    expect(result).toEqual({
      problems: [{ at: Object.keys(annotations)[0], message: expect.stringMatching(message) }],
    });
  });
});

describe('helpers', () => {
  it('finds a Service port by number or name', () => {
    expect(findServicePort(service, 80)?.name).toBe('http');
    expect(findServicePort(service, 'admin')?.port).toBe(9000);
    expect(findServicePort(service, 81)).toBeUndefined();
    expect(findServicePort(service, '80')).toBeUndefined();
  });

  it('reads integers as Go does', () => {
    expect(parseIntAnnotation('42')).toBe(42);
    expect(parseIntAnnotation('-1')).toBe(-1);
    expect(parseIntAnnotation(' 42')).toBeUndefined();
    expect(parseIntAnnotation('4.2')).toBeUndefined();
  });
});
