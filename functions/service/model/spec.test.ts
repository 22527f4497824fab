import { describe, expect, it } from 'vitest';
import { DEFAULT_HEALTH_CHECK } from '../../../shared/load-balancers/health-check.ts';
import { managedIngressRules } from '../../../shared/load-balancers/security-rules.ts';
import { ANNOTATION } from '../annotations.ts';
import { problems, spec, svc } from '../testing/model.ts';

describe('loadBalancerSpec', () => {
  it('one listener and target group per port; tags; the managed group opens the listener ports', () => {
    const s = spec(svc({ annotations: { [ANNOTATION.additionalResourceTags]: 'team=web' } }));
    expect(s).toMatchObject({
      serviceKey: 'shop/web',
      scheme: 'internet-facing',
      targetType: 'instance',
      listeners: [{ port: 80, protocol: 'TCP', targetGroupName: s.targetGroups[0]!.name }],
      targetGroups: [
        { listenerPort: 80, protocol: 'TCP', port: 30080, targetType: 'instance', healthCheck: DEFAULT_HEALTH_CHECK },
      ],
      tags: { team: 'web', 'kubernetes.io/cluster/prod': 'owned', 'kubernetes.io/service-name': 'shop/web' },
      managedIngress: [
        { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' },
        { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: '0.0.0.0/0' },
      ],
    });
    expect(s.securityGroupName).toBe(`k8s-elb-${s.loadBalancerName}`);
  });

  it.each([
    [
      'Cluster policy',
      {},
      {},
      {
        protocol: 'TCP',
        port: 'traffic-port',
        intervalSeconds: 30,
        timeoutSeconds: 10,
        healthyThreshold: 3,
        unhealthyThreshold: 3,
      },
    ],
    [
      'Local policy',
      { externalTrafficPolicy: 'Local' as const, healthCheckNodePort: 31999 },
      {},
      {
        protocol: 'HTTP',
        port: '31999',
        path: '/healthz',
        intervalSeconds: 10,
        timeoutSeconds: 6,
        healthyThreshold: 2,
        unhealthyThreshold: 2,
      },
    ],
    [
      'Local policy with IP targets: TCP on the Pod port',
      { externalTrafficPolicy: 'Local' as const, healthCheckNodePort: 31999 },
      { [ANNOTATION.nlbTargetType]: 'ip' },
      { protocol: 'TCP', port: 'traffic-port' },
    ],
    [
      'annotations override the defaults',
      { externalTrafficPolicy: 'Local' as const, healthCheckNodePort: 31999 },
      { [ANNOTATION.healthcheckPath]: '/ready', [ANNOTATION.healthcheckHealthyThreshold]: '5' },
      { protocol: 'HTTP', port: '31999', path: '/ready', healthyThreshold: 5, unhealthyThreshold: 2 },
    ],
    [
      'HTTPS gets a path and the HTTPS timeout',
      {},
      { [ANNOTATION.healthcheckProtocol]: 'HTTPS', [ANNOTATION.healthcheckPort]: '8443' },
      { protocol: 'HTTPS', port: '8443', path: '/', timeoutSeconds: 10 },
    ],
  ])('health check: %s', (_, extra, annotations, expected) => {
    expect(spec(svc({ spec: extra, annotations })).targetGroups[0]!.healthCheck).toMatchObject(expected);
  });

  it('TLS where ssl-ports say, TCP_UDP where TCP and UDP share a port, UDP on its own', () => {
    const s = spec(
      svc({
        annotations: { [ANNOTATION.sslCert]: 'arn:aws:acm:eu-west-1:1:certificate/c', [ANNOTATION.sslPorts]: 'https' },
        ports: [
          { name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 },
          { name: 'dns-u', protocol: 'UDP', port: 53, nodePort: 30053 },
          { name: 'dns-t', protocol: 'TCP', port: 53, nodePort: 30053 },
          { name: 'syslog', protocol: 'UDP', port: 514, nodePort: 30514 },
        ],
      }),
    );
    expect(s.listeners.map((l) => `${l.port}/${l.protocol}`)).toEqual(['53/TCP_UDP', '443/TLS', '514/UDP']);
    expect(s.listeners[1]).toMatchObject({ certificateArn: 'arn:aws:acm:eu-west-1:1:certificate/c' });
    expect(s.targetGroups.map((g) => g.protocol)).toEqual(['TCP_UDP', 'TCP', 'UDP']);
  });

  it('IP targets: the target group port is the numeric target port', () => {
    const s = spec(
      svc({
        annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
        ports: [
          { name: 'a', port: 80, targetPort: 8080 },
          { name: 'b', port: 81, targetPort: 'named' },
          { name: 'c', port: 82 },
        ],
      }),
    );
    expect(s.targetGroups.map((g) => g.port)).toEqual([8080, 81, 82]);
  });

  it.each([
    ['no ports', svc({ ports: [] }), /spec.ports: a load balancer needs at least one port/],
    [
      'SCTP',
      svc({ ports: [{ port: 80, protocol: 'SCTP', nodePort: 30080 }] }),
      /spec.ports\[0\]: SCTP is not supported/,
    ],
    ['no node port', svc({ ports: [{ port: 80 }] }), /has no nodePort: instance targets need node ports/],
    [
      'TCP_UDP with two node ports',
      svc({
        ports: [
          { port: 53, protocol: 'TCP', nodePort: 1 },
          { port: 53, protocol: 'UDP', nodePort: 2 },
        ],
      }),
      /same nodePort/,
    ],
    [
      'Local without a health check node port',
      svc({ spec: { externalTrafficPolicy: 'Local' } }),
      /spec.healthCheckNodePort/,
    ],
    [
      'an ssl-port the Service lacks',
      svc({ annotations: { [ANNOTATION.sslCert]: 'arn:aws:acm:x:1:certificate/c', [ANNOTATION.sslPorts]: '8443' } }),
      /ssl-ports: "8443" is not a port of the Service/,
    ],
    [
      'TLS on a UDP port',
      svc({
        annotations: { [ANNOTATION.sslCert]: 'arn:aws:acm:x:1:certificate/c', [ANNOTATION.sslPorts]: '53' },
        ports: [{ port: 53, protocol: 'UDP', nodePort: 1 }],
      }),
      /port 53 is UDP and cannot be TLS/,
    ],
    [
      'proxy protocol on UDP',
      svc({ annotations: { [ANNOTATION.proxyProtocol]: '*' }, ports: [{ port: 53, protocol: 'UDP', nodePort: 1 }] }),
      /proxy protocol is not available on UDP/,
    ],
    [
      'a bad source range',
      svc({ spec: { loadBalancerSourceRanges: ['10.0.0.0/33'] } }),
      /spec.loadBalancerSourceRanges/,
    ],
    [
      'more rules than a security group holds',
      svc({ spec: { loadBalancerSourceRanges: Array.from({ length: 31 }, (_, i) => `10.${i}.0.0/16`) } }),
      /31 source ranges for 1 listeners need 62 security group rules; a group holds 60/,
    ],
  ])('refuses %s', (_, service, pattern) => {
    expect(problems(service).join('\n')).toMatch(pattern);
  });

  it('the annotation source ranges are used when the spec has none, the spec wins otherwise', () => {
    const annotated = { [ANNOTATION.sourceRanges]: '192.0.2.0/24' };
    expect(spec(svc({ annotations: annotated })).managedIngress[0]).toMatchObject({ cidrIpv4: '192.0.2.0/24' });
    expect(
      spec(svc({ annotations: annotated, spec: { loadBalancerSourceRanges: ['198.51.100.0/24'] } })).managedIngress[0],
    ).toMatchObject({ cidrIpv4: '198.51.100.0/24' });
  });

  it('no managed rules when the user gives the security groups', () => {
    expect(spec(svc({ annotations: { [ANNOTATION.securityGroups]: 'sg-1' } })).managedIngress).toEqual([]);
  });

  it('managed rules: IPv6 ranges get ICMPv6 packet-too-big instead of ICMP(v4); TCP_UDP opens both', () => {
    const listener = {
      port: 53,
      protocol: 'TCP_UDP' as const,
      targetGroupName: 'x',
      extraCertificateArns: [],
      attributes: {},
    };
    expect(managedIngressRules([listener], ['::/0'])).toEqual([
      { protocol: 'tcp', fromPort: 53, toPort: 53, cidrIpv6: '::/0' },
      { protocol: 'udp', fromPort: 53, toPort: 53, cidrIpv6: '::/0' },
      { protocol: 'icmpv6', fromPort: 2, toPort: 0, cidrIpv6: '::/0' },
    ]);
  });
});
