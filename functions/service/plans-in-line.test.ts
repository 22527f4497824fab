import { describe, expect, it } from 'vitest';
import type { Listener, ListenerSpec } from '../../shared/aws/elbv2-port.ts';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import type { EndpointSlice, Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import { listenerUpdate, planListenerCertificates } from '../../shared/load-balancers/listeners.ts';
import { chooseSubnets } from '../../shared/load-balancers/subnets.ts';
import { staleTagKeys } from '../../shared/load-balancers/tags.ts';
import { ipTargets } from '../../shared/load-balancers/targets.ts';
import { ANNOTATION } from './annotations.ts';
import { targetGroupName } from './names.ts';
import { problems, spec } from './testing/model.ts';

const CERT = (n: string) => `arn:aws:acm:eu-west-1:111122223333:certificate/${n}`;

/** The Service `web` in `shop`, given positionally: annotations, extra spec fields, ports. */
function svc(
  annotations: Record<string, string> = {},
  extra: Partial<NonNullable<Service['spec']>> = {},
  ports: ServicePortSpec[] = [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
): Service {
  return { metadata: { name: 'web', namespace: 'shop', annotations }, spec: { type: 'LoadBalancer', ports, ...extra } };
}

describe('attributes are kept in line, defaults included', () => {
  it('a Service without attribute annotations wants AWS defaults for every switch', () => {
    const s = spec(svc());
    expect(s.attributes).toEqual({
      'load_balancing.cross_zone.enabled': 'false',
      'access_logs.s3.enabled': 'false',
      'deletion_protection.enabled': 'false',
      'dns_record.client_routing_policy': 'any_availability_zone',
    });
    expect(s.targetGroups[0]!.attributes).toEqual({
      'deregistration_delay.timeout_seconds': '300',
      'deregistration_delay.connection_termination.enabled': 'false',
      'proxy_protocol_v2.enabled': 'false',
      'stickiness.enabled': 'false',
      'preserve_client_ip.enabled': 'true',
    });
  });

  it('annotations win over the defaults', () => {
    const s = spec(
      svc({
        [ANNOTATION.crossZone]: 'true',
        [ANNOTATION.targetGroupAttributes]: 'stickiness.enabled=true',
        [ANNOTATION.connectionDrainingTimeout]: '20',
      }),
    );
    expect(s.attributes['load_balancing.cross_zone.enabled']).toBe('true');
    expect(s.targetGroups[0]!.attributes).toMatchObject({
      'stickiness.enabled': 'true',
      'deregistration_delay.timeout_seconds': '20',
    });
  });

  it('client IP preservation defaults off for IP targets over TCP, on for UDP (and never sent for UDP)', () => {
    const ip = spec(svc({ [ANNOTATION.nlbTargetType]: 'ip' }));
    expect(ip.targetGroups[0]!.attributes['preserve_client_ip.enabled']).toBe('false');
    const udp = spec(
      svc({ [ANNOTATION.nlbTargetType]: 'ip' }, {}, [{ name: 'dns', protocol: 'UDP', port: 53, targetPort: 53 }]),
    );
    expect(udp.targetGroups[0]!.attributes).not.toHaveProperty('preserve_client_ip.enabled');
  });
});

describe('listeners: certificates, ALPN, idle timeout', () => {
  const tls = {
    [ANNOTATION.sslCert]: `${CERT('a')},${CERT('b')},${CERT('c')}`,
    [ANNOTATION.sslPorts]: '443',
  };
  const ports: ServicePortSpec[] = [
    { name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 },
    { name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 },
  ];

  it('the first certificate is the default, the others go to the TLS listener by SNI', () => {
    const s = spec(svc({ ...tls, [ANNOTATION.alpnPolicy]: 'HTTP2Preferred' }, {}, ports));
    expect(s.listeners).toEqual([
      expect.objectContaining({ port: 80, protocol: 'TCP', extraCertificateArns: [] }),
      expect.objectContaining({
        port: 443,
        protocol: 'TLS',
        certificateArn: CERT('a'),
        extraCertificateArns: [CERT('b'), CERT('c')],
        alpnPolicy: 'HTTP2Preferred',
        attributes: {},
      }),
    ]);
    expect(s.listeners[0]).not.toHaveProperty('alpnPolicy');
  });

  it('TCP listeners keep their idle timeout: the annotation, else AWS 350 s; TLS and UDP have none to set', () => {
    const udpToo: ServicePortSpec[] = [...ports, { name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 }];
    const set = spec(svc({ ...tls, [ANNOTATION.connectionIdleTimeout]: '1200' }, {}, udpToo));
    expect(set.listeners.map((l) => [l.port, l.attributes])).toEqual([
      [53, {}],
      [80, { 'tcp.idle_timeout.seconds': '1200' }],
      [443, {}],
    ]);
    expect(spec(svc()).listeners[0]!.attributes).toEqual({ 'tcp.idle_timeout.seconds': '350' });
  });

  it('refuses an idle timeout without a TCP port and ALPN without a TLS port', () => {
    const udp: ServicePortSpec[] = [{ name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 }];
    expect(problems(svc({ [ANNOTATION.connectionIdleTimeout]: '600' }, {}, udp))).toEqual([
      `${ANNOTATION.connectionIdleTimeout}: applies to TCP listeners only, and the Service has no TCP port`,
    ]);
    expect(
      problems(
        svc({ [ANNOTATION.sslCert]: CERT('a'), [ANNOTATION.sslPorts]: '8443', [ANNOTATION.alpnPolicy]: 'None' }),
      ),
    ).toContain(`${ANNOTATION.alpnPolicy}: the Service has no TLS port`);
  });

  it('an ALPN policy the Service dropped is turned off explicitly', () => {
    const next: ListenerSpec = { port: 443, protocol: 'TLS', certificateArn: CERT('a'), targetGroupArn: 'tg' };
    const was = (alpnPolicy?: Listener['alpnPolicy']): Listener => ({
      arn: 'l',
      loadBalancerArn: 'lb',
      port: 443,
      protocol: 'TLS',
      certificateArns: [CERT('a')],
      targetGroupArn: 'tg',
      ...(alpnPolicy ? { alpnPolicy } : {}),
    });
    expect(listenerUpdate(next, was('HTTP2Only'))).toEqual({ ...next, alpnPolicy: 'None' });
    expect(listenerUpdate(next, was())).toEqual(next);
    expect(listenerUpdate({ ...next, alpnPolicy: 'HTTP1Only' }, was('HTTP2Only')).alpnPolicy).toBe('HTTP1Only');
  });

  it('plans SNI certificates: adds the missing, removes the unwanted, never touches the default', () => {
    const current = [
      { certificateArn: CERT('a'), isDefault: true },
      { certificateArn: CERT('b'), isDefault: false },
      { certificateArn: CERT('old'), isDefault: false },
    ];
    expect(planListenerCertificates([CERT('b'), CERT('c')], current)).toEqual({
      add: [CERT('c')],
      remove: [CERT('old')],
    });
    expect(planListenerCertificates([CERT('b')], current.slice(0, 2))).toEqual({ add: [], remove: [] });
    expect(planListenerCertificates([], current)).toEqual({ add: [], remove: [CERT('b'), CERT('old')] });
  });

  it('a listed certificate becoming the default leaves the list first; the old default joins it after', () => {
    const current = [
      { certificateArn: CERT('a'), isDefault: true },
      { certificateArn: CERT('c'), isDefault: false },
    ];
    expect(planListenerCertificates([CERT('a')], current, { current: CERT('a'), next: CERT('c') })).toEqual({
      add: [CERT('a')],
      remove: [CERT('c')],
    });
    // A listed copy of the current default is never removed (AWS refuses); it goes once it is not the default.
    const listedDefault = [...current, { certificateArn: CERT('a'), isDefault: false }];
    expect(planListenerCertificates([CERT('c')], listedDefault, { current: CERT('a'), next: CERT('a') })).toEqual({
      add: [],
      remove: [],
    });
  });
});

describe('tags: what is no longer wanted goes', () => {
  const desired = { 'kubernetes.io/cluster/prod': 'owned', 'kubernetes.io/service-name': 'shop/web', team: 'web' };

  it('removes keys not wanted, except aws: tags and externally managed keys', () => {
    const current = { ...desired, env: 'prod', 'aws:cloudformation:stack-name': 'x', CostCenter: '42' };
    expect(staleTagKeys(desired, current, ['CostCenter'])).toEqual(['env']);
    expect(staleTagKeys(desired, desired, [])).toEqual([]);
  });

  it('a Service may not set a key another tool manages', () => {
    expect(problems(svc({ [ANNOTATION.additionalResourceTags]: 'CostCenter=1' }), ['CostCenter'])).toEqual([
      `${ANNOTATION.additionalResourceTags}: tag "CostCenter" is managed by another tool (SERVICE_EXTERNAL_MANAGED_TAGS)`,
    ]);
    expect(spec(svc(), ['CostCenter']).externalManagedTags).toEqual(['CostCenter']);
  });
});

describe('dual-stack', () => {
  it('dualstack opens the listener ports to ::/0 too, with ICMPv6 packet-too-big', () => {
    const s = spec(svc({ [ANNOTATION.ipAddressType]: 'dualstack' }));
    expect(s.ipAddressType).toBe('dualstack');
    expect(s.managedIngress).toEqual([
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' },
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv6: '::/0' },
      { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: '0.0.0.0/0' },
      { protocol: 'icmpv6', fromPort: 2, toPort: 0, cidrIpv6: '::/0' },
    ]);
  });

  it('IP targets of an IPv6 Service get an ipv6 target group (a new name) and need dualstack', () => {
    const ipv6 = { ipFamilies: ['IPv6' as const, 'IPv4' as const] };
    const annotations = { [ANNOTATION.nlbTargetType]: 'ip' };
    expect(problems(svc(annotations, ipv6))).toEqual([
      `${ANNOTATION.ipAddressType}: must be "dualstack" for IP targets of an IPv6 Service (spec.ipFamilies[0]: IPv6)`,
    ]);
    const s = spec(svc({ ...annotations, [ANNOTATION.ipAddressType]: 'dualstack' }, ipv6));
    const v4 = spec(svc({ ...annotations, [ANNOTATION.ipAddressType]: 'dualstack' }));
    expect(s.targetGroups[0]!.ipAddressType).toBe('ipv6');
    expect(v4.targetGroups[0]!.ipAddressType).toBe('ipv4');
    expect(s.targetGroups[0]!.name).not.toBe(v4.targetGroups[0]!.name);
    // Instance targets stay IPv4 whatever the Service's family.
    expect(spec(svc({ [ANNOTATION.ipAddressType]: 'dualstack' }, ipv6)).targetGroups[0]!.ipAddressType).toBe('ipv4');
  });

  it('IPv4 target group names are what they were before address families were part of the name', () => {
    const id = { clusterName: 'prod', namespace: 'shop', name: 'web' };
    const group = { loadBalancerName: 'lb', listenerPort: 80, protocol: 'TCP', targetType: 'ip' };
    expect(targetGroupName(id, { ...group, ipAddressType: 'ipv4' })).toBe(targetGroupName(id, group));
    expect(targetGroupName(id, { ...group, ipAddressType: 'ipv6' })).not.toBe(targetGroupName(id, group));
  });

  it('IPv6 target groups take the IPv6 EndpointSlices, IPv4 ones the IPv4 slices', () => {
    const slice = (addressType: 'IPv4' | 'IPv6', address: string): EndpointSlice => ({
      metadata: { name: `web-${addressType}`, namespace: 'shop' },
      addressType,
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
    const slices = [slice('IPv4', '10.0.1.5'), slice('IPv6', '2001:db8::5')];
    const dual = { [ANNOTATION.nlbTargetType]: 'ip', [ANNOTATION.ipAddressType]: 'dualstack' };
    const v6 = spec(svc(dual, { ipFamilies: ['IPv6'] })).targetGroups[0]!;
    const v4 = spec(svc(dual)).targetGroups[0]!;
    expect(ipTargets(v6, slices)).toEqual([{ id: '2001:db8::5', port: 8080 }]);
    expect(ipTargets(v4, slices)).toEqual([{ id: '10.0.1.5', port: 8080 }]);
  });

  it('subnet discovery for dualstack takes IPv6-enabled subnets only; a named subnet without IPv6 is refused', () => {
    const subnets = [
      makeSubnet({ index: 1, zone: 'eu-west-1a' }),
      makeSubnet({ index: 2, zone: 'eu-west-1a', ipv6: true }),
      makeSubnet({ index: 3, zone: 'eu-west-1b' }),
    ];
    const base = { scheme: 'internal' as const, clusterName: 'prod', subnets, routeTables: [], zones: [] };
    const chosen = chooseSubnets({ ...base, dualstack: true });
    expect(chosen.ok && chosen.subnets.map((s) => s.subnetId)).toEqual([subnets[1]!.subnetId]);
    const named = chooseSubnets({ ...base, dualstack: true, requested: [subnets[0]!.subnetId] });
    expect(named.ok).toBe(false);
    expect(!named.ok && named.problem.message).toMatch(/no IPv6 CIDR block/);
  });
});
