import { describe, expect, it } from 'vitest';
import type { Ingress } from '../../../shared/k8s/ingress-types.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { buildMemberRules, type MemberInput, parseGoBool } from './member.ts';
import {
  ANN,
  backend,
  explicitGroup,
  fakeReads,
  implicitGroup,
  makeIngress,
  makeParams,
  makeService,
  makeSettings,
  path,
  rule,
} from './testing/builders.ts';

const forwardTo = (...resourceIds: string[]) => ({
  type: 'forward',
  targetGroups: resourceIds.map((resourceId) => ({ ref: { resourceId }, weight: 1 })),
  stickiness: { enabled: false },
});

async function build(ingress: Ingress, services: Service[] = [makeService()], extra: Partial<MemberInput> = {}) {
  const reads = fakeReads(services);
  const result = await buildMemberRules({
    ingress,
    group: implicitGroup(ingress),
    reads,
    settings: makeSettings(),
    ...extra,
  });
  return { ...result, reads };
}

describe('buildMemberRules', () => {
  it('builds a host and Prefix path rule forwarding to the Service port target group', async () => {
    const ingress = makeIngress({ rules: [rule('shop.example.com', path('/api', 'Prefix'))] });
    const out = await build(ingress);
    expect(out.problems).toEqual([]);
    expect(out.rules).toEqual([
      {
        conditions: [
          { field: 'host-header', values: ['shop.example.com'] },
          { field: 'path-pattern', values: ['/api', '/api/*'] },
        ],
        actions: [forwardTo('default/app-web:80')],
        member: 'default/app',
      },
    ]);
    expect(out.targetGroups.map((tg) => [tg.resourceId, tg.port, tg.member])).toEqual([
      ['default/app-web:80', 30080, 'default/app'],
    ]);
    expect(out.hosts).toEqual(['shop.example.com']);
    expect(out.defaultActions).toBeUndefined();
  });

  it('orders paths per rule block, keeps the blocks in order, and skips blocks without http', async () => {
    const ingress = makeIngress({
      rules: [
        rule('a.example.com', path('/x', 'Prefix'), path('/x/longer', 'Prefix'), path('/exact', 'Exact')),
        { host: 'nohttp.example.com' },
        rule(undefined, path('/impl', 'ImplementationSpecific'), path('/p', 'Prefix')),
      ],
    });
    const out = await build(ingress);
    const paths = out.rules.map((r) => r.conditions.find((c) => c.field === 'path-pattern')?.values[0]);
    expect(paths).toEqual(['/exact', '/x/longer', '/x', '/p', '/impl']);
    expect(out.rules[3]!.conditions).toEqual([{ field: 'path-pattern', values: ['/p', '/p/*'] }]);
  });

  it('matches every path for a rule without host and path', async () => {
    const ingress = makeIngress({ rules: [rule(undefined, path(undefined, undefined))] });
    expect((await build(ingress)).rules[0]!.conditions).toEqual([{ field: 'path-pattern', values: ['/*'] }]);
  });

  it('builds one target group per (Service, port) and reads each Service once', async () => {
    const api = makeService({ name: 'api', ports: [{ name: 'grpc', port: 9000, targetPort: 9000, nodePort: 30900 }] });
    const ingress = makeIngress({
      rules: [
        rule('a.example.com', path('/a', 'Prefix'), path('/b', 'Prefix', backend('web', 'http'))),
        rule('b.example.com', path('/a', 'Prefix'), path('/c', 'Prefix', backend('api', 9000))),
      ],
    });
    const out = await build(ingress, [makeService(), api]);
    expect(out.problems).toEqual([]);
    expect(out.targetGroups.map((tg) => tg.resourceId)).toEqual([
      'default/app-web:80',
      'default/app-web:http',
      'default/app-api:9000',
    ]);
    expect(out.reads.serviceLookups).toBe(2);
  });

  it('takes actions and conditions from annotations written in PascalCase', async () => {
    const blue = makeService({ name: 'blue' });
    const green = makeService({ name: 'green' });
    const ingress = makeIngress({
      annotations: {
        'actions.to-https': JSON.stringify({
          Type: 'redirect',
          RedirectConfig: { Protocol: 'HTTPS', Port: '443', StatusCode: 'HTTP_301' },
        }),
        'actions.canary': JSON.stringify({
          Type: 'forward',
          ForwardConfig: {
            TargetGroups: [
              { ServiceName: 'blue', ServicePort: '80', Weight: 80 },
              { ServiceName: 'green', ServicePort: 80, Weight: 20 },
              { TargetGroupArn: 'arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/x/1', Weight: 0 },
            ],
          },
        }),
        'conditions.canary': JSON.stringify([
          { Field: 'http-header', HttpHeaderConfig: { HttpHeaderName: 'X-Canary', Values: ['on'] } },
        ]),
      },
      rules: [
        rule(
          'a.example.com',
          path('/old', 'Exact', backend('to-https', 'use-annotation')),
          path('/', 'Prefix', backend('canary', 'use-annotation')),
        ),
      ],
    });
    const out = await build(ingress, [blue, green]);
    expect(out.problems).toEqual([]);
    expect(out.rules).toEqual([
      {
        conditions: [
          { field: 'host-header', values: ['a.example.com'] },
          { field: 'path-pattern', values: ['/old'] },
        ],
        actions: [
          {
            type: 'redirect',
            statusCode: 'HTTP_301',
            protocol: 'HTTPS',
            host: '#{host}',
            port: '443',
            path: '/#{path}',
            query: '#{query}',
          },
        ],
        member: 'default/app',
      },
      {
        conditions: [
          { field: 'http-header', headerName: 'X-Canary', values: ['on'] },
          { field: 'host-header', values: ['a.example.com'] },
          { field: 'path-pattern', values: ['/*'] },
        ],
        actions: [
          {
            type: 'forward',
            targetGroups: [
              { ref: { resourceId: 'default/app-blue:80' }, weight: 80 },
              { ref: { resourceId: 'default/app-green:80' }, weight: 20 },
              { ref: { arn: 'arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/x/1' }, weight: 0 },
            ],
            stickiness: { enabled: false },
          },
        ],
        member: 'default/app',
      },
    ]);
    expect(out.targetGroups.map((tg) => tg.resourceId)).toEqual(['default/app-blue:80', 'default/app-green:80']);
  });

  it('builds the default backend actions and its target group', async () => {
    const ingress = makeIngress({ defaultBackend: backend('web', 80), rules: [] });
    const out = await build(ingress);
    expect(out.rules).toEqual([]);
    expect(out.defaultActions).toEqual([forwardTo('default/app-web:80')]);
    expect(out.targetGroups.map((tg) => tg.resourceId)).toEqual(['default/app-web:80']);
  });

  it('takes a fixed response default backend from its annotation', async () => {
    const ingress = makeIngress({
      annotations: { 'actions.nope': '{"type":"fixed-response","fixedResponseConfig":{"statusCode":"404"}}' },
      defaultBackend: backend('nope', 'use-annotation'),
      rules: [],
    });
    const out = await build(ingress, []);
    expect(out.defaultActions).toEqual([{ type: 'fixed-response', statusCode: '404' }]);
    expect(out.targetGroups).toEqual([]);
  });

  it('use-regex-path-match: a problem naming it (regular expressions are not sent yet), so the member is kept', async () => {
    const ingress = makeIngress({
      annotations: { 'use-regex-path-match': 'true' },
      rules: [rule(undefined, path('/api/v[0-9]+/.*', 'ImplementationSpecific'), path('/p', 'Prefix'))],
    });
    const out = await build(ingress);
    expect(out.rules).toEqual([]);
    expect(out.problems.map((p) => p.message).join('\n')).toContain('use-regex-path-match');
  });

  it('collects hosts from rules and TLS, without duplicates', async () => {
    const ingress = makeIngress({
      rules: [rule('a.example.com', path('/', 'Prefix')), rule('b.example.com', path('/', 'Prefix'))],
      tls: [{ hosts: ['b.example.com', 'c.example.com'] }, {}],
    });
    expect((await build(ingress)).hosts).toEqual(['a.example.com', 'b.example.com', 'c.example.com']);
  });

  it('names target groups with the group and the class params target type', async () => {
    const ingress = makeIngress();
    const implicit = await build(ingress);
    const explicit = await build(ingress, [makeService()], { group: explicitGroup('shop') });
    expect(explicit.targetGroups[0]!.name).not.toBe(implicit.targetGroups[0]!.name);
    const withParams = await build(ingress, [makeService()], { params: makeParams('p', { targetType: 'ip' }) });
    expect(withParams.targetGroups[0]).toMatchObject({ targetType: 'ip', port: 8080 });
  });

  it.each([
    [
      'an unknown Service',
      makeIngress({ rules: [rule(undefined, path('/', 'Prefix', backend('gone', 80)))] }),
      'spec.rules[0].http.paths[0]',
      /Service default\/gone not found/,
    ],
    [
      'an unknown port',
      makeIngress({ rules: [rule(undefined, path('/', 'Prefix', backend('web', 81)))] }),
      'Service default/web',
      /port 81 not found/,
    ],
    [
      'a missing actions annotation',
      makeIngress({ rules: [rule(undefined, path('/', 'Prefix', backend('x', 'use-annotation')))] }),
      `${ANN}actions.x`,
      /annotation is missing/,
    ],
    [
      'a bad actions annotation',
      makeIngress({
        annotations: { 'actions.x': '{"type":"nope"}' },
        rules: [rule(undefined, path('/', 'Prefix', backend('x', 'use-annotation')))],
      }),
      `${ANN}actions.x`,
      /unknown action type/,
    ],
    [
      'a forward to an unknown Service',
      makeIngress({
        annotations: {
          'actions.x': '{"type":"forward","forwardConfig":{"targetGroups":[{"serviceName":"gone","servicePort":80}]}}',
        },
        rules: [rule(undefined, path('/', 'Prefix', backend('x', 'use-annotation')))],
      }),
      `${ANN}actions.x`,
      /Service default\/gone not found/,
    ],
    [
      'bad conditions',
      makeIngress({ annotations: { 'conditions.web': '[{"field":' }, rules: [rule(undefined, path('/', 'Prefix'))] }),
      `${ANN}conditions.web`,
      /invalid JSON/,
    ],
    [
      'an Exact path with a wildcard',
      makeIngress({ rules: [rule(undefined, path('/a*', 'Exact'))] }),
      'spec.rules[0].http.paths[0]',
      /wildcards/,
    ],
    [
      'a resource backend',
      makeIngress({
        rules: [
          rule(undefined, { path: '/', pathType: 'Prefix', backend: { resource: { kind: 'Bucket', name: 'b' } } }),
        ],
      }),
      'spec.rules[0].http.paths[0].backend',
      /Service backends/,
    ],
    [
      'a bad use-regex-path-match',
      makeIngress({ annotations: { 'use-regex-path-match': 'yes' } }),
      `${ANN}use-regex-path-match`,
      /not a boolean/,
    ],
    [
      'a bad default backend',
      makeIngress({ defaultBackend: backend('gone', 80), rules: [] }),
      'spec.defaultBackend',
      /Service default\/gone not found/,
    ],
  ] as const)('stops on %s, naming it, and builds nothing', async (_, ingress, at, message) => {
    const out = await build(ingress);
    expect(out.problems).toContainEqual({ at, message: expect.stringMatching(message) });
    expect(out.rules).toEqual([]);
    expect(out.targetGroups).toEqual([]);
    expect(out.defaultActions).toBeUndefined();
  });

  it('reports each problem once even when several rules meet it', async () => {
    const ingress = makeIngress({
      rules: [
        rule('a.example.com', path('/a', 'Prefix', backend('web', 81)), path('/b', 'Prefix', backend('web', 81))),
      ],
    });
    expect((await build(ingress)).problems).toHaveLength(1);
  });

  it('warns about each unsupported annotation on the Ingress and its Services, and still builds', async () => {
    const service = makeService({ annotations: { 'target-node-labels': 'role=web', 'auth-scope': 'openid' } });
    const ingress = makeIngress({
      annotations: {
        'auth-type': 'none',
        'auth-session-timeout': '60',
        'transforms.web': '[]',
        scheme: 'internal',
      },
    });
    const out = await build(ingress, [service]);
    expect(out.problems).toEqual([]);
    expect(out.rules).toHaveLength(1);
    expect(out.warnings.map((w) => w.at)).toEqual([
      `${ANN}auth-session-timeout`,
      `${ANN}auth-type`,
      `${ANN}transforms.web`,
      `${ANN}auth-scope`,
      `${ANN}target-node-labels`,
    ]);
    expect(out.warnings[3]!.message).toContain('Service default/web');
  });

  it.each([
    ['auth-type on the Ingress', { 'auth-type': 'cognito' }, {}, `${ANN}auth-type`],
    ['jwt-validation on the Ingress', { 'jwt-validation': '{"issuer":"x"}' }, {}, `${ANN}jwt-validation`],
    ['auth-type on a backend Service', {}, { 'auth-type': 'oidc' }, `${ANN}auth-type`],
  ])('does not serve rules that ask for authentication (%s)', async (_, ingressAnnotations, serviceAnnotations, at) => {
    const out = await build(makeIngress({ annotations: ingressAnnotations }), [
      makeService({ annotations: serviceAnnotations }),
    ]);
    expect(out.problems).toEqual([{ at, message: expect.stringContaining('authentication is not supported') }]);
    expect(out.rules).toEqual([]);
    expect(out.targetGroups).toEqual([]);
  });
});

describe("the reference's own model builder example", () => {
  it('builds the target groups it expects, names and health checks included', async () => {
    const ports = (name: string, port: number, targetPort: number) => [{ name, port, targetPort, nodePort: 32768 }];
    const svc1 = makeService({ name: 'svc-1', namespace: 'ns-1', uid: '', ports: ports('http', 80, 8080) });
    const svc3 = makeService({
      name: 'svc-3',
      namespace: 'ns-1',
      uid: '',
      ports: ports('https', 443, 8443),
      annotations: {
        'target-type': 'ip',
        'backend-protocol': 'HTTPS',
        'healthcheck-protocol': 'HTTPS',
        'healthcheck-port': '9090',
        'healthcheck-path': '/health-check',
        'healthcheck-interval-seconds': '20',
        'healthcheck-timeout-seconds': '10',
        'healthy-threshold-count': '7',
        'unhealthy-threshold-count': '5',
        'success-codes': '200-300',
      },
    });
    const ingress = makeIngress({
      namespace: 'ns-1',
      name: 'ing-1',
      rules: [
        rule('app-1.example.com', path('/svc-1', undefined, backend('svc-1', 'http'))),
        rule('app-2.example.com', path('/svc-3', undefined, backend('svc-3', 'https'))),
      ],
    });
    const out = await buildMemberRules({
      ingress,
      group: implicitGroup(ingress),
      reads: fakeReads([svc1, svc3]),
      settings: makeSettings({ clusterName: 'cluster-dummy' }),
    });
    expect(out.rules.map((r) => r.conditions)).toEqual([
      [
        { field: 'host-header', values: ['app-1.example.com'] },
        { field: 'path-pattern', values: ['/svc-1'] },
      ],
      [
        { field: 'host-header', values: ['app-2.example.com'] },
        { field: 'path-pattern', values: ['/svc-3'] },
      ],
    ]);
    expect(out.targetGroups.map(({ service: _, member: __, ...tg }) => tg)).toEqual([
      {
        resourceId: 'ns-1/ing-1-svc-1:http',
        name: 'k8s-ns1-svc1-9889425938',
        targetType: 'instance',
        protocol: 'HTTP',
        protocolVersion: 'HTTP1',
        port: 32768,
        ipAddressType: 'ipv4',
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
        attributes: {},
        tags: {},
      },
      {
        resourceId: 'ns-1/ing-1-svc-3:https',
        name: 'k8s-ns1-svc3-bf42870fba',
        targetType: 'ip',
        protocol: 'HTTPS',
        protocolVersion: 'HTTP1',
        port: 8443,
        ipAddressType: 'ipv4',
        healthCheck: {
          protocol: 'HTTPS',
          port: '9090',
          path: '/health-check',
          matcher: { httpCode: '200-300' },
          intervalSeconds: 20,
          timeoutSeconds: 10,
          healthyThreshold: 7,
          unhealthyThreshold: 5,
        },
        attributes: {},
        tags: {},
      },
    ]);
  });
});

describe('parseGoBool', () => {
  it.each([
    ['true', true],
    ['True', true],
    ['1', true],
    ['f', false],
    ['FALSE', false],
    ['yes', undefined],
    ['', undefined],
  ])('%s -> %s', (raw, value) => {
    expect(parseGoBool(raw)).toBe(value);
  });
});
