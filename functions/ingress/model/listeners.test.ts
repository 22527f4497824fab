import { describe, expect, it } from 'vitest';
import type { Ingress } from '../../../shared/k8s/ingress-types.ts';
import { LB_ANNOTATION as A, LISTENER_ATTRIBUTES_PREFIX, parseMemberSettings } from './annotations.ts';
import { GroupSettings } from './conflicts.ts';
import {
  assembleListeners,
  type ListenerContribution,
  listenerClaims,
  NOT_FOUND_ACTION,
  sslRedirectAction,
  sslRedirectProblems,
} from './listeners.ts';
import type { ModelAction, ModelRule } from './types.ts';

const settingsOf = (annotations: Record<string, string>) =>
  parseMemberSettings({ metadata: { namespace: 'shop', name: 'x', annotations } } as Ingress, undefined, {
    externalManagedTags: [],
  }).settings;
const rule = (member: string, path: string): ModelRule => ({
  conditions: [{ field: 'path-pattern', values: [path] }] as ModelRule['conditions'],
  actions: [{ type: 'fixed-response', statusCode: '200' }],
  member,
});
const backend = (name: string): ModelAction[] => [
  { type: 'forward', targetGroups: [{ ref: { resourceId: name }, weight: 1 }], stickiness: { enabled: false } },
];

/** Members in group order: each commits its claims as the group build does, and contributes its rules. */
function group(
  members: {
    key: string;
    annotations: Record<string, string>;
    paths?: string[];
    defaultBackend?: string;
    certs?: string[];
  }[],
) {
  const held = new GroupSettings();
  const contributions: ListenerContribution[] = [];
  for (const m of members) {
    const settings = settingsOf(m.annotations);
    const claims = listenerClaims(m.key, settings, m.defaultBackend !== undefined);
    expect(held.disagreements(claims)).toEqual([]);
    held.commit(m.key, claims);
    contributions.push({
      member: m.key,
      ports: settings.listenPorts.value,
      rules: (m.paths ?? []).map((p) => rule(m.key, p)),
      certificates: m.certs ?? [],
      ...(m.defaultBackend ? { defaultActions: backend(m.defaultBackend) } : {}),
    });
  }
  return { held, contributions };
}
const assemble = (g: ReturnType<typeof group>, dualstack = false) =>
  assembleListeners({
    contributions: g.contributions,
    group: g.held,
    dualstack,
    defaultSslPolicy: 'ELBSecurityPolicy-2016-08',
  });

describe('assembleListeners', () => {
  it('the union of ports; each member rules on each of its own ports, in group order', () => {
    const listeners = assemble(
      group([
        {
          key: 'shop/a',
          annotations: { [A.listenPorts]: '[{"HTTP": 80}, {"HTTPS": 443}]' },
          paths: ['/a1', '/a2'],
          certs: ['arn:c1'],
        },
        { key: 'shop/b', annotations: { [A.listenPorts]: '[{"HTTP": 80}]' }, paths: ['/b'] },
        {
          key: 'shop/c',
          annotations: { [A.listenPorts]: '[{"HTTPS": 443}, {"HTTP": 8080}]' },
          paths: ['/c'],
          certs: ['arn:c2', 'arn:c1'],
        },
      ]),
    );
    expect(listeners.map((l) => [l.port, l.protocol, l.rules.map((r) => r.conditions[0]!)])).toEqual([
      [
        80,
        'HTTP',
        [
          { field: 'path-pattern', values: ['/a1'] },
          { field: 'path-pattern', values: ['/a2'] },
          { field: 'path-pattern', values: ['/b'] },
        ],
      ],
      [
        443,
        'HTTPS',
        [
          { field: 'path-pattern', values: ['/a1'] },
          { field: 'path-pattern', values: ['/a2'] },
          { field: 'path-pattern', values: ['/c'] },
        ],
      ],
      [8080, 'HTTP', [{ field: 'path-pattern', values: ['/c'] }]],
    ]);
    const https = listeners.find((l) => l.port === 443)!;
    expect(https.certificateArns).toEqual(['arn:c1', 'arn:c2']);
    expect(https.sslPolicy).toBe('ELBSecurityPolicy-2016-08');
    expect(listeners.find((l) => l.port === 80)).not.toHaveProperty('sslPolicy');
    for (const l of listeners) {
      expect(l.defaultActions).toEqual([NOT_FOUND_ACTION]);
      expect(l.inboundCidrs).toEqual(['0.0.0.0/0']);
      expect(l.prefixLists).toEqual([]);
    }
  });

  it('the 404 default is a fixed response in text/plain with no body', () => {
    expect(NOT_FOUND_ACTION).toEqual({ type: 'fixed-response', statusCode: '404', contentType: 'text/plain' });
  });

  it('ssl-redirect: every HTTP listener redirects to the HTTPS port, and has no rules', () => {
    const g = group([
      {
        key: 'shop/a',
        annotations: { [A.listenPorts]: '[{"HTTP": 80}, {"HTTPS": 443}]', [A.sslRedirect]: '443' },
        paths: ['/a'],
        certs: ['arn:c'],
      },
      { key: 'shop/b', annotations: { [A.listenPorts]: '[{"HTTP": 8080}]' }, paths: ['/b'] },
    ]);
    expect(sslRedirectProblems(g.held)).toEqual([]);
    const listeners = assemble(g);
    for (const port of [80, 8080]) {
      const l = listeners.find((x) => x.port === port)!;
      expect(l.rules).toEqual([]);
      expect(l.defaultActions).toEqual([
        {
          type: 'redirect',
          statusCode: 'HTTP_301',
          protocol: 'HTTPS',
          port: '443',
          host: '#{host}',
          path: '/#{path}',
          query: '#{query}',
        },
      ]);
    }
    expect(listeners.find((x) => x.port === 443)!.rules).toHaveLength(1);
    expect(sslRedirectAction(8443)).toMatchObject({ port: '8443', protocol: 'HTTPS', statusCode: 'HTTP_301' });
  });

  it.each([
    ['not a listener', '[{"HTTP": 80}]', 'is not a listener of the group'],
    ['an HTTP listener', '[{"HTTP": 80}, {"HTTP": 443}]', 'is an HTTP listener'],
  ])('ssl-redirect to %s is a problem', (_what, ports, message) => {
    const g = group([{ key: 'shop/a', annotations: { [A.listenPorts]: ports, [A.sslRedirect]: '443' } }]);
    expect(sslRedirectProblems(g.held)).toEqual([{ at: A.sslRedirect, message: expect.stringContaining(message) }]);
  });

  it('the one default backend serves the ports of its member; the others answer 404', () => {
    const listeners = assemble(
      group([
        { key: 'shop/a', annotations: { [A.listenPorts]: '[{"HTTP": 80}]' } },
        { key: 'shop/b', annotations: { [A.listenPorts]: '[{"HTTP": 80}, {"HTTP": 81}]' }, defaultBackend: 'tg-b' },
        { key: 'shop/c', annotations: { [A.listenPorts]: '[{"HTTP": 82}]' } },
      ]),
    );
    expect(listeners.map((l) => l.defaultActions)).toEqual([backend('tg-b'), backend('tg-b'), [NOT_FOUND_ACTION]]);
  });

  it('a second default backend on a port disagrees with the first', () => {
    const held = new GroupSettings();
    held.commit('shop/a', listenerClaims('shop/a', settingsOf({}), true));
    const problems = held.disagreements(listenerClaims('shop/b', settingsOf({}), true));
    expect(problems).toEqual([
      {
        at: 'spec.defaultBackend',
        message: expect.stringContaining('conflicts with "default backend of shop/a on port 80" set by shop/a'),
      },
    ]);
  });

  it.each([
    ['dualstack', true, ['0.0.0.0/0', '::/0']],
    ['ipv4', false, ['0.0.0.0/0']],
  ])('sources default to anywhere (%s)', (_what, dualstack, cidrs) => {
    expect(assemble(group([{ key: 'shop/a', annotations: {} }]), dualstack)[0]!.inboundCidrs).toEqual(cidrs);
  });

  it('sources: set CIDRs replace the default; prefix lists (not supported, a Warning) leave it; members that set nothing agree with anyone', () => {
    const [l80, l81] = assemble(
      group([
        { key: 'shop/a', annotations: { [A.listenPorts]: '[{"HTTP": 80}]' } },
        { key: 'shop/b', annotations: { [A.listenPorts]: '[{"HTTP": 80}]', [A.inboundCidrs]: '10.0.0.0/8' } },
        { key: 'shop/c', annotations: { [A.listenPorts]: '[{"HTTP": 81}]', [A.prefixLists]: 'pl-1' } },
      ]),
      true,
    );
    expect(l80!.inboundCidrs).toEqual(['10.0.0.0/8']);
    // Dual-stack here: both default ranges, since prefix lists are not applied to the managed group.
    expect(l81).toMatchObject({ inboundCidrs: ['0.0.0.0/0', '::/0'], prefixLists: ['pl-1'] });
  });

  it('per-port settings: SSL policy and listener attributes of the members on that port', () => {
    const [l443] = assemble(
      group([
        {
          key: 'shop/a',
          annotations: {
            [A.listenPorts]: '[{"HTTPS": 443}]',
            [A.sslPolicy]: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
            [`${LISTENER_ATTRIBUTES_PREFIX}HTTPS-443`]: 'routing.http.response.server.enabled=false',
            [`${LISTENER_ATTRIBUTES_PREFIX}HTTP-80`]: 'ignored=true',
          },
        },
        {
          key: 'shop/b',
          annotations: { [A.listenPorts]: '[{"HTTPS": 443}]', [`${LISTENER_ATTRIBUTES_PREFIX}HTTPS-443`]: 'x=1' },
        },
      ]),
    );
    expect(l443).toMatchObject({
      sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      attributes: { 'routing.http.response.server.enabled': 'false', x: '1' },
    });
  });

  it.each([
    ['protocol', { [A.listenPorts]: '[{"HTTPS": 80}]' }],
    ['inbound CIDRs', { [A.inboundCidrs]: '192.168.0.0/16' }],
    ['prefix lists', { [A.prefixLists]: 'pl-2' }],
    ['listener attributes', { [`${LISTENER_ATTRIBUTES_PREFIX}HTTP-80`]: 'a=2' }],
  ])('a different %s on a shared port disagrees', (_what, annotations) => {
    const first = {
      [A.inboundCidrs]: '10.0.0.0/8',
      [A.prefixLists]: 'pl-1',
      [`${LISTENER_ATTRIBUTES_PREFIX}HTTP-80`]: 'a=1',
    };
    const held = new GroupSettings();
    held.commit('shop/a', listenerClaims('shop/a', settingsOf(first), false));
    expect(held.disagreements(listenerClaims('shop/b', settingsOf(annotations), false))).toHaveLength(1);
  });

  it('a listener problem names the port', () => {
    const held = new GroupSettings();
    held.commit('shop/a', listenerClaims('shop/a', settingsOf({}), false));
    const later = listenerClaims('shop/b', settingsOf({ [A.listenPorts]: '[{"HTTPS": 80}]' }), false);
    expect(held.disagreements(later)).toEqual([
      {
        at: A.listenPorts,
        message: `"HTTPS on port 80" conflicts with "HTTP on port 80" set by shop/a (${A.listenPorts}), which comes first in the group and wins`,
      },
    ]);
  });

  it.each([
    ['ssl-redirect', { [A.sslRedirect]: '443' }, { [A.sslRedirect]: '8443' }, A.sslRedirect],
    [
      'SSL policy',
      { [A.sslPolicy]: 'ELBSecurityPolicy-2016-08' },
      { [A.sslPolicy]: 'ELBSecurityPolicy-TLS13-1-2-2021-06' },
      A.sslPolicy,
    ],
  ])('a different %s disagrees', (_what, first, later, at) => {
    const https = { [A.listenPorts]: '[{"HTTPS": 443}]' };
    const held = new GroupSettings();
    held.commit('shop/a', listenerClaims('shop/a', settingsOf({ ...https, ...first }), false));
    expect(held.disagreements(listenerClaims('shop/b', settingsOf({ ...https, ...later }), false))).toEqual([
      { at, message: expect.stringContaining('set by shop/a') },
    ]);
    expect(held.disagreements(listenerClaims('shop/c', settingsOf({ ...https, ...first }), false))).toEqual([]);
  });

  it('an SSL policy set on HTTP ports only claims nothing', () => {
    const held = new GroupSettings();
    held.commit('shop/a', listenerClaims('shop/a', settingsOf({ [A.sslPolicy]: 'p1' }), false));
    const later = settingsOf({ [A.listenPorts]: '[{"HTTP": 80}, {"HTTPS": 443}]', [A.sslPolicy]: 'p2' });
    expect(held.disagreements(listenerClaims('shop/b', later, false))).toEqual([]);
  });

  it('the same sources in another order agree', () => {
    const held = new GroupSettings();
    held.commit(
      'shop/a',
      listenerClaims('shop/a', settingsOf({ [A.inboundCidrs]: '10.0.0.0/8,192.168.0.0/16' }), false),
    );
    const later = listenerClaims('shop/b', settingsOf({ [A.inboundCidrs]: '192.168.0.0/16, 10.0.0.0/8' }), false);
    expect(held.disagreements(later)).toEqual([]);
  });
});
