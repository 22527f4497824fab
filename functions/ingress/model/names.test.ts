import { describe, expect, it } from 'vitest';
import {
  groupIdString,
  loadBalancerName,
  nameHash,
  sanitizeNamePart,
  securityGroupName,
  targetGroupName,
  targetGroupResourceId,
} from './names.ts';

/**
 * The expected names were computed outside this code, from the reference's algorithm: the readable parts with
 * everything but ASCII letters and digits removed, cut to 17 (explicit group) or 8 (namespace, name)
 * characters, and the first 10 hex digits of `printf '%s' "<fields, concatenated>" | sha256sum`, e.g.
 * `printf '%s' "prodmy-group.v2internet-facing" | sha256sum` -> 34fb5f36f9...
 */
describe('Ingress resource names', () => {
  it('names an explicit group load balancer k8s-<group, 17>-<hash of cluster, group, scheme>', () => {
    expect(loadBalancerName('prod', { explicit: true, name: 'my-group.v2' }, 'internet-facing')).toBe(
      'k8s-mygroupv2-34fb5f36f9',
    );
    expect(loadBalancerName('prod', { explicit: true, name: 'a-very-long-group-name-here' }, 'internet-facing')).toBe(
      'k8s-averylonggroupnam-34a192cb72',
    );
  });

  it('names an implicit group load balancer k8s-<namespace, 8>-<name, 8>-<hash over namespace/name>', () => {
    expect(
      loadBalancerName('prod', { explicit: false, namespace: 'kube-system-long', name: 'my-ingress-name' }, 'internal'),
    ).toBe('k8s-kubesyst-myingres-60197ebbac');
  });

  it('gives another scheme another load balancer name, and the security group one hashed without the scheme', () => {
    const group = { explicit: true, name: 'my-group.v2' } as const;
    expect(loadBalancerName('prod', group, 'internal')).not.toBe(loadBalancerName('prod', group, 'internet-facing'));
    expect(securityGroupName('prod', group)).toBe('k8s-mygroupv2-56db44c84d');
    expect(securityGroupName('prod', { explicit: false, namespace: 'kube-system-long', name: 'my-ingress-name' })).toBe(
      'k8s-kubesyst-myingres-687c854dc8',
    );
  });

  it('names a target group k8s-<service namespace, 8>-<service name, 8>-<hash of its identity>', () => {
    expect(
      targetGroupName({
        clusterName: 'prod',
        group: { explicit: false, namespace: 'default', name: 'app' },
        ingress: { namespace: 'default', name: 'app' },
        service: { namespace: 'default', name: 'web-frontend', uid: '1234-abcd' },
        servicePort: 80,
        port: 30080,
        targetType: 'instance',
        protocol: 'HTTP',
        protocolVersion: 'HTTP1',
      }),
    ).toBe('k8s-default-webfront-ccd4bcc70a');
    expect(
      targetGroupName({
        clusterName: 'prod',
        group: { explicit: true, name: 'shop' },
        ingress: { namespace: 'shop', name: 'storefront' },
        service: { namespace: 'shop', name: 'storefront-svc', uid: 's-uid' },
        servicePort: 'https',
        port: 1,
        targetType: 'ip',
        protocol: 'HTTPS',
        protocolVersion: 'GRPC',
      }),
    ).toBe('k8s-shop-storefro-80153cf71b');
  });

  it.each([
    ['servicePort', { servicePort: 81 }],
    ['port', { port: 30081 }],
    ['targetType', { targetType: 'ip' }],
    ['protocol', { protocol: 'HTTPS' }],
    ['protocolVersion', { protocolVersion: 'HTTP2' }],
    ['service UID', { service: { namespace: 'default', name: 'web-frontend', uid: 'other' } }],
    ['ingress', { ingress: { namespace: 'default', name: 'other' } }],
  ])('changes the target group name when the %s changes', (_, change) => {
    const base = {
      clusterName: 'prod',
      group: { explicit: false, namespace: 'default', name: 'app' } as const,
      ingress: { namespace: 'default', name: 'app' },
      service: { namespace: 'default', name: 'web-frontend', uid: '1234-abcd' },
      servicePort: 80 as number | string,
      port: 30080,
      targetType: 'instance',
      protocol: 'HTTP',
      protocolVersion: 'HTTP1',
    };
    expect(targetGroupName({ ...base, ...change })).not.toBe(targetGroupName(base));
  });

  it("gives the names the reference's own model builder tests expect (cluster cluster-dummy, Ingress ns-1/ing-1)", () => {
    const group = { explicit: false, namespace: 'ns-1', name: 'ing-1' } as const;
    expect(loadBalancerName('cluster-dummy', group, 'internal')).toBe('k8s-ns1-ing1-b7e914000d');
    expect(loadBalancerName('cluster-dummy', group, 'internet-facing')).toBe('k8s-ns1-ing1-159dd7a143');
    expect(securityGroupName('cluster-dummy', group)).toBe('k8s-ns1-ing1-bd83176788');
    const tg = {
      clusterName: 'cluster-dummy',
      group,
      ingress: { namespace: 'ns-1', name: 'ing-1' },
      service: { namespace: 'ns-1', name: 'svc-1', uid: '' },
      servicePort: 'http',
      port: 32768,
      targetType: 'instance',
      protocol: 'HTTP',
      protocolVersion: 'HTTP1',
    };
    expect(targetGroupName(tg)).toBe('k8s-ns1-svc1-9889425938');
    expect(targetGroupName({ ...tg, service: { ...tg.service, name: 'svc-2' } })).toBe('k8s-ns1-svc2-9889425938');
    expect(
      targetGroupName({
        ...tg,
        service: { ...tg.service, name: 'svc-3' },
        servicePort: 'https',
        port: 8443,
        targetType: 'ip',
        protocol: 'HTTPS',
      }),
    ).toBe('k8s-ns1-svc3-bf42870fba');
  });

  it('writes fields into the hash with no separator', () => {
    expect(nameHash('ab', 'c')).toBe(nameHash('a', 'bc'));
    expect(nameHash('prod', 'my-group.v2', 'internet-facing')).toBe('34fb5f36f9');
  });

  it('keeps only ASCII letters and digits in readable parts', () => {
    expect(sanitizeNamePart('a-b.c_d/E9é')).toBe('abcdE9');
  });

  it('writes groups as the reference does, and target group resource IDs as <ns>/<ingress>-<service>:<port>', () => {
    expect(groupIdString({ explicit: true, name: 'shop' })).toBe('shop');
    expect(groupIdString({ explicit: false, namespace: 'ns', name: 'ing' })).toBe('ns/ing');
    expect(targetGroupResourceId({ namespace: 'ns', name: 'ing' }, 'web', 80)).toBe('ns/ing-web:80');
    expect(targetGroupResourceId({ namespace: 'ns', name: 'ing' }, 'web', 'http')).toBe('ns/ing-web:http');
  });
});
