import { describe, expect, it } from 'vitest';
import type { ClassicListener } from '../../../shared/aws/elb-port.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { ANNOTATION, parseAnnotations } from '../annotations.ts';
import { problems, svc } from '../testing/model.ts';
import { classicSpec, listenerProblems, PROXY_PROTOCOL_POLICY } from './model.ts';

const CERT = 'arn:aws:acm:eu-west-1:111122223333:certificate/web';

function build(service: Service) {
  const { options, problems: parseProblems } = parseAnnotations(service.metadata.annotations);
  expect(parseProblems).toEqual([]);
  return classicSpec(service, options, { clusterName: 'prod', loadBalancerName: 'a0123' });
}
function spec(service: Service) {
  const built = build(service);
  if (!built.ok) throw new Error(JSON.stringify(built.problems));
  return built.spec;
}
const refused = (service: Service) => {
  const built = build(service);
  return built.ok ? [] : built.problems.map((p) => `${p.annotation}: ${p.message}`);
};
const listener = (l: Partial<ClassicListener>): ClassicListener => ({
  loadBalancerPort: 80,
  protocol: 'TCP',
  instancePort: 30080,
  instanceProtocol: 'TCP',
  ...l,
});

describe('Classic ELB listeners, as the reference builds them', () => {
  it.each([
    ['no certificate, no backend protocol', {}, listener({})],
    [
      'no certificate, backend http',
      { [ANNOTATION.backendProtocol]: 'http' },
      listener({ protocol: 'HTTP', instanceProtocol: 'HTTP' }),
    ],
    // An SSL or HTTPS front end needs a certificate: ssl and https change nothing on a port without one.
    ['no certificate, backend ssl: TCP to TCP', { [ANNOTATION.backendProtocol]: 'ssl' }, listener({})],
    ['no certificate, backend https: TCP to TCP', { [ANNOTATION.backendProtocol]: 'https' }, listener({})],
    [
      'certificate on another port only, backend https: TCP to TCP here',
      { [ANNOTATION.sslCert]: CERT, [ANNOTATION.sslPorts]: '443', [ANNOTATION.backendProtocol]: 'https' },
      listener({}),
    ],
    [
      'certificate, no backend protocol: SSL to TCP',
      { [ANNOTATION.sslCert]: CERT },
      listener({ protocol: 'SSL', sslCertificateId: CERT }),
    ],
    [
      'certificate, backend http: HTTPS to HTTP',
      { [ANNOTATION.sslCert]: CERT, [ANNOTATION.backendProtocol]: 'http' },
      listener({ protocol: 'HTTPS', instanceProtocol: 'HTTP', sslCertificateId: CERT }),
    ],
    [
      'certificate, backend https: HTTPS to HTTPS',
      { [ANNOTATION.sslCert]: CERT, [ANNOTATION.backendProtocol]: 'https' },
      listener({ protocol: 'HTTPS', instanceProtocol: 'HTTPS', sslCertificateId: CERT }),
    ],
    [
      'certificate, backend ssl: SSL to SSL',
      { [ANNOTATION.sslCert]: CERT, [ANNOTATION.backendProtocol]: 'ssl' },
      listener({ protocol: 'SSL', instanceProtocol: 'SSL', sslCertificateId: CERT }),
    ],
    [
      'certificate on another port only: plain TCP here',
      { [ANNOTATION.sslCert]: CERT, [ANNOTATION.sslPorts]: '443' },
      listener({}),
    ],
  ])('%s', (_, annotations, expected) => {
    expect(spec(svc({ annotations })).listeners).toEqual([expected]);
  });

  it('what AWS refuses in a listener is found before anything is written', () => {
    expect(listenerProblems(listener({ protocol: 'SSL', instanceProtocol: 'SSL' }))).toEqual([
      `port 80: a SSL listener needs a certificate (${ANNOTATION.sslCert})`,
    ]);
    expect(listenerProblems(listener({ protocol: 'HTTPS', instanceProtocol: 'TCP', sslCertificateId: CERT }))).toEqual([
      `port 80: a HTTPS front end cannot forward to a TCP back end (${ANNOTATION.backendProtocol})`,
    ]);
    expect(listenerProblems(listener({ protocol: 'SSL', sslCertificateId: CERT }))).toEqual([]);
  });

  it('only TCP ports with a node port; anything else is named', () => {
    expect(
      refused(
        svc({
          ports: [
            { name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 },
            { name: 'web', protocol: 'TCP', port: 80 },
          ],
        }),
      ),
    ).toEqual([
      'spec.ports[0]: UDP is not supported by Classic ELBs (TCP only)',
      'spec.ports[1]: has no nodePort, which a Classic ELB forwards to',
    ]);
  });

  it('annotations only a Network Load Balancer has are refused by name', () => {
    expect(
      refused(svc({ annotations: { [ANNOTATION.nlbTargetType]: 'ip', [ANNOTATION.ipAddressType]: 'dualstack' } })),
    ).toEqual([
      `${ANNOTATION.nlbTargetType}: applies to Network Load Balancers, not Classic ELBs`,
      `${ANNOTATION.ipAddressType}: applies to Network Load Balancers, not Classic ELBs`,
    ]);
    // And the other way round: what only a Classic ELB takes is refused for an NLB.
    expect(problems(svc({ annotations: { [ANNOTATION.backendProtocol]: 'http' } }))[0]).toContain(
      'is for Classic ELBs; a Network Load Balancer takes "tcp" or "ssl"',
    );
    expect(problems(svc({ annotations: { [ANNOTATION.connectionIdleTimeout]: '30' } }))[0]).toContain('below the 60 s');
    expect(refused(svc({ annotations: { [ANNOTATION.connectionIdleTimeout]: '30' } }))).toEqual([]);
  });
});

describe('Classic ELB health check, attributes, policies, rules', () => {
  it('reference defaults: TCP on the first node port, healthy 2, unhealthy 6, timeout 5, interval 10', () => {
    expect(spec(svc()).healthCheck).toEqual({
      target: 'TCP:30080',
      intervalSeconds: 10,
      timeoutSeconds: 5,
      healthyThreshold: 2,
      unhealthyThreshold: 6,
    });
  });

  it('externalTrafficPolicy Local: HTTP on the health check node port, /healthz', () => {
    const service = svc({ spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 32100 } });
    expect(spec(service).healthCheck.target).toBe('HTTP:32100/healthz');
  });

  it('the healthcheck annotations override each part; an SSL back end is checked with SSL', () => {
    const annotated = svc({
      annotations: {
        [ANNOTATION.healthcheckProtocol]: 'HTTP',
        [ANNOTATION.healthcheckPort]: '8081',
        [ANNOTATION.healthcheckPath]: '/ready',
        [ANNOTATION.healthcheckInterval]: '30',
        [ANNOTATION.healthcheckHealthyThreshold]: '3',
      },
    });
    expect(spec(annotated).healthCheck).toEqual({
      target: 'HTTP:8081/ready',
      intervalSeconds: 30,
      timeoutSeconds: 5,
      healthyThreshold: 3,
      unhealthyThreshold: 6,
    });
    const ssl = svc({ annotations: { [ANNOTATION.sslCert]: CERT, [ANNOTATION.backendProtocol]: 'ssl' } });
    expect(spec(ssl).healthCheck.target).toBe('SSL:30080');
    // As the reference checks it: by the backend protocol, also where the port has no certificate (TCP listener).
    expect(spec(svc({ annotations: { [ANNOTATION.backendProtocol]: 'https' } })).healthCheck.target).toBe('SSL:30080');
    expect(spec(svc({ annotations: { [ANNOTATION.backendProtocol]: 'http' } })).healthCheck.target).toBe('TCP:30080');
  });

  it('attributes: AWS defaults unless annotated (cross-zone off, idle 60, draining off, access log off)', () => {
    expect(spec(svc()).attributes).toEqual({
      crossZone: false,
      idleTimeoutSeconds: 60,
      connectionDraining: { enabled: false, timeoutSeconds: 300 },
      accessLog: { enabled: false },
    });
    const annotated = svc({
      annotations: {
        [ANNOTATION.crossZone]: 'true',
        [ANNOTATION.connectionIdleTimeout]: '30',
        [ANNOTATION.connectionDrainingEnabled]: 'true',
        [ANNOTATION.connectionDrainingTimeout]: '45',
        [ANNOTATION.accessLogEnabled]: 'true',
        [ANNOTATION.accessLogBucket]: 'logs',
        [ANNOTATION.accessLogPrefix]: 'web',
        [ANNOTATION.accessLogEmitInterval]: '5',
      },
    });
    expect(spec(annotated).attributes).toEqual({
      crossZone: true,
      idleTimeoutSeconds: 30,
      connectionDraining: { enabled: true, timeoutSeconds: 45 },
      accessLog: { enabled: true, s3BucketName: 'logs', s3BucketPrefix: 'web', emitIntervalMinutes: 5 },
    });
  });

  it('proxy protocol and SSL negotiation policies by the reference names', () => {
    const service = svc({
      annotations: {
        [ANNOTATION.proxyProtocol]: '*',
        [ANNOTATION.sslCert]: CERT,
        [ANNOTATION.sslNegotiationPolicy]: 'ELBSecurityPolicy-TLS-1-2-2017-01',
      },
    });
    expect(spec(service).policies).toEqual({
      proxyProtocol: {
        policyName: PROXY_PROTOCOL_POLICY,
        policyTypeName: 'ProxyProtocolPolicyType',
        attributes: { ProxyProtocol: 'true' },
      },
      sslNegotiation: {
        policyName: 'k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01',
        policyTypeName: 'SSLNegotiationPolicyType',
        attributes: { 'Reference-Security-Policy': 'ELBSecurityPolicy-TLS-1-2-2017-01' },
      },
    });
  });

  it('the managed group: listener ports from the source ranges and ICMP 3/4; the tags own it', () => {
    const built = spec(svc({ spec: { loadBalancerSourceRanges: ['203.0.113.0/24'] } }));
    expect(built.securityGroupName).toBe('k8s-elb-a0123');
    expect(built.managedIngress).toEqual([
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '203.0.113.0/24' },
      { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: '203.0.113.0/24' },
    ]);
    expect(built.tags).toEqual({ 'kubernetes.io/cluster/prod': 'owned', 'kubernetes.io/service-name': 'shop/web' });
  });
});
