import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GROUP_ORDER_ANNOTATION, type GroupId } from '../../../shared/ingress/membership.ts';
import { type Ingress, type IngressClassParams, ingressKey } from '../../../shared/k8s/ingress-types.ts';
import { LB_ANNOTATION as A } from './annotations.ts';
import { type BuildGroupInput, buildGroup, type MemberBuilder } from './build.ts';
import { NOT_FOUND_ACTION, sslRedirectAction } from './listeners.ts';
import { loadBalancerName, securityGroupName } from './names.ts';
import {
  backend,
  explicitGroup,
  fakeReads,
  makeIngress,
  makeService,
  makeSettings,
  path,
  rule,
  TEST_CLUSTER,
} from './testing/builders.ts';
import type { GroupBuild, ModelAction, ModelSettings, ModelTargetGroup } from './types.ts';

const SHOP: GroupId = { explicit: true, name: 'shop' };
const PROBLEM = 'test/problem';
const WARNING = 'test/warning';

/**
 * A stand-in for the member half (member.ts has its own tests): a rule per path forwarding to a target group per
 * Service, the default backend's forward, hosts, and a problem or warning when the Ingress asks for one.
 */
const fakeMember: MemberBuilder = async ({ ingress }) => {
  const key = ingressKey(ingress);
  const annotations = ingress.metadata.annotations ?? {};
  const forward = (service: string): ModelAction => ({
    type: 'forward',
    targetGroups: [{ ref: { resourceId: `${key}-${service}:80` }, weight: 1 }],
    stickiness: { enabled: false },
  });
  const paths = (ingress.spec?.rules ?? []).flatMap((r) => r.http?.paths ?? []);
  const services = [...paths.map((p) => p.backend.service!.name)];
  const backend = ingress.spec?.defaultBackend?.service?.name;
  if (backend) services.push(backend);
  return {
    rules: paths.map((p) => ({
      conditions: [{ field: 'path-pattern', values: [p.path!] }],
      actions: [forward(p.backend.service!.name)],
      member: key,
    })),
    ...(backend ? { defaultActions: [forward(backend)] } : {}),
    targetGroups: [...new Set(services)].map(
      (s) => ({ resourceId: `${key}-${s}:80`, member: key }) as ModelTargetGroup,
    ),
    hosts: (ingress.spec?.rules ?? []).flatMap((r) => (r.host ? [r.host] : [])),
    problems: annotations[PROBLEM] ? [{ at: PROBLEM, message: annotations[PROBLEM] }] : [],
    warnings: annotations[WARNING] ? [{ at: WARNING, message: annotations[WARNING] }] : [],
  };
};

interface Options {
  namespace?: string;
  annotations?: Record<string, string>;
  paths?: string[];
  host?: string;
  className?: string;
  group?: string | null;
  finalizers?: string[];
  deleting?: boolean;
  defaultBackend?: string;
}

function ingress(name: string, o: Options = {}): Ingress {
  const group = o.group === undefined ? 'shop' : o.group;
  return {
    metadata: {
      namespace: o.namespace ?? 'shop',
      name,
      annotations: { ...(group ? { 'alb.ingress.kubernetes.io/group.name': group } : {}), ...o.annotations },
      ...(o.finalizers ? { finalizers: o.finalizers } : {}),
      ...(o.deleting ? { deletionTimestamp: '2026-12-04T10:00:00Z' } : {}),
    },
    spec: {
      ingressClassName: o.className ?? 'alb',
      ...(o.defaultBackend ? { defaultBackend: { service: { name: o.defaultBackend, port: { number: 80 } } } } : {}),
      rules: [
        {
          ...(o.host ? { host: o.host } : {}),
          http: {
            paths: (o.paths ?? [`/${name}`]).map((path) => ({
              path,
              pathType: 'Prefix' as const,
              backend: { service: { name: `${name}-svc`, port: { number: 80 } } },
            })),
          },
        },
      ],
    },
  };
}

const SETTINGS: ModelSettings = {
  clusterName: 'prod',
  defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
  defaultTargetType: 'instance',
  defaultTags: {},
  externalManagedTags: [],
};

const CERTS = [
  { arn: 'arn:aws:acm:eu-west-1:1:certificate/shop', names: ['shop.example.com'] },
  { arn: 'arn:aws:acm:eu-west-1:1:certificate/wild', names: ['*.example.com'] },
];

function setup(options: { params?: IngressClassParams[] } = {}) {
  let certificateReads = 0;
  const input = (ingresses: Ingress[], more: Partial<BuildGroupInput> = {}): BuildGroupInput => ({
    group: SHOP,
    ingresses,
    lookup: {
      classes: [
        { metadata: { name: 'alb' }, spec: { controller: 'ingress.k8s.aws/alb' } },
        {
          metadata: { name: 'alb-params' },
          spec: {
            controller: 'ingress.k8s.aws/alb',
            parameters: { apiGroup: 'elbv2.k8s.aws', kind: 'IngressClassParams', name: 'shop-params' },
          },
        },
      ],
      params: (name) => options.params?.find((p) => p.metadata.name === name),
    },
    reads: {
      service: async () => undefined,
      certificates: async () => {
        certificateReads++;
        return CERTS;
      },
    },
    settings: SETTINGS,
    buildMember: fakeMember,
    ...more,
  });
  return {
    build: (ingresses: Ingress[], more?: Partial<BuildGroupInput>) => buildGroup(input(ingresses, more)),
    certificateReads: () => certificateReads,
  };
}

const states = (build: GroupBuild) => build.members.map((m) => [m.key, m.state]);
const member = (build: GroupBuild, key: string) => build.members.find((m) => m.key === key)!;
const rulesOn = (build: GroupBuild, port: number) =>
  build.model!.listeners.find((l) => l.port === port)!.rules.map((r) => r.conditions[0]!.values[0]);

describe('buildGroup: members', () => {
  it('no member: no model (everything of the stack goes), leaving members listed', async () => {
    const leaving = ingress('old', { deleting: true, finalizers: ['group.ingress.k8s.aws/shop'] });
    const build = await setup().build([leaving, ingress('elsewhere', { group: 'other' })]);
    expect(build).toEqual({ group: SHOP, members: [], leaving: [leaving] });
  });

  it('one implicit member with nothing set: the reference defaults', async () => {
    const group: GroupId = { explicit: false, namespace: 'shop', name: 'web' };
    const build = await setup().build([ingress('web', { group: null })], { group });
    expect(states(build)).toEqual([['shop/web', 'built']]);
    expect(build.model).toEqual({
      group,
      loadBalancer: {
        name: loadBalancerName('prod', group, 'internal'),
        scheme: 'internal',
        ipAddressType: 'ipv4',
        attributes: {},
        tags: {},
        manageBackendSecurityGroupRules: false,
        securityGroupName: securityGroupName('prod', group),
      },
      listeners: [
        {
          port: 80,
          protocol: 'HTTP',
          certificateArns: [],
          defaultActions: [NOT_FOUND_ACTION],
          rules: [expect.objectContaining({ member: 'shop/web' })],
          attributes: {},
          inboundCidrs: ['0.0.0.0/0'],
          prefixLists: [],
        },
      ],
      targetGroups: [expect.objectContaining({ resourceId: 'shop/web-web-svc:80' })],
    });
  });

  it('members in group order (group.order, then namespace/name), rules placed in that order', async () => {
    const build = await setup().build([
      ingress('c'),
      ingress('a', { annotations: { [GROUP_ORDER_ANNOTATION]: '10' } }),
      ingress('b', { namespace: 'api' }),
      ingress('z', { annotations: { [GROUP_ORDER_ANNOTATION]: '-5' } }),
    ]);
    expect(states(build)).toEqual([
      ['shop/z', 'built'],
      ['api/b', 'built'],
      ['shop/c', 'built'],
      ['shop/a', 'built'],
    ]);
    expect(rulesOn(build, 80)).toEqual(['/z', '/b', '/c', '/a']);
    expect(build.model!.targetGroups.map((tg) => tg.resourceId)).toEqual([
      'shop/z-z-svc:80',
      'api/b-b-svc:80',
      'shop/c-c-svc:80',
      'shop/a-a-svc:80',
    ]);
  });

  it('leaving members are listed apart and bring nothing', async () => {
    const gone = ingress('gone', { deleting: true, finalizers: ['group.ingress.k8s.aws/shop'] });
    const moved = ingress('moved', { group: 'other', finalizers: ['group.ingress.k8s.aws/shop'] });
    const build = await setup().build([ingress('a'), gone, moved]);
    expect(build.leaving).toEqual([gone, moved]);
    expect(states(build)).toEqual([['shop/a', 'built']]);
    expect(rulesOn(build, 80)).toEqual(['/a']);
  });

  it('warnings of both halves are kept, built or not', async () => {
    const build = await setup().build([
      ingress('a', { annotations: { [WARNING]: 'w', 'alb.ingress.kubernetes.io/shield-advanced-protection': 'true' } }),
    ]);
    expect(member(build, 'shop/a')).toMatchObject({
      state: 'built',
      warnings: [
        { at: 'alb.ingress.kubernetes.io/shield-advanced-protection', message: expect.any(String) },
        { at: WARNING, message: 'w' },
      ],
    });
  });
});

describe('buildGroup: a member that cannot be built is kept, the others apply', () => {
  it.each([
    ['its rules (member half)', { [PROBLEM]: 'service web-svc not found' }, PROBLEM],
    ['its listen-ports', { [A.listenPorts]: '[{"HTTP": "80"}]' }, A.listenPorts],
    ['its inbound CIDRs', { [A.inboundCidrs]: '10.0.0.0/33' }, A.inboundCidrs],
    ['its group.order', { [GROUP_ORDER_ANNOTATION]: '5000' }, GROUP_ORDER_ANNOTATION],
  ])('%s', async (_what, annotations, at) => {
    const build = await setup().build([ingress('a'), ingress('b', { annotations }), ingress('c')]);
    expect(states(build)).toEqual([
      ['shop/a', 'built'],
      ['shop/b', 'kept'],
      ['shop/c', 'built'],
    ]);
    expect(member(build, 'shop/b').problems).toEqual([expect.objectContaining({ at })]);
    expect(rulesOn(build, 80)).toEqual(['/a', '/c']);
    expect(build.model!.targetGroups.map((tg) => tg.member)).toEqual(['shop/a', 'shop/c']);
  });

  it('its class cannot be used (but it carries the group finalizer)', async () => {
    const broken = ingress('b', { className: 'alb-params', finalizers: ['group.ingress.k8s.aws/shop'] });
    const build = await setup().build([ingress('a'), broken]);
    expect(states(build)).toEqual([
      ['shop/a', 'built'],
      ['shop/b', 'kept'],
    ]);
    expect(member(build, 'shop/b').problems).toEqual([
      { at: 'spec.ingressClassName', message: expect.stringContaining('IngressClassParams shop-params not found') },
    ]);
  });

  it('only members whose class cannot be used: still a model, so nothing of theirs is deleted', async () => {
    const broken = ingress('b', { className: 'alb-params', finalizers: ['group.ingress.k8s.aws/shop'] });
    const build = await setup().build([broken]);
    expect(states(build)).toEqual([['shop/b', 'kept']]);
    expect(build.model).toMatchObject({ listeners: [], targetGroups: [] });
  });

  it('ssl-redirect from a later member takes the HTTP rules of the earlier ones too', async () => {
    const build = await setup().build([
      ingress('a'),
      ingress('b', {
        annotations: {
          [A.listenPorts]: '[{"HTTP": 80}, {"HTTPS": 443}]',
          [A.sslRedirect]: '443',
          [A.certificateArn]: 'arn:b',
        },
      }),
    ]);
    expect(states(build).map(([, st]) => st)).toEqual(['built', 'built']);
    expect(build.model!.listeners[0]).toMatchObject({ port: 80, rules: [], defaultActions: [sslRedirectAction(443)] });
    expect(rulesOn(build, 443)).toEqual(['/b']);
  });

  it('every member kept: the load balancer stays, with no listener of a built member', async () => {
    const build = await setup().build([ingress('a', { annotations: { [PROBLEM]: 'bad' } })]);
    expect(states(build)).toEqual([['shop/a', 'kept']]);
    expect(build.model).toMatchObject({ listeners: [], targetGroups: [], loadBalancer: { scheme: 'internal' } });
  });
});

describe('buildGroup: conflicts keep the later member', () => {
  it('a different scheme: the first setter wins, the disagreeing member is kept naming both', async () => {
    const build = await setup().build([
      ingress('a', { annotations: { [A.scheme]: 'internet-facing', [A.tags]: 'Team=a' } }),
      ingress('b', { annotations: { [A.scheme]: 'internal', [A.tags]: 'Env=b' } }),
      ingress('c'),
    ]);
    expect(states(build)).toEqual([
      ['shop/a', 'built'],
      ['shop/b', 'kept'],
      ['shop/c', 'built'],
    ]);
    expect(member(build, 'shop/b').problems).toEqual([
      {
        at: A.scheme,
        message: expect.stringMatching(/"internal" conflicts with "internet-facing" set by shop\/a .*scheme/),
      },
    ]);
    expect(build.model!.loadBalancer).toMatchObject({ scheme: 'internet-facing', tags: { Team: 'a' } });
    expect(build.model!.loadBalancer.name).toBe(loadBalancerName('prod', SHOP, 'internet-facing'));
    expect(rulesOn(build, 80)).toEqual(['/a', '/c']);
  });

  it("a kept member's settings bind nobody", async () => {
    const build = await setup().build([
      ingress('a', { annotations: { [A.scheme]: 'internet-facing', [PROBLEM]: 'bad' } }),
      ingress('b', { annotations: { [A.scheme]: 'internal' } }),
    ]);
    expect(states(build)).toEqual([
      ['shop/a', 'kept'],
      ['shop/b', 'built'],
    ]);
    expect(build.model!.loadBalancer.scheme).toBe('internal');
  });

  it('a second default backend is kept; the first serves the listener', async () => {
    const build = await setup().build([
      ingress('a', { defaultBackend: 'fallback' }),
      ingress('b', { defaultBackend: 'other' }),
    ]);
    expect(states(build)).toEqual([
      ['shop/a', 'built'],
      ['shop/b', 'kept'],
    ]);
    expect(build.model!.listeners[0]!.defaultActions).toEqual([
      {
        type: 'forward',
        targetGroups: [{ ref: { resourceId: 'shop/a-fallback:80' }, weight: 1 }],
        stickiness: { enabled: false },
      },
    ]);
  });

  it('a different protocol on a port', async () => {
    const build = await setup().build([
      ingress('a'),
      ingress('b', { annotations: { [A.listenPorts]: '[{"HTTPS": 80}]', [A.certificateArn]: 'arn:c' } }),
    ]);
    expect(member(build, 'shop/b')).toMatchObject({ state: 'kept', problems: [{ at: A.listenPorts }] });
  });
});

describe('buildGroup: listeners', () => {
  it('ssl-redirect: HTTP listeners redirect to the HTTPS port and carry no rules', async () => {
    const build = await setup().build([
      ingress('a', {
        annotations: {
          [A.listenPorts]: '[{"HTTP": 80}, {"HTTPS": 443}]',
          [A.sslRedirect]: '443',
          [A.certificateArn]: 'arn:c',
        },
      }),
      ingress('b'),
    ]);
    expect(states(build)).toEqual([
      ['shop/a', 'built'],
      ['shop/b', 'built'],
    ]);
    const [http, https] = build.model!.listeners;
    expect(http).toMatchObject({ port: 80, rules: [], defaultActions: [sslRedirectAction(443)] });
    expect(https).toMatchObject({ port: 443, protocol: 'HTTPS', certificateArns: ['arn:c'] });
    expect(rulesOn(build, 443)).toEqual(['/a']);
  });

  it('ssl-redirect to a port the group does not serve over HTTPS keeps the member', async () => {
    const build = await setup().build([ingress('a'), ingress('b', { annotations: { [A.sslRedirect]: '443' } })]);
    expect(states(build)).toEqual([
      ['shop/a', 'built'],
      ['shop/b', 'kept'],
    ]);
    expect(member(build, 'shop/b').problems).toEqual([
      { at: A.sslRedirect, message: expect.stringContaining('port 443 is not a listener of the group') },
    ]);
    expect(build.model!.listeners[0]!.defaultActions).toEqual([NOT_FOUND_ACTION]);
  });

  it('given certificates: the first member with some gives the default, the rest are SNI without duplicates', async () => {
    const https = '[{"HTTPS": 443}]';
    const build = await setup().build([
      ingress('a', { annotations: { [A.listenPorts]: https }, host: 'a.example.com' }),
      ingress('b', { annotations: { [A.certificateArn]: 'arn:b1,arn:b2' } }),
      ingress('c', { annotations: { [A.certificateArn]: 'arn:b2,arn:c1' } }),
    ]);
    expect(states(build).map(([, s]) => s)).toEqual(['built', 'built', 'built']);
    expect(build.model!.listeners[0]!.certificateArns).toEqual([
      'arn:aws:acm:eu-west-1:1:certificate/wild',
      'arn:b1',
      'arn:b2',
      'arn:c1',
    ]);
  });

  it('discovery: a host no certificate covers keeps its member; ACM is read once', async () => {
    const s = setup();
    const https = { [A.listenPorts]: '[{"HTTPS": 443}]' };
    const build = await s.build([
      ingress('a', { annotations: https, host: 'shop.example.com' }),
      ingress('b', { annotations: https, host: 'a.b.example.com' }),
      ingress('c', { annotations: https, host: 'api.example.com' }),
    ]);
    expect(states(build).map(([, st]) => st)).toEqual(['built', 'kept', 'built']);
    expect(member(build, 'shop/b').problems).toEqual([
      { at: A.certificateArn, message: 'no certificate found for host: a.b.example.com' },
    ]);
    expect(build.model!.listeners[0]!.certificateArns).toEqual([
      'arn:aws:acm:eu-west-1:1:certificate/shop',
      'arn:aws:acm:eu-west-1:1:certificate/wild',
    ]);
    expect(s.certificateReads()).toBe(1);
  });

  it('an HTTPS listener takes the certificates of any of its members, whatever their order', async () => {
    const https = { [A.listenPorts]: '[{"HTTPS": 443}]' };
    const build = await setup().build([
      ingress('a', { annotations: https }),
      ingress('b', { annotations: { ...https, [A.certificateArn]: 'arn:b' } }),
    ]);
    expect(states(build).map(([, st]) => st)).toEqual(['built', 'built']);
    expect(build.model!.listeners[0]).toMatchObject({ port: 443, certificateArns: ['arn:b'] });
    expect(rulesOn(build, 443)).toEqual(['/a', '/b']);
  });

  it('an HTTPS listener no member brings a certificate to keeps its members; the group is built without them', async () => {
    const build = await setup().build([
      ingress('a', { annotations: { [A.listenPorts]: '[{"HTTPS": 443}]', [A.scheme]: 'internet-facing' } }),
      ingress('b', { annotations: { [A.scheme]: 'internal' } }),
    ]);
    expect(states(build)).toEqual([
      ['shop/a', 'kept'],
      ['shop/b', 'built'],
    ]);
    expect(member(build, 'shop/a').problems).toEqual([
      {
        at: A.certificateArn,
        message: expect.stringContaining('HTTPS listener on port 443 would have no certificate'),
      },
    ]);
    expect(build.model!.loadBalancer.scheme).toBe('internal');
    expect(build.model!.listeners.map((l) => l.port)).toEqual([80]);
  });

  it('folding again until every HTTPS listener has a certificate', async () => {
    const https = { [A.listenPorts]: '[{"HTTPS": 443}]' };
    // a has no certificate and keeps b out (scheme); without a, b is in but has none either; c serves HTTP.
    const build = await setup().build([
      ingress('a', { annotations: { ...https, [A.scheme]: 'internet-facing' } }),
      ingress('b', { annotations: { ...https, [A.scheme]: 'internal' } }),
      ingress('c', { annotations: { [A.scheme]: 'internet-facing' } }),
    ]);
    expect(states(build).map(([, st]) => st)).toEqual(['kept', 'kept', 'built']);
    expect(member(build, 'shop/b').problems).toEqual([
      { at: A.certificateArn, message: expect.stringContaining('would have no certificate') },
    ]);
    expect(build.model!.listeners.map((l) => l.port)).toEqual([80]);
  });

  it('many members prepared together: group order kept, ACM read once', async () => {
    const s = setup();
    const names = Array.from({ length: 12 }, (_, i) => `m${String(i).padStart(2, '0')}`);
    const build = await s.build(
      [...names]
        .reverse()
        .map((n) => ingress(n, { annotations: { [A.listenPorts]: '[{"HTTPS": 443}]' }, host: `${n}.example.com` })),
    );
    expect(states(build)).toEqual(names.map((n) => [`shop/${n}`, 'built']));
    expect(rulesOn(build, 443)).toEqual(names.map((n) => `/${n}`));
    expect(s.certificateReads()).toBe(1);
  });

  it('no HTTPS listener: ACM is not read', async () => {
    const s = setup();
    await s.build([ingress('a', { host: 'shop.example.com' })]);
    expect(s.certificateReads()).toBe(0);
  });
});

describe('buildGroup: quotas', () => {
  const paths = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `/${prefix}${i}`);
  const both = { [A.listenPorts]: '[{"HTTP": 80}, {"HTTP": 8080}]' };

  it('a member whose rules would cross 100 is kept; a smaller one after it still fits', async () => {
    const build = await setup().build([
      ingress('a', { annotations: both, paths: paths('a', 30) }),
      ingress('b', { annotations: both, paths: paths('b', 22) }),
      ingress('c', { paths: paths('c', 20) }),
    ]);
    expect(states(build).map(([, s]) => s)).toEqual(['built', 'kept', 'built']);
    expect(member(build, 'shop/b').problems).toEqual([
      { at: 'spec.rules', message: 'TooManyRules: the group would have 104 rules, AWS allows 100 per load balancer' },
    ]);
    expect(build.model!.listeners.reduce((n, l) => n + l.rules.length, 0)).toBe(80);
  });

  it('target groups and certificates, with the quotas given', async () => {
    const limits = {
      rulesPerLoadBalancer: 100,
      targetGroupsPerLoadBalancer: 2,
      certificatesPerLoadBalancer: 1,
      listenersPerLoadBalancer: 50,
    };
    const build = await setup().build(
      [
        ingress('a'),
        ingress('b', { defaultBackend: 'x' }),
        ingress('c', { annotations: { [A.certificateArn]: 'arn:1,arn:2,arn:3' } }),
        ingress('d', { annotations: { [A.certificateArn]: 'arn:1,arn:2' } }),
      ],
      { limits },
    );
    expect(states(build).map(([, s]) => s)).toEqual(['built', 'kept', 'kept', 'built']);
    expect(member(build, 'shop/b').problems[0]!.message).toMatch(/^TooManyTargetGroups: the group would use 3/);
    expect(member(build, 'shop/c').problems.map((p) => p.message.split(':')[0])).toEqual(['TooManyCertificates']);
  });
});

describe('buildGroup: IngressClassParams', () => {
  // As users of the reference write one: the class decides the group and the load balancer for every Ingress.
  const params: IngressClassParams = {
    apiVersion: 'elbv2.k8s.aws/v1beta1',
    kind: 'IngressClassParams',
    metadata: { name: 'shop-params' },
    spec: {
      group: { name: 'shop' },
      scheme: 'internet-facing',
      ipAddressType: 'dualstack',
      certificateArn: ['arn:aws:acm:eu-west-1:1:certificate/class'],
      sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      inboundCIDRs: ['10.0.0.0/8'],
      tags: [{ key: 'Team', value: 'platform' }],
      loadBalancerAttributes: [{ key: 'idle_timeout.timeout_seconds', value: '300' }],
    },
  };

  it('members whose annotations disagree are all built: the class decides', async () => {
    const build = await setup({ params: [params] }).build(
      [
        ingress('a', {
          className: 'alb-params',
          group: null,
          annotations: { [A.scheme]: 'internal', [A.loadBalancerAttributes]: 'idle_timeout.timeout_seconds=60' },
        }),
        ingress('b', {
          className: 'alb-params',
          group: 'ignored-by-class',
          annotations: { [A.scheme]: 'internet-facing', [A.tags]: 'Team=shop,Env=prod' },
        }),
      ],
      { settings: { ...SETTINGS, defaultTags: { Env: 'default' } } },
    );
    expect(states(build)).toEqual([
      ['shop/a', 'built'],
      ['shop/b', 'built'],
    ]);
    expect(build.model!.loadBalancer).toMatchObject({
      scheme: 'internet-facing',
      ipAddressType: 'dualstack',
      attributes: { 'idle_timeout.timeout_seconds': '300' },
      tags: { Team: 'platform', Env: 'default' },
    });
    expect(build.model!.listeners).toEqual([
      expect.objectContaining({
        port: 443,
        protocol: 'HTTPS',
        sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
        certificateArns: ['arn:aws:acm:eu-west-1:1:certificate/class'],
        inboundCidrs: ['10.0.0.0/8'],
      }),
    ]);
    expect(rulesOn(build, 443)).toEqual(['/a', '/b']);
  });
});

describe('buildGroup with the member half', () => {
  it('an LBC-shaped group: rules placed in group order on each member port, a member with a missing Service kept', async () => {
    const group = explicitGroup('shop');
    const joined = { 'group.name': 'shop' };
    const ingresses = [
      makeIngress({
        name: 'api',
        annotations: { ...joined, 'group.order': '1', 'listen-ports': '[{"HTTP": 80}, {"HTTPS": 443}]' },
        rules: [rule('api.example.com', path('/v1', 'Prefix', backend('api', 80)))],
      }),
      makeIngress({
        name: 'web',
        annotations: { ...joined, 'listen-ports': '[{"HTTPS": 443}]', 'certificate-arn': 'arn:web' },
        rules: [rule('www.example.com', path('/', 'Prefix', backend('web', 80)))],
      }),
      makeIngress({
        name: 'broken',
        annotations: joined,
        rules: [rule(undefined, path('/b', 'Exact', backend('missing', 80)))],
      }),
    ];
    const build = await buildGroup({
      group,
      ingresses,
      lookup: {
        classes: [{ metadata: { name: 'alb' }, spec: { controller: 'ingress.k8s.aws/alb' } }],
        params: () => undefined,
      },
      reads: fakeReads(
        [makeService({ name: 'api' }), makeService({ name: 'web' })],
        [{ arn: 'arn:wild', names: ['*.example.com'] }],
      ),
      settings: makeSettings(),
    });
    expect(states(build)).toEqual([
      ['default/broken', 'kept'],
      ['default/web', 'built'],
      ['default/api', 'built'],
    ]);
    expect(member(build, 'default/broken').problems).toEqual([
      expect.objectContaining({ message: expect.stringContaining('Service default/missing not found') }),
    ]);
    const [http, https] = build.model!.listeners;
    expect(http!.rules.map((r) => r.member)).toEqual(['default/api']);
    expect(https!.rules.map((r) => r.member)).toEqual(['default/web', 'default/api']);
    expect(https!.certificateArns).toEqual(['arn:web', 'arn:wild']);
    expect(https!.rules[0]!.conditions).toContainEqual({ field: 'host-header', values: ['www.example.com'] });
    expect(build.model!.targetGroups.map((tg) => tg.member)).toEqual(['default/web', 'default/api']);
    expect(build.model!.loadBalancer.name).toBe(loadBalancerName(TEST_CLUSTER, group, 'internal'));
  });
});

describe('buildGroup: invariants over random groups', () => {
  const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
  const memberArb = fc.record({
    scheme: optional(fc.constantFrom('internal', 'internet-facing')),
    ports: optional(
      fc.constantFrom('[{"HTTP": 80}]', '[{"HTTP": 80}, {"HTTPS": 443}]', '[{"HTTPS": 443}]', '[{"HTTPS": 80}]'),
    ),
    certificate: optional(fc.constantFrom('arn:x', 'arn:y')),
    cidrs: optional(fc.constantFrom('10.0.0.0/8', '192.168.0.0/16')),
    redirect: optional(fc.constant('443')),
    team: optional(fc.constantFrom('a', 'b')),
    order: fc.integer({ min: -1, max: 1 }),
    paths: fc.integer({ min: 0, max: 40 }),
    host: optional(fc.constantFrom('shop.example.com', 'nope.other.net')),
    broken: fc.boolean(),
    defaultBackend: fc.boolean(),
  });
  type Generated = typeof memberArb extends fc.Arbitrary<infer T> ? T : never;

  const toIngress = (m: Generated, i: number) =>
    ingress(`m${i}`, {
      annotations: {
        [GROUP_ORDER_ANNOTATION]: String(m.order),
        ...(m.scheme ? { [A.scheme]: m.scheme } : {}),
        ...(m.ports ? { [A.listenPorts]: m.ports } : {}),
        ...(m.certificate ? { [A.certificateArn]: m.certificate } : {}),
        ...(m.cidrs ? { [A.inboundCidrs]: m.cidrs } : {}),
        ...(m.redirect ? { [A.sslRedirect]: m.redirect } : {}),
        ...(m.team ? { [A.tags]: `Team=${m.team}` } : {}),
        ...(m.broken ? { [PROBLEM]: 'broken' } : {}),
      },
      paths: Array.from({ length: m.paths }, (_, p) => `/m${i}/${p}`),
      ...(m.host ? { host: m.host } : {}),
      ...(m.defaultBackend ? { defaultBackend: 'fallback' } : {}),
    });

  it('built means no problem; the model holds only built members, within the quotas, in group order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(memberArb, { minLength: 1, maxLength: 8 }), async (generated) => {
        const build = await setup().build(generated.map(toIngress));
        const model = build.model!;
        const built = new Set(build.members.filter((m) => m.state === 'built').map((m) => m.key));
        for (const m of build.members) expect(m.state === 'built').toBe(m.problems.length === 0);
        for (const [a, b] of build.members.slice(1).map((m, i) => [build.members[i]!, m] as const)) {
          expect(a.order).toBeLessThanOrEqual(b.order);
        }
        const position = new Map(build.members.map((m, i) => [m.key, i]));
        for (const l of model.listeners) {
          const owners = l.rules.map((r) => position.get(r.member)!);
          expect(owners).toEqual([...owners].sort((x, y) => x - y));
          for (const r of l.rules) expect(built.has(r.member)).toBe(true);
          if (l.protocol === 'HTTPS') expect(l.certificateArns.length).toBeGreaterThan(0);
        }
        expect(model.listeners.reduce((n, l) => n + l.rules.length, 0)).toBeLessThanOrEqual(100);
        for (const tg of model.targetGroups) expect(built.has(tg.member)).toBe(true);

        // Each built member's rules are on each of its ports (none on an HTTP listener that redirects), and what
        // it sets is what the group has.
        const redirecting = model.listeners.some((l) => l.defaultActions[0]?.type === 'redirect');
        for (const m of build.members.filter((x) => x.state === 'built')) {
          const g = generated[Number(m.ingress.metadata.name.slice(1))]!;
          const ports = g.ports ?? (g.certificate ? '[{"HTTPS": 443}]' : '[{"HTTP": 80}]');
          for (const [protocol, port] of [...ports.matchAll(/"(HTTPS?)": (\d+)/g)].map((x) => [x[1], Number(x[2])])) {
            const l = model.listeners.find((x) => x.port === port)!;
            expect(l.protocol).toBe(protocol);
            const own = l.rules.filter((r) => r.member === m.key).length;
            expect(own).toBe(protocol === 'HTTP' && redirecting ? 0 : g.paths);
            if (g.cidrs) expect(l.inboundCidrs).toEqual([g.cidrs]);
          }
          if (g.scheme) expect(model.loadBalancer.scheme).toBe(g.scheme);
          if (g.team) expect(model.loadBalancer.tags.Team).toBe(g.team);
        }
      }),
      { numRuns: 150 },
    );
  });
});
