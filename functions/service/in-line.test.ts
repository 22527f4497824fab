import { beforeEach, describe, expect, it } from 'vitest';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import type { Service, ServicePortSpec } from '../../shared/k8s/types.ts';
import { createServiceWorld, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { withIpv6PublicSubnets } from './testing/service.ts';

/**
 * A load balancer that exists is kept in line with its Service: whatever an annotation set is undone when
 * the annotation goes, and what AWS can only change in steps (zones) or not at all (every zone) is done
 * that way, with Events.
 */

let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
  w.addNode(1);
  w.addNode(2);
});

const CERT = (n: string) => `arn:aws:acm:eu-west-1:111122223333:certificate/${n}`;
const service = (name = 'web'): Service => w.kube.services.get(`default/${name}`)!;
const eventsOf = (reason: string, name = 'web') => w.kube.eventsFor('Service', name, reason).map((e) => e.message);
const onlyLb = () => {
  const lbs = [...w.elbv2.loadBalancers.values()];
  expect(lbs).toHaveLength(1);
  return lbs[0]!.lb;
};
const onlyGroup = () => {
  const groups = [...w.elbv2.targetGroups.values()];
  expect(groups).toHaveLength(1);
  return groups[0]!;
};
const listener = (port: number) => w.elbv2.listenersOf(onlyLb().arn).find((l) => l.port === port)!;
const managedGroup = () => [...w.ec2.securityGroups.values()].find((g) => g.groupName.startsWith('k8s-elb-'))!;

async function apply(annotations: Record<string, string>, options: Parameters<ServiceWorld['putService']>[1] = {}) {
  const existing = w.kube.services.get('default/web');
  if (existing) {
    w.kube.putService({
      ...existing,
      metadata: { ...existing.metadata, annotations },
      spec: { ...existing.spec, ...(options.ports ? { ports: options.ports } : {}), ...options.spec },
    });
  } else {
    w.putService('web', { ...options, annotations });
  }
  await w.converge([w.serviceKey('web')]);
}

describe('attributes', () => {
  it('an attribute annotation removed turns the setting back to AWS default; a console change is put back', async () => {
    await apply({
      [ANNOTATION.crossZone]: 'true',
      [ANNOTATION.targetGroupAttributes]: 'stickiness.enabled=true',
      [ANNOTATION.connectionDrainingTimeout]: '20',
    });
    const lb = onlyLb();
    expect(w.elbv2.attributesOf(lb.arn)?.['load_balancing.cross_zone.enabled']).toBe('true');
    expect(onlyGroup().attributes).toMatchObject({
      'stickiness.enabled': 'true',
      'deregistration_delay.timeout_seconds': '20',
    });

    await apply({});
    expect(w.elbv2.attributesOf(lb.arn)?.['load_balancing.cross_zone.enabled']).toBe('false');
    expect(onlyGroup().attributes).toMatchObject({
      'stickiness.enabled': 'false',
      'deregistration_delay.timeout_seconds': '300',
    });

    // Someone turns deletion protection on in the console: the next pass turns it off (the Service is the truth).
    await w.elbv2Port.modifyLoadBalancerAttributes(lb.arn, { 'deletion_protection.enabled': 'true' });
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.attributesOf(lb.arn)?.['deletion_protection.enabled']).toBe('false');
  });
});

describe('tags', () => {
  it('a tag dropped from additional-resource-tags leaves every resource; aws: and externally managed tags stay', async () => {
    await apply({ [ANNOTATION.additionalResourceTags]: 'team=web,env=prod' });
    const lb = onlyLb();
    const group = onlyGroup();
    const http = listener(80);
    await w.elbv2Port.addTags(lb.arn, { CostCenter: '42', 'aws:cloudformation:stack-name': 'x' });
    for (const arn of [lb.arn, group.tg.arn, http.arn]) expect(w.elbv2.tagsOf(arn)?.env).toBe('prod');
    expect(managedGroup().tags.env).toBe('prod');

    w.resetCounters();
    w.kube.putService({
      ...service(),
      metadata: { ...service().metadata, annotations: { [ANNOTATION.additionalResourceTags]: 'team=web' } },
    });
    await w.converge([w.serviceKey('web')], { ...w.serviceDeps, externalManagedTags: ['CostCenter'] });

    for (const arn of [lb.arn, group.tg.arn, http.arn]) {
      expect(w.elbv2.tagsOf(arn)).not.toHaveProperty('env');
      expect(w.elbv2.tagsOf(arn)).toMatchObject({ team: 'web', [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' });
    }
    expect(w.elbv2.tagsOf(lb.arn)).toMatchObject({ CostCenter: '42', 'aws:cloudformation:stack-name': 'x' });
    expect(managedGroup().tags).not.toHaveProperty('env');
    expect(w.elbv2.callCount('RemoveTags')).toBe(3);
  });
});

describe('TLS listeners', () => {
  const ports: ServicePortSpec[] = [
    { name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 },
    { name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 },
  ];
  const certificates = async () =>
    (await w.elbv2Port.describeListenerCertificates(listener(443).arn))
      .map((c) => `${c.isDefault ? '*' : ''}${c.certificateArn.split('/').pop()}`)
      .sort();

  it('extra certificates are served by SNI and kept in line; the first one is the default', async () => {
    const tls = (certs: string[]) => ({
      [ANNOTATION.sslCert]: certs.map(CERT).join(','),
      [ANNOTATION.sslPorts]: 'https',
    });
    await apply(tls(['a', 'b', 'c']), { ports });
    expect(listener(443).certificateArns).toEqual([CERT('a')]);
    expect(await certificates()).toEqual(['*a', 'b', 'c']);

    await apply(tls(['a', 'c', 'd']));
    expect(await certificates()).toEqual(['*a', 'c', 'd']);

    await apply(tls(['c', 'd']));
    expect(listener(443).certificateArns).toEqual([CERT('c')]);
    expect(await certificates()).toEqual(['*c', 'd']);
  });

  it('ALPN policy set on the TLS listener, and turned off again when the annotation goes', async () => {
    const tls = { [ANNOTATION.sslCert]: CERT('a'), [ANNOTATION.sslPorts]: '443' };
    await apply({ ...tls, [ANNOTATION.alpnPolicy]: 'HTTP2Preferred' }, { ports });
    expect(listener(443).alpnPolicy).toBe('HTTP2Preferred');
    expect(listener(80).alpnPolicy).toBeUndefined();

    await apply(tls);
    expect(listener(443).alpnPolicy ?? 'None').toBe('None');
  });
});

describe('idle timeout', () => {
  it('connection-idle-timeout sets the TCP listeners idle timeout and is reset to 350 s when removed', async () => {
    await apply({ [ANNOTATION.connectionIdleTimeout]: '1200' });
    const arn = listener(80).arn;
    expect((await w.elbv2Port.describeListenerAttributes(arn))['tcp.idle_timeout.seconds']).toBe('1200');

    await apply({});
    expect((await w.elbv2Port.describeListenerAttributes(arn))['tcp.idle_timeout.seconds']).toBe('350');
  });

  it('a listener made with the default idle timeout is not modified, and a quiet pass reads it once', async () => {
    await apply({});
    expect(w.elbv2.callCount('ModifyListenerAttributes')).toBe(0);
    w.resetCounters();
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.callCount('DescribeListenerAttributes')).toBe(1);
    expect(w.awsWrites()).toBe(0);
  });
});

describe('subnets and addresses after creation', () => {
  const subnet = (index: number) => makeSubnet({ index }).subnetId;
  const zonesOf = () =>
    onlyLb()
      .subnets.map((s) => `${s.zoneName}:${s.subnetId}${s.allocationId ? `:${s.allocationId}` : ''}`)
      .sort();

  it('moving one zone to another subnet removes the zone first, then adds it back, with an Event', async () => {
    w.ec2.putSubnet(makeSubnet({ index: 30, zone: 'eu-west-1a', tags: { Name: 'public-a-2' } }));
    await apply({ [ANNOTATION.subnets]: 'public-eu-west-1a, public-eu-west-1b' });
    const arn = onlyLb().arn;
    expect(zonesOf()).toEqual([`eu-west-1a:${subnet(10)}`, `eu-west-1b:${subnet(11)}`]);

    await apply({ [ANNOTATION.subnets]: 'public-a-2, public-eu-west-1b' });

    expect(onlyLb().arn).toBe(arn);
    expect(zonesOf()).toEqual([`eu-west-1a:${subnet(30)}`, `eu-west-1b:${subnet(11)}`]);
    expect(eventsOf('UpdatedLoadBalancer').join('\n')).toMatch(/Removing zone\(s\) eu-west-1a/);
    // Removal first, addition once AWS finished removing: at least two SetSubnets.
    expect(w.elbv2.callCount('SetSubnets')).toBeGreaterThanOrEqual(2);
  });

  it('adding a zone is one SetSubnets that keeps the other zones as they are', async () => {
    await apply({ [ANNOTATION.subnets]: 'public-eu-west-1a' });
    w.resetCounters();
    await apply({ [ANNOTATION.subnets]: 'public-eu-west-1a, public-eu-west-1c' });
    expect(zonesOf()).toEqual([`eu-west-1a:${subnet(10)}`, `eu-west-1c:${subnet(12)}`]);
    expect(w.elbv2.callCount('SetSubnets')).toBe(1);
  });

  it('a new Elastic IP for one zone moves that zone only; the load balancer stays', async () => {
    const subnets = { [ANNOTATION.subnets]: 'public-eu-west-1a, public-eu-west-1b' };
    await apply({ ...subnets, [ANNOTATION.eipAllocations]: 'eipalloc-0a,eipalloc-0b' });
    const arn = onlyLb().arn;
    await apply({ ...subnets, [ANNOTATION.eipAllocations]: 'eipalloc-0a,eipalloc-0c' });
    expect(onlyLb().arn).toBe(arn);
    expect(zonesOf()).toEqual([`eu-west-1a:${subnet(10)}:eipalloc-0a`, `eu-west-1b:${subnet(11)}:eipalloc-0c`]);
  });

  it('Elastic IPs changed without a subnets annotation apply to the subnets in use, in zone order', async () => {
    await apply({});
    expect(onlyLb().subnets).toHaveLength(3);
    await apply({ [ANNOTATION.eipAllocations]: 'eipalloc-01,eipalloc-02,eipalloc-03' });
    // Every zone changes address: nothing could stay while they move, so the load balancer is made again.
    expect(zonesOf()).toEqual([
      `eu-west-1a:${subnet(10)}:eipalloc-01`,
      `eu-west-1b:${subnet(11)}:eipalloc-02`,
      `eu-west-1c:${subnet(12)}:eipalloc-03`,
    ]);
    expect(eventsOf('ReplacingLoadBalancer').join('\n')).toMatch(/every zone changes/);
    expect(onlyLb().state).toBe('active');
    expect(service().status?.loadBalancer?.ingress?.[0]?.hostname).toBe(onlyLb().dnsName);
  });

  it('unchanged Elastic IPs cost no DescribeSubnets on a quiet pass', async () => {
    await apply({ [ANNOTATION.eipAllocations]: 'eipalloc-01,eipalloc-02,eipalloc-03' });
    w.resetCounters();
    await w.converge([w.serviceKey('web')]);
    expect(w.ec2.callCount('DescribeSubnets')).toBe(0);
    expect(w.awsWrites()).toBe(0);
  });
});

describe('dual-stack', () => {
  beforeEach(() => {
    withIpv6PublicSubnets(w);
  });

  it('ipv4 -> dualstack changes the load balancer in place and opens the ports to IPv6 clients', async () => {
    await apply({});
    const arn = onlyLb().arn;
    expect(onlyLb().ipAddressType).toBe('ipv4');
    await apply({ [ANNOTATION.ipAddressType]: 'dualstack' });
    expect(onlyLb()).toMatchObject({ arn, ipAddressType: 'dualstack' });
    expect(
      managedGroup()
        .ingress.map((r) => `${r.protocol}:${r.fromPort}:${r.cidrIpv4 ?? r.cidrIpv6}`)
        .sort(),
    ).toEqual(['icmp:3:0.0.0.0/0', 'icmpv6:2:::/0', 'tcp:80:0.0.0.0/0', 'tcp:80:::/0']);
  });

  it('IP targets of an IPv6 Service go to an ipv6 target group from the IPv6 EndpointSlice', async () => {
    w.kube.putEndpointSlice({
      metadata: { name: 'web-v6', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv6',
      endpoints: [{ addresses: ['2001:db8::10'], conditions: { ready: true } }],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });
    w.putSlice('web', [{ ip: '10.0.1.10' }]);
    await apply(
      { [ANNOTATION.ipAddressType]: 'dualstack', [ANNOTATION.nlbTargetType]: 'ip' },
      { spec: { ipFamilies: ['IPv6', 'IPv4'], ipFamilyPolicy: 'PreferDualStack' } },
    );
    const group = onlyGroup();
    expect(group.tg.ipAddressType).toBe('ipv6');
    expect(w.elbv2.targetsOf(group.tg.arn).map((t) => `${t.target.id}:${t.target.port}`)).toEqual([
      '2001:db8::10:8080',
    ]);
  });

  it('dualstack with a named subnet that has no IPv6 block: an Event naming the annotation, nothing created', async () => {
    await apply({ [ANNOTATION.ipAddressType]: 'dualstack', [ANNOTATION.subnets]: 'private-eu-west-1a' });
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(eventsOf('SyncLoadBalancerFailed').join('\n')).toMatch(/aws-load-balancer-subnets: .*no IPv6 CIDR block/);
  });
});

describe('Nodes without a cluster-tagged security group', () => {
  it('says so in a Warning Event when the load balancer is made, and not on quiet passes', async () => {
    w.addNode(3, { group: 'sg-00000000000untagged' });
    w.ec2.putSecurityGroup({
      groupId: 'sg-00000000000untagged',
      groupName: 'untagged',
      vpcId: 'vpc-0a1b2c3d',
      description: 'not tagged',
      tags: {},
      ingress: [],
    });
    // Only the untagged Node is a target.
    await apply({ [ANNOTATION.targetNodeLabels]: 'pool=untagged' });
    expect(eventsOf('NodeSecurityGroupMissing')).toEqual([]);
    w.kube.putNode({
      ...w.kube.nodes.get('node-3')!,
      metadata: { ...w.kube.nodes.get('node-3')!.metadata, labels: { pool: 'untagged' } },
    });
    await w.converge([w.serviceKey('web')]);
    expect(eventsOf('NodeSecurityGroupMissing')).toEqual([
      expect.stringMatching(/No security group tagged kubernetes\.io\/cluster\/.* on the target Nodes/),
    ]);
    await w.converge([w.serviceKey('web')]);
    expect(eventsOf('NodeSecurityGroupMissing')).toHaveLength(1);
  });
});
