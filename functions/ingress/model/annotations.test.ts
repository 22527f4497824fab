import { describe, expect, it } from 'vitest';
import type { Ingress, IngressClassParams } from '../../../shared/k8s/ingress-types.ts';
import { LB_ANNOTATION, LISTENER_ATTRIBUTES_PREFIX, parseListenPorts, parseMemberSettings } from './annotations.ts';

const A = LB_ANNOTATION;
const ingress = (annotations: Record<string, string> = {}): Ingress => ({
  metadata: { namespace: 'shop', name: 'web', annotations },
  spec: { rules: [{ host: 'shop.example.com' }] },
});
const params = (spec: IngressClassParams['spec']): IngressClassParams => ({ metadata: { name: 'alb-params' }, spec });
const parse = (annotations: Record<string, string> = {}, p?: IngressClassParams, externalManagedTags: string[] = []) =>
  parseMemberSettings(ingress(annotations), p, { externalManagedTags });

describe('parseMemberSettings: defaults', () => {
  it('sets nothing the user did not, and listens on HTTP 80', () => {
    const { settings, problems, warnings } = parse();
    expect(problems).toEqual([]);
    expect(warnings).toEqual([]);
    expect(settings).toEqual({
      attributes: {},
      tags: {},
      listenerAttributes: {},
      listenPorts: { value: [{ port: 80, protocol: 'HTTP' }], at: A.listenPorts },
    });
  });

  it('listens on HTTPS 443 by default once certificates are given (annotation or class)', () => {
    expect(parse({ [A.certificateArn]: 'arn:aws:acm:eu-west-1:1:certificate/a' }).settings.listenPorts.value).toEqual([
      { port: 443, protocol: 'HTTPS' },
    ]);
    expect(
      parse({}, params({ certificateArn: ['arn:aws:acm:eu-west-1:1:certificate/a'] })).settings.listenPorts.value,
    ).toEqual([{ port: 443, protocol: 'HTTPS' }]);
  });

  it('keeps listen-ports as written when certificates are given', () => {
    const { settings } = parse({
      [A.certificateArn]: 'arn:aws:acm:eu-west-1:1:certificate/a',
      [A.listenPorts]: '[{"HTTP": 80}]',
    });
    expect(settings.listenPorts.value).toEqual([{ port: 80, protocol: 'HTTP' }]);
  });
});

describe('parseMemberSettings: annotations', () => {
  it('reads every load-balancer-level annotation', () => {
    const { settings, problems } = parse({
      [A.scheme]: 'internet-facing',
      [A.ipAddressType]: 'dualstack',
      [A.subnets]: 'subnet-0a1, subnet-0b2',
      [A.securityGroups]: 'sg-1,frontend',
      [A.manageBackendSecurityGroupRules]: 'true',
      [A.loadBalancerName]: 'shop-alb',
      [A.loadBalancerAttributes]: 'idle_timeout.timeout_seconds=600,routing.http2.enabled=false',
      [A.tags]: 'Team=shop, Env=prod',
      [A.inboundCidrs]: '10.0.0.0/8, 2001:db8::/32',
      [A.prefixLists]: 'pl-1,pl-2',
      [A.listenPorts]: '[{"HTTP": 80}, {"HTTPS": 443}]',
      [A.sslRedirect]: '443',
      [A.certificateArn]: 'arn:aws:acm:eu-west-1:1:certificate/a,arn:aws:acm:eu-west-1:1:certificate/b',
      [A.sslPolicy]: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      [A.wafv2AclArn]: 'arn:aws:wafv2:eu-west-1:1:regional/webacl/shop/1',
      [A.wafv2AclName]: 'none',
      [`${LISTENER_ATTRIBUTES_PREFIX}HTTPS-443`]: 'routing.http.response.server.enabled=false',
    });
    expect(problems).toEqual([]);
    const v = (s: { value: unknown } | undefined) => s?.value;
    expect(v(settings.scheme)).toBe('internet-facing');
    expect(v(settings.ipAddressType)).toBe('dualstack');
    expect(v(settings.subnets)).toEqual({ ids: ['subnet-0a1', 'subnet-0b2'] });
    expect(v(settings.securityGroups)).toEqual(['sg-1', 'frontend']);
    expect(v(settings.manageBackendSecurityGroupRules)).toBe(true);
    expect(v(settings.loadBalancerName)).toBe('shop-alb');
    expect(settings.attributes['idle_timeout.timeout_seconds']).toEqual({ value: '600', at: A.loadBalancerAttributes });
    expect(settings.attributes['routing.http2.enabled']?.value).toBe('false');
    expect(settings.tags).toEqual({ Team: { value: 'shop', at: A.tags }, Env: { value: 'prod', at: A.tags } });
    expect(v(settings.inboundCidrs)).toEqual(['10.0.0.0/8', '2001:db8::/32']);
    expect(v(settings.prefixLists)).toEqual(['pl-1', 'pl-2']);
    expect(v(settings.listenPorts)).toEqual([
      { port: 80, protocol: 'HTTP' },
      { port: 443, protocol: 'HTTPS' },
    ]);
    expect(settings.sslRedirect).toEqual({ value: 443, at: A.sslRedirect });
    expect(v(settings.certificates)).toHaveLength(2);
    expect(v(settings.sslPolicy)).toBe('ELBSecurityPolicy-TLS13-1-2-2021-06');
    expect(v(settings.wafv2AclArn)).toBe('arn:aws:wafv2:eu-west-1:1:regional/webacl/shop/1');
    expect(v(settings.wafv2AclName)).toBe('none');
    expect(settings.listenerAttributes['HTTPS-443']?.['routing.http.response.server.enabled']?.value).toBe('false');
  });

  it('takes subnets with any Name tag among them as references to look up', () => {
    expect(parse({ [A.subnets]: 'subnet-0a1,private-a' }).settings.subnets?.value).toEqual({
      names: ['subnet-0a1', 'private-a'],
    });
  });

  it.each([
    [A.scheme, 'public', 'must be internal or internet-facing'],
    [A.ipAddressType, 'ipv6', 'must be ipv4, dualstack or dualstack-without-public-ipv4'],
    [A.listenPorts, '[{"TCP": 80}]', 'protocol "TCP" must be HTTP or HTTPS'],
    [A.listenPorts, '[{"HTTP": 0}]', 'port 0 must be a number from 1 to 65535'],
    [A.listenPorts, '[{"HTTP": "80"}]', 'port "80" must be a number from 1 to 65535'],
    [A.listenPorts, '[]', 'must be a non-empty JSON list'],
    [A.listenPorts, 'HTTP:80', 'must be JSON'],
    [A.inboundCidrs, '10.0.0.0/33', 'prefix length'],
    [A.inboundCidrs, '10.0.0.1/8', ''],
    [A.sslRedirect, 'https', 'must be a port number'],
    [A.manageBackendSecurityGroupRules, 'yes', 'must be "true" or "false"'],
    [A.tags, 'Team', 'must be key=value pairs'],
    [A.loadBalancerAttributes, '=1', 'must be key=value pairs'],
    [A.loadBalancerName, 'internal-shop', 'must be 1-32 letters'],
    [A.subnets, ' , ', 'must list at least one value'],
  ])('%s: %j is a problem naming the annotation', (name, value, message) => {
    const { problems } = parse({ [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]!.at).toBe(name);
    expect(problems[0]!.message).toContain(message);
  });

  it('refuses listener attributes whose name is not <Protocol>-<Port>', () => {
    const name = `${LISTENER_ATTRIBUTES_PREFIX}TCP-80`;
    expect(parse({ [name]: 'a=b' }).problems).toEqual([{ at: name, message: expect.stringContaining('HTTPS-443') }]);
  });

  it('refuses tags another tool manages', () => {
    const { problems } = parse({ [A.tags]: 'Team=shop,cost-center=1' }, undefined, ['cost-center']);
    expect(problems).toEqual([{ at: A.tags, message: expect.stringContaining('cost-center') }]);
  });
});

describe('parseMemberSettings: IngressClassParams win', () => {
  // An IngressClassParams as users of the reference write them.
  const lbcParams = params({
    scheme: 'internet-facing',
    ipAddressType: 'ipv4',
    subnets: { tags: { 'kubernetes.io/role/elb': ['1'] } },
    certificateArn: ['arn:aws:acm:eu-west-1:1:certificate/class'],
    sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
    sslRedirectPort: '443',
    inboundCIDRs: ['192.168.0.0/16'],
    loadBalancerName: 'class-alb',
    loadBalancerAttributes: [{ key: 'idle_timeout.timeout_seconds', value: '120' }],
    tags: [{ key: 'Team', value: 'platform' }],
    listeners: [{ protocol: 'HTTPS', port: 443, listenerAttributes: [{ key: 'a', value: 'class' }] }],
    prefixListsIDs: ['pl-class'],
    wafv2AclArn: 'arn:aws:wafv2:eu-west-1:1:regional/webacl/class/1',
    wafv2AclName: 'class',
  });
  const annotated = {
    [A.scheme]: 'internal',
    [A.ipAddressType]: 'dualstack',
    [A.subnets]: 'subnet-0a1,subnet-0b2',
    [A.certificateArn]: 'arn:aws:acm:eu-west-1:1:certificate/annotation',
    [A.sslPolicy]: 'ELBSecurityPolicy-2016-08',
    [A.sslRedirect]: '8443',
    [A.inboundCidrs]: '10.0.0.0/8',
    [A.loadBalancerName]: 'annotation-alb',
    [A.loadBalancerAttributes]: 'idle_timeout.timeout_seconds=60,routing.http2.enabled=false',
    [A.tags]: 'Team=shop,Env=prod',
    [`${LISTENER_ATTRIBUTES_PREFIX}HTTPS-443`]: 'a=annotation,b=annotation',
    [A.prefixLists]: 'pl-annotation',
    [A.wafv2AclArn]: 'arn:aws:wafv2:eu-west-1:1:regional/webacl/annotation/1',
    [A.wafv2AclName]: 'annotation',
  };

  it('overrides each annotation with the field that is set, and merges the maps (class wins)', () => {
    const { settings, problems } = parse(annotated, lbcParams);
    expect(problems).toEqual([]);
    const at = (field: string) => `IngressClassParams alb-params: spec.${field}`;
    expect(settings.scheme).toEqual({ value: 'internet-facing', at: at('scheme') });
    expect(settings.ipAddressType).toEqual({ value: 'ipv4', at: at('ipAddressType') });
    expect(settings.subnets).toEqual({ value: { tags: { 'kubernetes.io/role/elb': ['1'] } }, at: at('subnets') });
    expect(settings.certificates?.value).toEqual(['arn:aws:acm:eu-west-1:1:certificate/class']);
    expect(settings.sslPolicy?.value).toBe('ELBSecurityPolicy-TLS13-1-2-2021-06');
    expect(settings.sslRedirect).toEqual({ value: 443, at: at('sslRedirectPort') });
    expect(settings.inboundCidrs?.value).toEqual(['192.168.0.0/16']);
    expect(settings.loadBalancerName?.value).toBe('class-alb');
    expect(settings.attributes).toEqual({
      'idle_timeout.timeout_seconds': { value: '120', at: at('loadBalancerAttributes') },
      'routing.http2.enabled': { value: 'false', at: A.loadBalancerAttributes },
    });
    expect(settings.tags).toEqual({
      Team: { value: 'platform', at: at('tags') },
      Env: { value: 'prod', at: A.tags },
    });
    expect(settings.listenerAttributes['HTTPS-443']).toEqual({
      a: { value: 'class', at: at('listeners[0].listenerAttributes') },
      b: { value: 'annotation', at: `${LISTENER_ATTRIBUTES_PREFIX}HTTPS-443` },
    });
    expect(settings.prefixLists).toEqual({ value: ['pl-class'], at: at('prefixListsIDs') });
    expect(settings.wafv2AclArn?.value).toBe('arn:aws:wafv2:eu-west-1:1:regional/webacl/class/1');
    expect(settings.wafv2AclName?.value).toBe('class');
  });

  it('leaves annotations alone where the class sets nothing', () => {
    const { settings } = parse(annotated, params({ group: { name: 'shop' } }));
    expect(settings.scheme).toEqual({ value: 'internal', at: A.scheme });
    expect(settings.subnets?.value).toEqual({ ids: ['subnet-0a1', 'subnet-0b2'] });
    expect(settings.sslRedirect?.value).toBe(8443);
  });

  it('takes subnet IDs from the class', () => {
    expect(parse({}, params({ subnets: { ids: ['subnet-1'] } })).settings.subnets?.value).toEqual({
      ids: ['subnet-1'],
    });
  });

  it.each([
    ['subnets with both ids and tags', { subnets: { ids: ['subnet-1'], tags: { a: ['b'] } } }, 'spec.subnets'],
    ['subnets with neither', { subnets: {} }, 'spec.subnets'],
    ['a bad CIDR', { inboundCIDRs: ['10.0.0.0/99'] }, 'spec.inboundCIDRs'],
    ['a bad redirect port', { sslRedirectPort: 'https' }, 'spec.sslRedirectPort'],
    ['both spellings of prefix lists', { prefixListsIDs: ['pl-1'], PrefixListsIDs: ['pl-2'] }, 'spec.prefixListsIDs'],
  ] as const)('refuses %s', (_what, spec, field) => {
    const { problems } = parse({}, params(spec as IngressClassParams['spec']));
    expect(problems.map((p) => p.at)).toContain(`IngressClassParams alb-params: ${field}`);
  });

  it('reads the legacy PrefixListsIDs spelling', () => {
    expect(parse({}, params({ PrefixListsIDs: ['pl-old'] })).settings.prefixLists?.value).toEqual(['pl-old']);
  });
});

describe('parseMemberSettings: unsupported settings are warnings', () => {
  it.each([
    'shield-advanced-protection',
    'waf-acl-id',
    'web-acl-id',
    'mutual-authentication',
    'customer-owned-ipv4-pool',
    'ipam-ipv4-pool-id',
    'minimum-load-balancer-capacity',
    'enable-frontend-nlb',
    'frontend-nlb-scheme',
    'frontend-nlb-listener-port-mapping',
  ])('%s', (suffix) => {
    const name = `alb.ingress.kubernetes.io/${suffix}`;
    const { warnings, problems } = parse({ [name]: 'true' });
    expect(problems).toEqual([]);
    expect(warnings).toEqual([{ at: name, message: expect.stringContaining('not supported') }]);
  });

  it('security-group-prefix-lists: a Warning, and the inbound CIDRs stand', () => {
    const name = 'alb.ingress.kubernetes.io/security-group-prefix-lists';
    const { warnings, problems } = parse({ [name]: 'pl-0123456789abcdef0' });
    expect(problems).toEqual([]);
    expect(warnings).toEqual([{ at: name, message: expect.stringContaining('not supported') }]);
  });

  it('the class fields this controller does not do', () => {
    const { warnings } = parse(
      {},
      params({ minimumLoadBalancerCapacity: { capacityUnits: 100 }, ipamConfiguration: { ipv4IPAMPoolId: 'ipam-1' } }),
    );
    expect(warnings.map((w) => w.at)).toEqual([
      'IngressClassParams alb-params: spec.minimumLoadBalancerCapacity',
      'IngressClassParams alb-params: spec.ipamConfiguration',
    ]);
  });

  it('dualstack-without-public-ipv4 becomes dualstack, with a warning', () => {
    const { settings, warnings } = parse({ [A.ipAddressType]: 'dualstack-without-public-ipv4' });
    expect(settings.ipAddressType).toEqual({ value: 'dualstack', at: A.ipAddressType });
    expect(warnings).toEqual([{ at: A.ipAddressType, message: expect.stringContaining('not supported') }]);
  });

  it('an empty web ACL is ignored, with a warning', () => {
    const { settings, warnings } = parse({ [A.wafv2AclArn]: ' ', [A.wafv2AclName]: '' });
    expect(settings.wafv2AclArn).toBeUndefined();
    expect(settings.wafv2AclName).toBeUndefined();
    expect(warnings.map((w) => w.at)).toEqual([A.wafv2AclArn, A.wafv2AclName]);
  });

  it('says nothing about annotations of the member half', () => {
    const { warnings } = parse({
      'alb.ingress.kubernetes.io/target-type': 'ip',
      'alb.ingress.kubernetes.io/group.name': 'g',
    });
    expect(warnings).toEqual([]);
  });
});

describe('parsers', () => {
  it.each([
    ['a=1,b=2', { a: '1', b: '2' }],
    [' a = 1 , , b=', { a: '1', b: '' }],
    ['a=x=y', { a: 'x=y' }],
    ['a=1\\,2,b=3', { a: '1,2', b: '3' }],
  ])('string map %j', (text, expected) => {
    expect(parse({ [A.tags]: text }).settings.tags).toEqual(
      Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, { value: v, at: A.tags }])),
    );
  });

  it('listen ports: later entries for a port win, sorted by port', () => {
    expect(parseListenPorts('[{"HTTPS": 8443}, {"HTTP": 80, "HTTPS": 443}, {"HTTPS": 80}]')).toEqual([
      { port: 80, protocol: 'HTTPS' },
      { port: 443, protocol: 'HTTPS' },
      { port: 8443, protocol: 'HTTPS' },
    ]);
  });
});
