import { describe, expect, it } from 'vitest';
import { ANNOTATION, describeProblems, ownedByService, parseAnnotations } from './annotations.ts';

describe('parseAnnotations', () => {
  it('defaults: internet-facing, instance targets, tcp backend, proxy protocol off', () => {
    expect(parseAnnotations({})).toEqual({
      options: {
        scheme: 'internet-facing',
        targetType: 'instance',
        ipAddressType: 'ipv4',
        backendProtocol: 'tcp',
        proxyProtocol: false,
        healthCheck: {},
        classicAttributes: {},
        targetGroupAttributes: { 'proxy_protocol_v2.enabled': 'false' },
        attributes: {},
        additionalTags: {},
      },
      problems: [],
    });
  });

  it('reads every annotation it knows', () => {
    const { options, problems } = parseAnnotations({
      [ANNOTATION.type]: 'nlb',
      [ANNOTATION.scheme]: 'internet-facing',
      [ANNOTATION.name]: 'my-web',
      [ANNOTATION.subnets]: 'subnet-0a, public-b',
      [ANNOTATION.eipAllocations]: 'eipalloc-0a,eipalloc-0b',
      [ANNOTATION.nlbTargetType]: 'ip',
      [ANNOTATION.sslCert]:
        'arn:aws:acm:eu-west-1:111122223333:certificate/x, arn:aws:acm:eu-west-1:111122223333:certificate/y',
      [ANNOTATION.sslPorts]: '443, https',
      [ANNOTATION.sslNegotiationPolicy]: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      [ANNOTATION.alpnPolicy]: 'HTTP2Preferred',
      [ANNOTATION.ipAddressType]: 'dualstack',
      [ANNOTATION.connectionIdleTimeout]: '900',
      [ANNOTATION.backendProtocol]: 'SSL',
      [ANNOTATION.proxyProtocol]: '*',
      [ANNOTATION.healthcheckProtocol]: 'http',
      [ANNOTATION.healthcheckPort]: '8081',
      [ANNOTATION.healthcheckPath]: '/ready',
      [ANNOTATION.healthcheckInterval]: '10',
      [ANNOTATION.healthcheckTimeout]: '5',
      [ANNOTATION.healthcheckHealthyThreshold]: '2',
      [ANNOTATION.healthcheckUnhealthyThreshold]: '4',
      [ANNOTATION.targetGroupAttributes]: 'preserve_client_ip.enabled=true, stickiness.enabled=true',
      [ANNOTATION.attributes]: 'deletion_protection.enabled=true',
      [ANNOTATION.crossZone]: 'True',
      [ANNOTATION.accessLogEnabled]: 'true',
      [ANNOTATION.accessLogBucket]: 'logs-bucket',
      [ANNOTATION.accessLogPrefix]: 'web',
      [ANNOTATION.additionalResourceTags]: 'team=web, env=prod',
      [ANNOTATION.extraSecurityGroups]: 'sg-0123abcd,extra',
      [ANNOTATION.targetNodeLabels]: 'pool=web,gpu',
      [ANNOTATION.connectionDrainingEnabled]: 'true',
      [ANNOTATION.connectionDrainingTimeout]: '30',
      [ANNOTATION.sourceRanges]: '203.0.113.0/24, 2001:db8::/32',
    });
    expect(problems).toEqual([]);
    expect(options).toEqual({
      type: 'nlb',
      scheme: 'internet-facing',
      name: 'my-web',
      subnets: ['subnet-0a', 'public-b'],
      eipAllocations: ['eipalloc-0a', 'eipalloc-0b'],
      targetType: 'ip',
      ipAddressType: 'dualstack',
      sslCertificates: [
        'arn:aws:acm:eu-west-1:111122223333:certificate/x',
        'arn:aws:acm:eu-west-1:111122223333:certificate/y',
      ],
      sslPorts: ['443', 'https'],
      sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      alpnPolicy: 'HTTP2Preferred',
      idleTimeoutSeconds: 900,
      backendProtocol: 'ssl',
      proxyProtocol: true,
      healthCheck: {
        protocol: 'HTTP',
        port: 8081,
        path: '/ready',
        intervalSeconds: 10,
        timeoutSeconds: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 4,
      },
      classicAttributes: {
        crossZone: true,
        accessLogEnabled: true,
        accessLogBucket: 'logs-bucket',
        accessLogPrefix: 'web',
        connectionDrainingEnabled: true,
        connectionDrainingTimeoutSeconds: 30,
      },
      targetGroupAttributes: {
        'preserve_client_ip.enabled': 'true',
        'stickiness.enabled': 'true',
        'proxy_protocol_v2.enabled': 'true',
        'deregistration_delay.timeout_seconds': '30',
      },
      attributes: {
        'deletion_protection.enabled': 'true',
        'load_balancing.cross_zone.enabled': 'true',
        'access_logs.s3.enabled': 'true',
        'access_logs.s3.bucket': 'logs-bucket',
        'access_logs.s3.prefix': 'web',
      },
      additionalTags: { team: 'web', env: 'prod' },
      extraSecurityGroups: ['sg-0123abcd', 'extra'],
      targetNodeLabels: { pool: 'web', gpu: undefined },
      sourceRanges: ['203.0.113.0/24', '2001:db8::/32'],
    });
  });

  it.each([
    ['true', 'internal'],
    ['false', 'internet-facing'],
    ['0.0.0.0/0', 'internal'],
  ])('internal: %s -> %s', (value, scheme) => {
    expect(parseAnnotations({ [ANNOTATION.internal]: value }).options.scheme).toBe(scheme);
  });

  it('ssl-ports defaults to every port once a certificate is set', () => {
    expect(parseAnnotations({ [ANNOTATION.sslCert]: 'arn:aws:acm:eu-west-1:1:certificate/x' }).options.sslPorts).toBe(
      '*',
    );
  });

  it('connection draining off means no deregistration delay', () => {
    expect(
      parseAnnotations({ [ANNOTATION.connectionDrainingEnabled]: 'false' }).options.targetGroupAttributes[
        'deregistration_delay.timeout_seconds'
      ],
    ).toBe('0');
  });

  it.each([
    ['nlb', 'nlb'],
    [' NLB ', 'nlb'],
    ['external', 'external'],
    ['nlb-ip', 'nlb-ip'],
    ['alb', 'classic'],
    ['clb', 'classic'],
  ])('type %j means %s, as in the reference (anything else is a Classic ELB)', (value, type) => {
    const { options, problems } = parseAnnotations({ [ANNOTATION.type]: value });
    expect(problems).toEqual([]);
    expect(options.type).toBe(type);
  });

  it.each([
    [ANNOTATION.internal, 'yes', 'must be "true" or "false"'],
    [ANNOTATION.scheme, 'public', 'must be "internal" or "internet-facing"'],
    [ANNOTATION.name, 'internal-web', 'must be 1-32 letters'],
    [ANNOTATION.name, 'a'.repeat(33), 'must be 1-32 letters'],
    [ANNOTATION.subnets, ' , ', 'must list at least one value'],
    [ANNOTATION.eipAllocations, 'eip-1', 'eipalloc-0123abcd'],
    [ANNOTATION.privateIpv4Addresses, '10.0.0.300', 'IPv4 address'],
    [ANNOTATION.nlbTargetType, 'pod', 'must be "instance" or "ip"'],
    [ANNOTATION.sslCert, 'my-cert', 'ACM or IAM ARN'],
    [ANNOTATION.backendProtocol, 'udp', 'must be tcp, ssl, http or https'],
    [ANNOTATION.proxyProtocol, 'v2', 'must be "*"'],
    [ANNOTATION.healthcheckProtocol, 'udp', 'TCP, HTTP or HTTPS'],
    [ANNOTATION.healthcheckPort, '70000', '"traffic-port" or a port number'],
    [ANNOTATION.healthcheckPath, 'healthz', 'beginning with "/"'],
    [ANNOTATION.healthcheckInterval, '3', 'from 5 to 300'],
    [ANNOTATION.healthcheckTimeout, '1.5', 'from 2 to 120'],
    [ANNOTATION.healthcheckHealthyThreshold, '11', 'from 2 to 10'],
    [ANNOTATION.healthcheckUnhealthyThreshold, 'x', 'from 2 to 10'],
    [ANNOTATION.targetGroupAttributes, 'a', 'is not key=value'],
    [ANNOTATION.attributes, 'a=1,a=2', 'given twice'],
    [ANNOTATION.crossZone, 'yes', 'must be "true" or "false"'],
    [ANNOTATION.accessLogBucket, 'Bad_Bucket', 'S3 bucket name'],
    [ANNOTATION.additionalResourceTags, '=x', 'is not key=value'],
    [ANNOTATION.connectionDrainingTimeout, '4000', 'from 0 to 3600'],
    [ANNOTATION.connectionIdleTimeout, '0', 'from 1 to 6000'],
    [ANNOTATION.connectionIdleTimeout, '7000', 'from 1 to 6000'],
    [ANNOTATION.ipAddressType, 'ipv6', 'must be "ipv4" or "dualstack"'],
    [ANNOTATION.sourceRanges, '10.0.0.1/8', 'host bits set'],
  ])('%s: %j is refused, naming the annotation', (annotation, value, message) => {
    const { problems } = parseAnnotations({ [annotation]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]!.annotation).toBe(annotation);
    expect(problems[0]!.message).toContain(`"${value}"`);
    expect(problems[0]!.message).toContain(message);
  });

  it.each([
    [{ [ANNOTATION.internal]: 'true', [ANNOTATION.scheme]: 'internet-facing' }, ANNOTATION.scheme, /contradicts/],
    [
      { [ANNOTATION.internal]: 'true', [ANNOTATION.eipAllocations]: 'eipalloc-1' },
      ANNOTATION.eipAllocations,
      /internet-facing/,
    ],
    [{ [ANNOTATION.privateIpv4Addresses]: '10.0.1.5' }, ANNOTATION.privateIpv4Addresses, /internal load balancer/],
    [{ [ANNOTATION.alpnPolicy]: 'HTTP2Only' }, ANNOTATION.alpnPolicy, /needs .*ssl-cert/],
    [
      { [ANNOTATION.sslCert]: 'arn:aws:acm:eu-west-1:1:certificate/a,arn:aws:acm:eu-west-1:1:certificate/a' },
      ANNOTATION.sslCert,
      /twice/,
    ],
    [{ [ANNOTATION.sslNegotiationPolicy]: 'x' }, ANNOTATION.sslNegotiationPolicy, /needs .*ssl-cert/],
    [
      { [ANNOTATION.securityGroups]: 'a', [ANNOTATION.extraSecurityGroups]: 'b' },
      ANNOTATION.extraSecurityGroups,
      /replaces every group/,
    ],
    [
      { [ANNOTATION.healthcheckProtocol]: 'tcp', [ANNOTATION.healthcheckPath]: '/x' },
      ANNOTATION.healthcheckPath,
      /TCP health check/,
    ],
    [
      { [ANNOTATION.additionalResourceTags]: 'kubernetes.io/cluster/x=owned' },
      ANNOTATION.additionalResourceTags,
      /reserved/,
    ],
    [
      { [ANNOTATION.additionalResourceTags]: 'aws:cloudformation:stack-name=x' },
      ANNOTATION.additionalResourceTags,
      /reserved/,
    ],
    [
      { [ANNOTATION.additionalResourceTags]: 'serverless-ccm/security-group-role=backend' },
      ANNOTATION.additionalResourceTags,
      /reserved/,
    ],
    [
      { [ANNOTATION.crossZone]: 'true', [ANNOTATION.attributes]: 'load_balancing.cross_zone.enabled=false' },
      ANNOTATION.crossZone,
      /but .*attributes sets false/,
    ],
    [{ [ANNOTATION.accessLogEnabled]: 'true' }, ANNOTATION.accessLogEnabled, /needs .*bucket-name/],
    [
      { [ANNOTATION.proxyProtocol]: '*', [ANNOTATION.targetGroupAttributes]: 'proxy_protocol_v2.enabled=false' },
      ANNOTATION.proxyProtocol,
      /but .*target-group-attributes sets false/,
    ],
  ])('%j contradicts itself: %s', (annotations, annotation, message) => {
    const { problems } = parseAnnotations(annotations);
    expect(problems).toContainEqual({ annotation, message: expect.stringMatching(message) });
  });

  it('describes problems in one line, annotation first', () => {
    expect(
      describeProblems([
        { annotation: 'a', message: 'x' },
        { annotation: 'b', message: 'y' },
      ]),
    ).toBe('a: x; b: y');
  });
});

describe('ownedByService', () => {
  it.each([
    [{ 'kubernetes.io/cluster/prod': 'owned', 'kubernetes.io/service-name': 'ns/web' }, true],
    [{ 'kubernetes.io/cluster/prod': 'shared', 'kubernetes.io/service-name': 'ns/web' }, false],
    [{ 'kubernetes.io/cluster/other': 'owned', 'kubernetes.io/service-name': 'ns/web' }, false],
    [{ 'kubernetes.io/cluster/prod': 'owned', 'kubernetes.io/service-name': 'ns/other' }, false],
    [{ 'kubernetes.io/service-name': 'ns/web' }, false],
    [undefined, false],
  ])('%j: %s', (tags, owned) => {
    expect(ownedByService(tags, 'prod', 'ns/web')).toBe(owned);
  });
});
