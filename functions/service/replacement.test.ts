import { beforeEach, describe, expect, it } from 'vitest';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { DEFAULT_HEALTH_CHECK } from '../../shared/load-balancers/health-check.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createServiceWorld, NODE_GROUP, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { garbageCollectionMessage } from './gc.ts';
import { withIpv6PublicSubnets } from './testing/service.ts';

/**
 * What users depend on while their load balancer changes under them: the one the status names keeps serving
 * until its successor does, a load balancer made by the reference controller is adopted as it is, address
 * families move both ways, and resources AWS does not show yet are waited for.
 */

let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
  w.addNode(1);
  w.addNode(2);
});

const service = (): Service => w.kube.services.get('default/web')!;
const hostname = () => service().status?.loadBalancer?.ingress?.[0]?.hostname;
const eventsOf = (reason: string) => w.kube.eventsFor('Service', 'web', reason).map((e) => e.message);
const lbs = () => [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
const onlyLb = () => {
  expect(lbs()).toHaveLength(1);
  return lbs()[0]!;
};
const targetsOf = (groupArn: string) =>
  w.elbv2
    .targetsOf(groupArn)
    .filter((t) => t.state !== 'draining')
    .map((t) => t.target.id)
    .sort();
const edit = (change: (s: Service) => void) => w.kube.mutateService('default', 'web', change);
let resync = 0;
const pass = () => w.reconcile(w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: `p${++resync}` }));

describe('a renamed load balancer', () => {
  it('keeps the old one serving and named in the status until the new one serves, then deletes it after the grace', async () => {
    w.putService('web');
    await w.converge([w.serviceKey('web')]);
    const old = onlyLb();
    w.elbv2.provisioningDescribes = 100;
    edit((s) => {
      s.metadata.annotations = { [ANNOTATION.name]: 'renamed-web' };
    });

    await pass();
    expect(
      lbs()
        .map((lb) => lb.name)
        .sort(),
    ).toEqual([old.name, 'renamed-web'].sort());
    expect(hostname()).toBe(old.dnsName);
    expect(w.elbv2.loadBalancerNamed(old.name)!.state).toBe('active');
    expect(w.elbv2.listenersOf(old.arn)).toHaveLength(1);

    // The garbage collector leaves both alone meanwhile: one serves, the other is its successor.
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-1' })]);
    expect(lbs()).toHaveLength(2);

    w.elbv2.activate('renamed-web');
    await w.converge([w.serviceKey('web')]);
    expect(onlyLb().name).toBe('renamed-web');
    expect(hostname()).toBe(onlyLb().dnsName);
    expect(eventsOf('ReplacingLoadBalancer').some((m) => m.includes(`Deleting load balancer ${old.name}`))).toBe(true);
  });

  it('a crash between moving the status and marking the old one: the next pass finds it by its successor and it serves out the grace', async () => {
    w.putService('web');
    await w.converge([w.serviceKey('web')]);
    const old = onlyLb();
    edit((s) => {
      s.metadata.annotations = { [ANNOTATION.name]: 'renamed-web' };
    });
    w.elbv2.provisioningDescribes = 100;
    await pass();
    w.elbv2.activate('renamed-web');
    // The status moves by hand, as the crashed pass left it; the old one is still there, not marked.
    const next = w.elbv2.loadBalancerNamed('renamed-web')!;
    w.kube.putService({ ...service(), status: { loadBalancer: { ingress: [{ hostname: next.dnsName }] } } });
    const movedAt = w.clock.now();
    await pass();
    expect(w.elbv2.loadBalancers.get(old.arn)?.tags['serverless-ccm/replaced-at']).toBe(
      new Date(movedAt).toISOString(),
    );
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-2' })]);
    expect(w.elbv2.loadBalancerNamed(old.name)).toBeDefined();
    await w.converge([w.serviceKey('web')]);
    expect(onlyLb().name).toBe('renamed-web');
    expect(w.clock.now()).toBeGreaterThanOrEqual(movedAt + 360_000);
  });
});

describe('a load balancer made by the reference cloud controller', () => {
  const uid = '5e1f3b2a-9c4d-4e6f-8a7b-0c1d2e3f4a5b';
  const referenceName = `a${uid.replace(/-/g, '')}`.slice(0, 32);

  async function referenceWorld() {
    const tags = { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'kubernetes.io/service-name': 'default/web' };
    const lb = w.elbv2.putLoadBalancer({
      name: referenceName,
      scheme: 'internet-facing',
      subnetMappings: [10, 11, 12].map((index) => ({ subnetId: makeSubnet({ index }).subnetId })),
      securityGroups: [],
      tags,
    });
    const group = await w.elbv2Port.createTargetGroup({
      name: 'k8s-default-web-0123456789',
      protocol: 'TCP',
      port: 30080,
      targetType: 'instance',
      vpcId: 'vpc-0a1b2c3d',
      healthCheck: { ...DEFAULT_HEALTH_CHECK },
      tags,
    });
    if (group === 'name-taken') throw new Error('unexpected');
    await w.elbv2Port.createListener(lb.arn, { port: 80, protocol: 'TCP', targetGroupArn: group.arn }, {});
    w.kube.putService({
      metadata: { name: 'web', namespace: 'default', uid, annotations: { [ANNOTATION.type]: 'nlb' } },
      spec: {
        type: 'LoadBalancer',
        ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
        externalTrafficPolicy: 'Cluster',
      },
      status: { loadBalancer: { ingress: [{ hostname: lb.dnsName }] } },
    });
    return { lb, group };
  }

  it('is adopted in place: same load balancer and DNS name, its target group kept, rules on the Nodes group, one Warning', async () => {
    const { lb, group } = await referenceWorld();
    await w.converge([w.serviceKey('web')]);
    expect(onlyLb()).toMatchObject({ arn: lb.arn, dnsName: lb.dnsName, securityGroups: [] });
    expect(hostname()).toBe(lb.dnsName);
    expect(w.elbv2.listenersOf(lb.arn)[0]!.targetGroupArn).toBe(group.arn);
    expect(targetsOf(group.arn)).toHaveLength(2);
    const rules = w.ec2.securityGroups
      .get(NODE_GROUP)!
      .ingress.filter((r) => r.description?.endsWith(`=${referenceName}`))
      .map((r) => `${r.description!.split('/')[3]!.split('=')[0]}:${r.protocol}:${r.fromPort}:${r.cidrIpv4}`)
      .sort();
    expect(rules).toContain('client:tcp:30080:0.0.0.0/0');
    expect(rules).toContain('mtu:icmp:3:0.0.0.0/0');
    expect(rules.some((r) => r.startsWith('health:tcp:30080:10.0.'))).toBe(true);
    expect(eventsOf('LoadBalancerWithoutSecurityGroups')).toHaveLength(1);

    // Quiet afterwards: nothing to write, no new Warning.
    w.resetCounters();
    await pass();
    expect(w.awsWrites()).toBe(0);
    expect(eventsOf('LoadBalancerWithoutSecurityGroups')).toEqual([]);
    // Never mistaken for garbage.
    await w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: 'gc-3' })]);
    expect(onlyLb().arn).toBe(lb.arn);
    expect(w.elbv2.targetGroups.has(group.arn)).toBe(true);
  });

  it('deleting the Service removes it, its target group and its rules on the Nodes group', async () => {
    const { lb } = await referenceWorld();
    await w.converge([w.serviceKey('web')]);
    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.loadBalancers.has(lb.arn)).toBe(false);
    expect(w.elbv2.targetGroups.size).toBe(0);
    expect(w.ec2.securityGroups.get(NODE_GROUP)!.ingress.filter((r) => r.description?.includes(referenceName))).toEqual(
      [],
    );
  });
});

describe('address families in every direction', () => {
  beforeEach(() => {
    withIpv6PublicSubnets(w);
    w.kube.putEndpointSlice({
      metadata: { name: 'web-v6', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv6',
      endpoints: [{ addresses: ['2001:db8::10'], conditions: { ready: true } }],
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });
    w.putSlice('web', [{ ip: '10.0.1.10' }]);
  });

  const ipTargets = { [ANNOTATION.nlbTargetType]: 'ip' };
  const dualstack = { ...ipTargets, [ANNOTATION.ipAddressType]: 'dualstack' };
  const set = async (annotations: Record<string, string>, families: ('IPv4' | 'IPv6')[]) => {
    if (w.kube.services.has('default/web')) {
      edit((s) => {
        s.metadata.annotations = annotations;
        s.spec = { ...s.spec, ipFamilies: families };
      });
    } else {
      w.putService('web', { annotations, spec: { ipFamilies: families } });
    }
    await w.converge([w.serviceKey('web')]);
    const lb = onlyLb();
    const groupArn = w.elbv2.listenersOf(lb.arn)[0]!.targetGroupArn!;
    return { lb, family: w.elbv2.targetGroups.get(groupArn)!.tg.ipAddressType, targets: targetsOf(groupArn) };
  };

  it.each([
    ['ipv4 -> dualstack -> ipv4 (IPv4 IP targets)', [ipTargets, dualstack, ipTargets], ['IPv4', 'IPv4', 'IPv4']],
    [
      'IPv4 IP targets -> IPv6 IP targets -> IPv4 IP targets',
      [ipTargets, dualstack, ipTargets],
      ['IPv4', 'IPv6', 'IPv4'],
    ],
    ['IPv6 IP targets (dualstack) -> IPv4 IP targets (dualstack)', [dualstack, dualstack], ['IPv6', 'IPv4']],
  ] as const)('%s converges in place, with no Warning', async (_, steps, families) => {
    let arn: string | undefined;
    for (const [i, annotations] of steps.entries()) {
      const family = families[i]!;
      const { lb, family: groupFamily, targets } = await set(annotations, [family]);
      arn ??= lb.arn;
      expect(lb.arn).toBe(arn);
      expect(lb.ipAddressType).toBe(annotations === dualstack ? 'dualstack' : 'ipv4');
      expect(groupFamily).toBe(family === 'IPv6' ? 'ipv6' : 'ipv4');
      expect(targets).toEqual([family === 'IPv6' ? '2001:db8::10' : '10.0.1.10']);
    }
    expect(eventsOf('SyncLoadBalancerFailed')).toEqual([]);
    expect(w.elbv2.targetGroups.size).toBe(1);
  });
});

describe('resources AWS does not show yet', () => {
  it('a security group and target groups just made: tried again shortly, then everything is in place', async () => {
    w.ec2.newSecurityGroupInvisibleCalls = 2;
    w.elbv2.newTargetGroupInvisibleCalls = 2;
    w.putService('web');
    await w.converge([w.serviceKey('web')]);
    const lb = onlyLb();
    expect(hostname()).toBe(lb.dnsName);
    expect(targetsOf(w.elbv2.listenersOf(lb.arn)[0]!.targetGroupArn!)).toHaveLength(2);
    expect(w.metrics.total(MetricName.FreshResourceNotVisible)).toBeGreaterThan(0);
    expect(eventsOf('SyncLoadBalancerFailed')).toEqual([]);
  });

  it('one that never shows up: tried again shortly a few times, then retried with backoff until the DLQ, never dropped', async () => {
    w.elbv2.newTargetGroupInvisibleCalls = 1_000;
    w.putService('web');
    await w.converge([w.serviceKey('web')]);
    const failures = eventsOf('SyncLoadBalancerFailed');
    expect(failures[0]).toMatch(/still unknown to AWS after 5 attempts \(TargetGroupNotFound\)/);
    // Every receive after the quick ones failed, and was told, until the queue gave the key to its DLQ.
    expect(failures.length).toBeGreaterThan(1);
    expect(w.metrics.total(MetricName.FreshResourceNotVisible)).toBe(4);
    expect(w.sqs.depth('service-dlq.fifo')).toBe(1);
  });
});
