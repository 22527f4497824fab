import { describe, expect, it } from 'vitest';
import type { GroupId } from '../../../shared/ingress/membership.ts';
import type { Ingress, IngressClassParams } from '../../../shared/k8s/ingress-types.ts';
import { LB_ANNOTATION as A, parseMemberSettings } from './annotations.ts';
import { GroupSettings } from './conflicts.ts';
import { assembleLoadBalancer, isDualstack, loadBalancerClaims } from './load-balancer.ts';
import { loadBalancerName, securityGroupName } from './names.ts';

const GROUP: GroupId = { explicit: true, name: 'shop' };
const SETTINGS = { clusterName: 'prod', defaultTags: {} as Record<string, string> };
const settingsOf = (annotations: Record<string, string>, params?: IngressClassParams) =>
  parseMemberSettings({ metadata: { namespace: 'shop', name: 'x', annotations } } as Ingress, params, {
    externalManagedTags: [],
  }).settings;

function held(...members: [string, Record<string, string>, IngressClassParams?][]) {
  const group = new GroupSettings();
  for (const [key, annotations, params] of members) {
    const claims = loadBalancerClaims(settingsOf(annotations, params));
    if (group.disagreements(claims).length === 0) group.commit(key, claims);
  }
  return group;
}

describe('assembleLoadBalancer', () => {
  it("defaults: internal, IPv4, discovered subnets, a managed group, the reference's names", () => {
    const lb = assembleLoadBalancer({ group: GROUP, held: held(['shop/a', {}]), settings: SETTINGS });
    expect(lb).toEqual({
      name: loadBalancerName('prod', GROUP, 'internal'),
      scheme: 'internal',
      ipAddressType: 'ipv4',
      attributes: {},
      tags: {},
      manageBackendSecurityGroupRules: false,
      securityGroupName: securityGroupName('prod', GROUP),
    });
  });

  it('the scheme goes into the generated name', () => {
    const lb = assembleLoadBalancer({
      group: GROUP,
      held: held(['shop/a', { [A.scheme]: 'internet-facing' }]),
      settings: SETTINGS,
    });
    expect(lb.name).toBe(loadBalancerName('prod', GROUP, 'internet-facing'));
    expect(lb.name).not.toBe(loadBalancerName('prod', GROUP, 'internal'));
  });

  it("every member's settings, merged", () => {
    const lb = assembleLoadBalancer({
      group: GROUP,
      held: held(
        ['shop/a', { [A.scheme]: 'internet-facing', [A.tags]: 'Team=shop', [A.loadBalancerAttributes]: 'a=1' }],
        [
          'shop/b',
          {
            [A.ipAddressType]: 'dualstack',
            [A.loadBalancerName]: 'shop-alb',
            [A.subnets]: 'subnet-1,subnet-2',
            [A.securityGroups]: 'sg-1',
            [A.manageBackendSecurityGroupRules]: 'true',
            [A.tags]: 'Env=prod,Team=shop',
            [A.loadBalancerAttributes]: 'b=2',
            [A.wafv2AclArn]: 'none',
            [A.wafv2AclName]: 'acl',
          },
        ],
      ),
      settings: SETTINGS,
    });
    expect(lb).toMatchObject({
      name: 'shop-alb',
      scheme: 'internet-facing',
      ipAddressType: 'dualstack',
      subnets: { ids: ['subnet-1', 'subnet-2'] },
      securityGroups: ['sg-1'],
      manageBackendSecurityGroupRules: true,
      tags: { Team: 'shop', Env: 'prod' },
      attributes: { a: '1', b: '2' },
      wafv2AclArn: 'none',
      wafv2AclName: 'acl',
    });
  });

  it('tags: the controller defaults over the class over the annotations', () => {
    const params: IngressClassParams = {
      metadata: { name: 'p' },
      spec: {
        tags: [
          { key: 'Team', value: 'class' },
          { key: 'Owner', value: 'class' },
        ],
      },
    };
    const lb = assembleLoadBalancer({
      group: GROUP,
      held: held(['shop/a', { [A.tags]: 'Team=annotation,Env=annotation,Owner=annotation' }, params]),
      settings: { ...SETTINGS, defaultTags: { Owner: 'platform' } },
    });
    expect(lb.tags).toEqual({ Team: 'class', Env: 'annotation', Owner: 'platform' });
  });

  it('isDualstack follows the held address type', () => {
    expect(isDualstack(held(['shop/a', { [A.ipAddressType]: 'dualstack' }]))).toBe(true);
    expect(isDualstack(held(['shop/a', {}]))).toBe(false);
  });
});

describe('loadBalancerClaims conflicts', () => {
  const first = {
    [A.scheme]: 'internet-facing',
    [A.ipAddressType]: 'ipv4',
    [A.loadBalancerName]: 'shop-alb',
    [A.subnets]: 'subnet-1,subnet-2',
    [A.securityGroups]: 'sg-1,sg-2',
    [A.manageBackendSecurityGroupRules]: 'false',
    [A.loadBalancerAttributes]: 'idle_timeout.timeout_seconds=60',
    [A.tags]: 'Team=shop',
    [A.wafv2AclArn]: 'arn:waf/1',
    [A.wafv2AclName]: 'acl-1',
  };
  const group = () => held(['shop/a', first]);

  it.each([
    [A.scheme, 'internal'],
    [A.ipAddressType, 'dualstack'],
    [A.loadBalancerName, 'other-alb'],
    [A.subnets, 'subnet-1,subnet-3'],
    [A.securityGroups, 'sg-1'],
    [A.manageBackendSecurityGroupRules, 'true'],
    [A.loadBalancerAttributes, 'idle_timeout.timeout_seconds=120'],
    [A.tags, 'Team=other'],
    [A.wafv2AclArn, 'arn:waf/2'],
    [A.wafv2AclName, 'acl-2'],
  ])('%s: %j disagrees', (name, value) => {
    const problems = group().disagreements(loadBalancerClaims(settingsOf({ [name]: value })));
    expect(problems).toEqual([{ at: name, message: expect.stringContaining('set by shop/a') }]);
  });

  it('a tag or attribute problem names its key', () => {
    const later = settingsOf({ [A.tags]: 'Team=other', [A.loadBalancerAttributes]: 'idle_timeout.timeout_seconds=1' });
    expect(
      group()
        .disagreements(loadBalancerClaims(later))
        .map((p) => p.message),
    ).toEqual([
      expect.stringContaining('"idle_timeout.timeout_seconds=1" conflicts with "idle_timeout.timeout_seconds=60"'),
      expect.stringContaining('"Team=other" conflicts with "Team=shop"'),
    ]);
  });

  it('equal values agree: subnets and groups in any order, other tags and attributes merge', () => {
    const later = settingsOf({
      [A.subnets]: 'subnet-2,subnet-1',
      [A.securityGroups]: 'sg-2,sg-1',
      [A.tags]: 'Team=shop,Env=prod',
      [A.loadBalancerAttributes]: 'routing.http2.enabled=false',
    });
    expect(group().disagreements(loadBalancerClaims(later))).toEqual([]);
  });

  it('subnets by tags from the class compare as sets too', () => {
    const params = (values: string[]): IngressClassParams => ({
      metadata: { name: 'p' },
      spec: { subnets: { tags: { tier: values } } },
    });
    const g = held(['shop/a', {}, params(['a', 'b'])]);
    expect(g.disagreements(loadBalancerClaims(settingsOf({}, params(['b', 'a']))))).toEqual([]);
    expect(g.disagreements(loadBalancerClaims(settingsOf({}, params(['a']))))).toHaveLength(1);
    expect(g.disagreements(loadBalancerClaims(settingsOf({ [A.subnets]: 'subnet-1' })))).toHaveLength(1);
  });

  it('an attribute the class sets is the same for every member of the class, whatever their annotations say', () => {
    const params: IngressClassParams = {
      metadata: { name: 'p' },
      spec: { loadBalancerAttributes: [{ key: 'idle_timeout.timeout_seconds', value: '300' }] },
    };
    const g = held(['shop/a', { [A.loadBalancerAttributes]: 'idle_timeout.timeout_seconds=60' }, params]);
    const later = settingsOf({ [A.loadBalancerAttributes]: 'idle_timeout.timeout_seconds=120' }, params);
    expect(g.disagreements(loadBalancerClaims(later))).toEqual([]);
    expect(g.byPrefix('attribute:')).toEqual({ 'idle_timeout.timeout_seconds': '300' });
  });
});
