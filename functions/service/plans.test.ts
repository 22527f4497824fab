import { describe, expect, it } from 'vitest';
import { makeRouteTable, makeSubnet } from '../../shared/aws/ec2-fake.ts';
import type { RouteTable, SecurityGroupRule, Subnet } from '../../shared/aws/ec2-port.ts';
import type { Listener, ListenerSpec, TargetHealth } from '../../shared/aws/elbv2-port.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import type { EndpointSlice, Node, Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import { makeNode } from '../../test/helpers/nodes.ts';
import { ANNOTATION, parseAnnotations } from './annotations.ts';
import { decide, isClassicHostname } from './decide.ts';
import { planListeners } from './elbv2/listeners.ts';
import { planTargets } from './elbv2/targets.ts';
import { DEFAULT_HEALTH_CHECK, healthCheckMatches } from './model/health-check.ts';
import { managedIngressRules, planRules } from './model/security-rules.ts';
import { type LoadBalancerSpec, loadBalancerSpec } from './model/spec.ts';
import { changedEntries } from './model/tags.ts';
import { eligibleNodes, instanceTargets, ipTargets } from './model/targets.ts';
import { clusterNodeGroups, isOurNodeRule, nodeRules } from './nlb/node-rules.ts';
import { chooseSubnets, isPublicSubnet, subnetMappings } from './nlb/subnets.ts';

function svc(
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

function spec(service: Service): LoadBalancerSpec {
  const { options, problems } = parseAnnotations(service.metadata.annotations);
  expect(problems).toEqual([]);
  const built = loadBalancerSpec(service, options, { clusterName: 'prod' });
  if (!built.ok) throw new Error(JSON.stringify(built.problems));
  return built.spec;
}

function problems(service: Service): string[] {
  const { options } = parseAnnotations(service.metadata.annotations);
  const built = loadBalancerSpec(service, options, { clusterName: 'prod', securityGroupRuleLimit: 60 });
  return built.ok ? [] : built.problems.map((p) => `${p.annotation}: ${p.message}`);
}

describe('decide', () => {
  const withFinalizer = { finalizers: [FINALIZER_LOAD_BALANCER_CLEANUP] };
  it.each([
    ['a LoadBalancer Service', svc(), undefined, { action: 'ensure' }],
    ['type nlb', svc({ annotations: { [ANNOTATION.type]: 'nlb' } }), undefined, { action: 'ensure' }],
    ['our class', svc({ spec: { loadBalancerClass: 'x/nlb' } }), 'x/nlb', { action: 'ensure' }],
    ['another class', svc({ spec: { loadBalancerClass: 'y/nlb' } }), 'x/nlb', { action: 'ignore', why: 'other-class' }],
    [
      'external',
      svc({ annotations: { [ANNOTATION.type]: 'external' } }),
      undefined,
      { action: 'ignore', why: 'other-controller' },
    ],
    [
      'nlb-ip',
      svc({ annotations: { [ANNOTATION.type]: 'nlb-ip' } }),
      undefined,
      { action: 'ignore', why: 'other-controller' },
    ],
    ['ClusterIP', svc({ spec: { type: 'ClusterIP' } }), undefined, { action: 'ignore', why: 'not-a-load-balancer' }],
    [
      'ClusterIP with our finalizer',
      svc({ spec: { type: 'ClusterIP' }, meta: withFinalizer }),
      undefined,
      { action: 'delete', why: 'not-ours-any-more' },
    ],
    [
      'handed over with our finalizer',
      svc({ annotations: { [ANNOTATION.type]: 'external' }, meta: withFinalizer }),
      undefined,
      { action: 'delete', why: 'not-ours-any-more' },
    ],
    [
      'deleting with our finalizer',
      svc({ meta: { ...withFinalizer, deletionTimestamp: '2026-11-02T08:00:00Z' } }),
      undefined,
      { action: 'delete', why: 'deleting' },
    ],
    [
      'deleting without it',
      svc({ meta: { deletionTimestamp: '2026-11-02T08:00:00Z' } }),
      undefined,
      { action: 'ignore', why: 'deleting' },
    ],
    [
      'a Classic ELB',
      svc({ hostname: 'a123-456.eu-west-1.elb.amazonaws.com', meta: withFinalizer }),
      undefined,
      { action: 'ignore', why: 'classic' },
    ],
    [
      'an NLB hostname',
      svc({ hostname: 'web-0123456789abcdef.elb.eu-west-1.amazonaws.com' }),
      undefined,
      { action: 'ensure' },
    ],
  ])('%s', (_, service, loadBalancerClass, expected) => {
    expect(decide(service, loadBalancerClass)).toEqual(expected);
  });

  it.each([
    ['a-1.eu-west-1.elb.amazonaws.com', true],
    ['a-1.cn-north-1.elb.amazonaws.com.cn', true],
    ['a-0123456789abcdef.elb.eu-west-1.amazonaws.com', false],
    [undefined, false],
  ])('Classic hostname %s: %s', (hostname, classic) => {
    expect(isClassicHostname(hostname)).toBe(classic);
  });
});

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

describe('targets', () => {
  const ready = (name: string, extra: Parameters<typeof makeNode>[1] = {}): Node =>
    makeNode(name, {
      providerID: `aws:///eu-west-1a/i-0000000000000000${name.slice(-1)}`,
      initialized: true,
      ...extra,
    });

  it('eligible Nodes (KEP-3458: readiness does not count): not deleting, not excluded, not being scaled away, with an instance, matching the labels', () => {
    const nodes = [
      ready('n1', { labels: { pool: 'web' } }),
      ready('n2', { labels: { pool: 'web' }, ready: false }),
      ready('n3', { labels: { pool: 'web', 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' } }),
      ready('n4', {
        labels: { pool: 'web' },
        taints: [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }],
      }),
      {
        ...ready('n5', { labels: { pool: 'web' } }),
        metadata: { name: 'n5', labels: { pool: 'web' }, deletionTimestamp: 'x' },
      },
      makeNode('n6', { initialized: true, labels: { pool: 'web' } }),
      ready('n7', { labels: { pool: 'batch' } }),
      ready('n8', { labels: { pool: 'web', gpu: 'a100' } }),
    ];
    expect(eligibleNodes(nodes, { pool: 'web' }).map((n) => n.metadata.name)).toEqual(['n1', 'n2', 'n8']);
    expect(eligibleNodes(nodes, { gpu: undefined }).map((n) => n.metadata.name)).toEqual(['n8']);
    expect(eligibleNodes(nodes).map((n) => n.metadata.name)).toEqual(['n1', 'n2', 'n7', 'n8']);
  });

  it('instance targets use the node port', () => {
    const group = spec(svc()).targetGroups[0]!;
    expect(instanceTargets(group, ['i-1', 'i-2'])).toEqual([
      { id: 'i-1', port: 30080 },
      { id: 'i-2', port: 30080 },
    ]);
  });

  it('IP targets: ready IPv4 endpoints on the port the slice gives for the Service port name and protocol', () => {
    const group = spec(
      svc({
        annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
        ports: [{ name: 'http', port: 80, targetPort: 'web' }],
      }),
    ).targetGroups[0]!;
    const slice = (
      addressType: EndpointSlice['addressType'],
      ports: EndpointSlice['ports'],
      endpoints: EndpointSlice['endpoints'],
    ): EndpointSlice => ({
      metadata: { name: 's' },
      addressType,
      ports,
      endpoints,
    });
    const slices = [
      slice(
        'IPv4',
        [{ name: 'http', protocol: 'TCP', port: 8080 }],
        [
          { addresses: ['10.0.0.2'], conditions: { ready: true } },
          { addresses: ['10.0.0.1'] },
          { addresses: ['10.0.0.3'], conditions: { ready: false } },
          { addresses: ['10.0.0.4'], conditions: { ready: true, terminating: true } },
        ],
      ),
      slice('IPv4', [{ name: 'http', protocol: 'TCP', port: 9090 }], [{ addresses: ['10.0.0.5'] }]),
      slice('IPv4', [{ name: 'metrics', protocol: 'TCP', port: 9100 }], [{ addresses: ['10.0.0.6'] }]),
      slice('IPv6', [{ name: 'http', protocol: 'TCP', port: 8080 }], [{ addresses: ['fd00::1'] }]),
    ];
    expect(ipTargets(group, slices)).toEqual([
      { id: '10.0.0.1', port: 8080 },
      { id: '10.0.0.2', port: 8080 },
      { id: '10.0.0.5', port: 9090 },
    ]);
  });

  const health = (id: string, state: TargetHealth['state'], port = 80): TargetHealth => ({
    target: { id, port },
    state,
  });
  it.each([
    ['registers what is missing', [{ id: 'a', port: 80 }], [], ['a:80'], []],
    ['deregisters what is no longer wanted', [], [health('a', 'healthy')], [], ['a:80']],
    [
      'leaves healthy, unhealthy and initial targets alone',
      [
        { id: 'a', port: 80 },
        { id: 'b', port: 80 },
        { id: 'c', port: 80 },
      ],
      [health('a', 'healthy'), health('b', 'unhealthy'), health('c', 'initial')],
      [],
      [],
    ],
    [
      'never deregisters a draining target again',
      [],
      [health('a', 'draining'), health('b', 'unhealthy.draining')],
      [],
      [],
    ],
    [
      'registers a draining target that is wanted again',
      [{ id: 'a', port: 80 }],
      [health('a', 'draining')],
      ['a:80'],
      [],
    ],
    ['a changed port is a new target', [{ id: 'a', port: 81 }], [health('a', 'healthy')], ['a:81'], ['a:80']],
  ])('%s', (_, desired, current, register, deregister) => {
    const plan = planTargets(desired, current);
    expect(plan.register.map((t) => `${t.id}:${t.port}`)).toEqual(register);
    expect(plan.deregister.map((t) => `${t.id}:${t.port}`)).toEqual(deregister);
  });
});

describe('listeners, attributes, health checks', () => {
  const listener = (port: number, extra: Partial<Listener> = {}): Listener => ({
    arn: `l-${port}`,
    loadBalancerArn: 'lb',
    port,
    protocol: 'TCP',
    certificateArns: [],
    targetGroupArn: `tg-${port}`,
    ...extra,
  });
  const want = (port: number, extra: Partial<ListenerSpec> = {}): ListenerSpec => ({
    port,
    protocol: 'TCP',
    targetGroupArn: `tg-${port}`,
    ...extra,
  });

  it('creates, modifies and removes listeners by port', () => {
    const plan = planListeners(
      [
        want(80),
        want(443, { protocol: 'TLS', certificateArn: 'c2' }),
        want(53, { protocol: 'UDP', targetGroupArn: 'tg-53u' }),
        want(8080),
      ],
      [listener(80), listener(443, { protocol: 'TLS', certificateArns: ['c1'] }), listener(53), listener(9000)],
    );
    expect(plan.create.map((l) => l.port)).toEqual([8080]);
    expect(plan.modify.map((m) => m.spec.port)).toEqual([443, 53]);
    expect(plan.remove.map((l) => l.port)).toEqual([9000]);
  });

  it('an unset SSL policy accepts whatever AWS chose', () => {
    const current = listener(443, { protocol: 'TLS', certificateArns: ['c'], sslPolicy: 'ELBSecurityPolicy-2016-08' });
    expect(planListeners([want(443, { protocol: 'TLS', certificateArn: 'c' })], [current]).modify).toEqual([]);
    expect(
      planListeners([want(443, { protocol: 'TLS', certificateArn: 'c', sslPolicy: 'P' })], [current]).modify,
    ).toHaveLength(1);
  });

  it('changes only the attributes that differ, and only those wanted', () => {
    expect(changedEntries({ a: '1', b: '2' }, { a: '1', b: '3', c: '4' })).toEqual({ b: '2' });
  });

  it('compares health checks field by field, path only where it applies', () => {
    expect(healthCheckMatches(DEFAULT_HEALTH_CHECK, { ...DEFAULT_HEALTH_CHECK })).toBe(true);
    expect(healthCheckMatches({ ...DEFAULT_HEALTH_CHECK, path: '/x' }, DEFAULT_HEALTH_CHECK)).toBe(true);
    expect(healthCheckMatches(DEFAULT_HEALTH_CHECK, { ...DEFAULT_HEALTH_CHECK, intervalSeconds: 10 })).toBe(false);
    const http = { ...DEFAULT_HEALTH_CHECK, protocol: 'HTTP' as const, path: '/a' };
    expect(healthCheckMatches(http, { ...http, path: '/b' })).toBe(false);
  });
});

describe('security group rules', () => {
  const rule = (port: number, extra: Partial<SecurityGroupRule> = {}): SecurityGroupRule => ({
    protocol: 'tcp',
    fromPort: port,
    toPort: port,
    sourceGroupId: 'sg-lb',
    ...extra,
  });

  it('adds what is missing and removes only what is ours and unwanted', () => {
    const plan = planRules(
      [rule(80, { description: 'ours' }), rule(443, { description: 'ours' })],
      [rule(80, { description: 'ours' }), rule(8080, { description: 'ours' }), rule(22, { description: 'theirs' })],
      (r) => r.description === 'ours',
    );
    expect(plan.authorize.map((r) => r.fromPort)).toEqual([443]);
    expect(plan.revoke.map((r) => r.fromPort)).toEqual([8080]);
  });

  it('a wanted rule that exists under another description is left as it is (EC2 refuses duplicates)', () => {
    const plan = planRules(
      [rule(80, { description: 'ours' })],
      [rule(80, { description: 'theirs' })],
      (r) => r.description === 'ours',
    );
    expect(plan).toEqual({ authorize: [], revoke: [] });
  });

  it('Node rules: from the backend group, node ports as the whole node port range, other ports one by one', () => {
    const s = spec(
      svc({
        spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 },
        ports: [
          { name: 'a', protocol: 'TCP', port: 80, nodePort: 30080 },
          { name: 'b', protocol: 'UDP', port: 53, nodePort: 30053 },
          { name: 'c', protocol: 'TCP', port: 81, nodePort: 8081 },
        ],
      }),
    );
    const rules = nodeRules(s, new Map(), 'sg-backend');
    expect(rules.map((r) => `${r.sourceGroupId} ${r.protocol}:${r.fromPort}-${r.toPort}`)).toEqual([
      'sg-backend udp:30000-32767',
      'sg-backend tcp:30000-32767',
      'sg-backend tcp:8081-8081',
    ]);
    expect(new Set(rules.map((r) => r.description))).toEqual(new Set(['kubernetes.io/rule/nlb/backend=prod']));
    expect(
      nodeRules(s, new Map(), 'sg-backend', { from: 8000, to: 9000 }).map(
        (r) => `${r.protocol}:${r.fromPort}-${r.toPort}`,
      ),
    ).toEqual(['udp:30053-30053', 'tcp:32000-32000', 'tcp:30080-30080', 'tcp:8000-9000']);
  });

  it('IP targets open the Pod ports that the targets use', () => {
    const s = spec(
      svc({
        annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
        ports: [{ name: 'http', port: 80, targetPort: 'web' }],
      }),
    );
    const targets = new Map([
      [
        s.targetGroups[0]!.name,
        [
          { id: '10.0.0.1', port: 8080 },
          { id: '10.0.0.2', port: 8081 },
        ],
      ],
    ]);
    expect(nodeRules(s, targets, 'sg-backend').map((r) => `${r.fromPort}`)).toEqual(['8080', '8081']);
  });

  it('our Node rules are recognised by description only', () => {
    expect(
      isOurNodeRule(
        { protocol: 'tcp', fromPort: 1, toPort: 1, description: 'kubernetes.io/rule/nlb/backend=prod' },
        'prod',
      ),
    ).toBe(true);
    expect(
      isOurNodeRule(
        { protocol: 'tcp', fromPort: 1, toPort: 1, description: 'kubernetes.io/rule/nlb/backend=dev' },
        'prod',
      ),
    ).toBe(false);
    expect(isOurNodeRule({ protocol: 'tcp', fromPort: 1, toPort: 1 }, 'prod')).toBe(false);
  });

  it('Node groups: only those with our cluster tag', () => {
    const group = (id: string, tags: Record<string, string>) => ({
      groupId: id,
      groupName: id,
      description: '',
      tags,
      ingress: [],
    });
    expect(
      clusterNodeGroups(
        ['sg-a', 'sg-b', 'sg-c'],
        [
          group('sg-a', { 'kubernetes.io/cluster/prod': 'owned' }),
          group('sg-b', {}),
          group('sg-c', { 'kubernetes.io/cluster/prod': 'shared' }),
          group('sg-d', { 'kubernetes.io/cluster/prod': 'owned' }),
        ],
        'prod',
      ).map((g) => g.groupId),
    ).toEqual(['sg-a', 'sg-c']);
  });
});

describe('subnets', () => {
  const subnet = (index: number, zone: string, tags: Record<string, string> = {}): Subnet =>
    makeSubnet({ index, zone, tags });
  const publicTable: RouteTable = {
    routeTableId: 'rtb-pub',
    tags: {},
    routes: [
      {
        destination: '0.0.0.0/0',
        destinationType: 'ipv4',
        target: { gatewayId: 'igw-1' },
        state: 'active',
        origin: 'CreateRoute',
      },
    ],
    associations: [1, 2, 3, 4, 5, 7, 8].map((i) => ({ subnetId: subnet(i, 'x').subnetId, main: false })),
  };
  const mainTable: RouteTable = {
    routeTableId: 'rtb-main',
    tags: {},
    routes: [
      {
        destination: '0.0.0.0/0',
        destinationType: 'ipv4',
        target: { natGatewayId: 'nat-1' },
        state: 'active',
        origin: 'CreateRoute',
      },
    ],
    associations: [{ main: true }],
  };
  const zones = [
    { zoneName: 'eu-west-1a', zoneId: 'a' },
    { zoneName: 'eu-west-1b', zoneId: 'b' },
    { zoneName: 'eu-west-1-lax-1a', zoneId: 'l', zoneType: 'local-zone' },
  ];
  const subnets = [
    subnet(1, 'eu-west-1a'),
    subnet(2, 'eu-west-1a', { 'kubernetes.io/role/elb': '1' }),
    subnet(3, 'eu-west-1b', { 'kubernetes.io/cluster/prod': 'shared' }),
    subnet(4, 'eu-west-1b'),
    subnet(5, 'eu-west-1b', { 'kubernetes.io/cluster/other': 'owned', 'kubernetes.io/role/elb': '1' }),
    subnet(6, 'eu-west-1a', { 'kubernetes.io/role/internal-elb': '1' }),
    subnet(7, 'eu-west-1-lax-1a', { 'kubernetes.io/role/elb': '1' }),
    subnet(8, 'eu-west-1c'),
  ];

  it('tells public from private subnets by their route table (explicit, else main)', () => {
    expect(isPublicSubnet(subnet(1, 'x').subnetId, [publicTable, mainTable])).toBe(true);
    expect(isPublicSubnet(subnet(6, 'x').subnetId, [publicTable, mainTable])).toBe(false);
    expect(isPublicSubnet('subnet-unknown', [makeRouteTable() as unknown as RouteTable])).toBe(false);
  });

  it('internet-facing: public subnets, one per zone: role tag, then cluster tag, then lowest ID; no local zones, no other cluster', () => {
    const choice = chooseSubnets({
      scheme: 'internet-facing',
      clusterName: 'prod',
      subnets,
      routeTables: [publicTable, mainTable],
      zones,
    });
    expect(choice.ok && choice.subnets.map((s) => s.subnetId)).toEqual([
      subnet(2, 'x').subnetId,
      subnet(3, 'x').subnetId,
      subnet(8, 'x').subnetId,
    ]);
  });

  it('internal: any subnet, the internal-elb role tag first', () => {
    const choice = chooseSubnets({ scheme: 'internal', clusterName: 'prod', subnets, routeTables: [], zones });
    expect(choice.ok && choice.subnets.map((s) => s.subnetId)).toEqual([
      subnet(6, 'x').subnetId,
      subnet(3, 'x').subnetId,
      subnet(8, 'x').subnetId,
    ]);
  });

  it('the annotation names subnets by ID or Name tag', () => {
    const named = [...subnets, subnet(9, 'eu-west-1c', { Name: 'edge-c' })];
    const choice = chooseSubnets({
      scheme: 'internet-facing',
      clusterName: 'prod',
      subnets: named,
      routeTables: [],
      zones,
      requested: ['edge-c', subnet(1, 'x').subnetId],
    });
    expect(choice.ok && choice.subnets.map((s) => s.subnetId)).toEqual([
      subnet(9, 'x').subnetId,
      subnet(1, 'x').subnetId,
    ]);
  });

  it.each([
    [['nope'], /no subnet "nope" in the VPC/],
    [[subnet(1, 'x').subnetId, subnet(2, 'x').subnetId], /two subnets in one availability zone/],
  ])('refuses the annotation %j', (requested, pattern) => {
    const choice = chooseSubnets({
      scheme: 'internal',
      clusterName: 'prod',
      subnets,
      routeTables: [],
      zones,
      requested,
    });
    expect(choice.ok).toBe(false);
    if (!choice.ok) expect(`${choice.problem.annotation}: ${choice.problem.message}`).toMatch(pattern);
  });

  it('no public subnet: says what to tag', () => {
    const choice = chooseSubnets({
      scheme: 'internet-facing',
      clusterName: 'prod',
      subnets,
      routeTables: [mainTable],
      zones,
    });
    expect(!choice.ok && choice.problem.message).toMatch(
      /tag subnets kubernetes.io\/role\/elb=1 and kubernetes.io\/cluster\/prod=shared/,
    );
  });

  it('maps Elastic IPs in order and private addresses to the subnet that contains them', () => {
    const chosen = [subnet(1, 'a'), subnet(2, 'b')];
    expect(subnetMappings(chosen, { eipAllocations: ['eipalloc-1', 'eipalloc-2'] })).toEqual({
      ok: true,
      mappings: [
        { subnetId: chosen[0]!.subnetId, allocationId: 'eipalloc-1' },
        { subnetId: chosen[1]!.subnetId, allocationId: 'eipalloc-2' },
      ],
    });
    expect(subnetMappings(chosen, { privateIpv4Addresses: ['10.0.2.10', '10.0.1.10'] })).toEqual({
      ok: true,
      mappings: [
        { subnetId: chosen[0]!.subnetId, privateIPv4Address: '10.0.1.10' },
        { subnetId: chosen[1]!.subnetId, privateIPv4Address: '10.0.2.10' },
      ],
    });
    expect(subnetMappings(chosen, { eipAllocations: ['eipalloc-1'] })).toMatchObject({
      ok: false,
      problem: { message: /1 allocations for 2 subnets/ },
    });
    expect(subnetMappings(chosen, { privateIpv4Addresses: ['10.0.1.10', '10.0.9.10'] })).toMatchObject({
      ok: false,
      problem: { message: /exactly one address inside subnet/ },
    });
  });
});
