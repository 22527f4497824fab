import { beforeEach, describe, expect, it } from 'vitest';
import type { SecurityGroup } from '../../shared/aws/ec2-port.ts';
import type { CreateTargetGroupInput } from '../../shared/aws/elbv2-port.ts';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { DEFAULT_HEALTH_CHECK } from '../../shared/load-balancers/health-check.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createServiceWorld, NODE_GROUP, type ServiceWorld, VPC } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { collectGarbage, GARBAGE_COLLECTION_KEY, garbageCollectionMessage, isGarbageCollectionKey } from './gc.ts';

let w: ServiceWorld;
beforeEach(async () => {
  w = createServiceWorld();
  w.addNode(1);
  w.putService('kept');
  w.putService('gone');
  await w.converge([w.serviceKey('kept'), w.serviceKey('gone')]);
  w.resetCounters();
});

const names = () => w.inventory();
const lbNames = () => names().loadBalancers.map((l) => l.name);
const collect = () => w.converge([garbageCollectionMessage({ eventType: 'RESYNC', eventId: `gc-${Math.random()}` })]);

const targetGroupInput = (name: string): CreateTargetGroupInput => ({
  name,
  protocol: 'TCP',
  port: 30080,
  targetType: 'instance',
  vpcId: VPC,
  healthCheck: { ...DEFAULT_HEALTH_CHECK },
  tags: {},
});
const group = (groupId: string, vpcId: string, tags: Record<string, string>): SecurityGroup => ({
  groupId,
  groupName: groupId,
  vpcId,
  description: '',
  tags,
  ingress: [],
});

/** The Service vanishes without its finalizer running (force-removed, or a controller crash long ago). */
function forceRemove(name: string) {
  w.kube.services.delete(`default/${name}`);
}

describe('garbage collection', () => {
  it('is a Service key without a namespace', () => {
    expect(isGarbageCollectionKey(GARBAGE_COLLECTION_KEY)).toBe(true);
    expect(isGarbageCollectionKey({ kind: 'Service', namespace: 'default', name: 'garbage-collection' })).toBe(false);
  });

  it('removes everything of a Service that is gone, and nothing of one that is alive', async () => {
    const before = names();
    forceRemove('gone');

    await collect();

    expect(lbNames()).toEqual([expect.stringMatching(/-kept-/)]);
    expect(names().targetGroups.map((g) => g.name)).toEqual([expect.stringMatching(/-kept-/)]);
    expect(names().securityGroups.map((g) => g.name)).toEqual([
      expect.stringMatching(/^k8s-elb-.*-kept-/),
      'k8s-traffic-test-cluster',
      'nodes',
    ]);
    // The kept Service's resources are exactly as they were, and so are the Node rules it needs.
    expect(names().loadBalancers).toEqual(before.loadBalancers.filter((l) => l.name.includes('-kept-')));
    expect(w.ec2.securityGroups.get(NODE_GROUP)!.ingress.filter((r) => r.description)).toHaveLength(1);
    expect(w.metrics.total(MetricName.LoadBalancerGarbageCollected, { resource: 'LoadBalancer' })).toBe(1);
    expect(w.metrics.total(MetricName.LoadBalancerGarbageCollected, { resource: 'SecurityGroup' })).toBe(1);
  });

  it('a Service that is no longer ours (type changed, finalizer gone) loses its resources', async () => {
    w.kube.mutateService('default', 'gone', (s) => {
      s.spec!.type = 'ClusterIP';
      s.metadata.finalizers = [];
    });
    await collect();
    expect(lbNames()).toEqual([expect.stringMatching(/-kept-/)]);
  });

  it('leaves a Service being deleted to its own key', async () => {
    w.kube.deleteService('default', 'gone');
    await collectGarbage(w.serviceDeps);
    expect(lbNames()).toHaveLength(2);
  });

  it("removes a live Service's target group left over from an earlier spec, never one still in use", async () => {
    // A crash between moving the listener and deleting the old target group leaves this behind.
    const stale = await w.elbv2Port.createTargetGroup({
      name: 'test-clu-default-kept-81-aaaaaaa',
      protocol: 'TCP',
      port: 30081,
      targetType: 'instance',
      vpcId: VPC,
      healthCheck: { ...DEFAULT_HEALTH_CHECK },
      tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'kubernetes.io/service-name': 'default/kept' },
    });
    expect(stale).not.toBe('name-taken');
    await collect();
    expect(names().targetGroups.map((g) => g.name)).toHaveLength(2);
    expect(names().targetGroups.map((g) => g.name)).not.toContain('test-clu-default-kept-81-aaaaaaa');
  });

  it('never touches what lacks our cluster tag or is tagged shared', async () => {
    forceRemove('gone');
    forceRemove('kept');
    const owner = { 'kubernetes.io/service-name': 'default/gone' };
    w.elbv2.putLoadBalancer({
      name: 'untagged',
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: makeSubnet({ index: 10 }).subnetId }],
      securityGroups: [],
      tags: owner,
    });
    w.elbv2.putLoadBalancer({
      name: 'shared-one',
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: makeSubnet({ index: 11 }).subnetId }],
      securityGroups: [],
      tags: { ...owner, [`kubernetes.io/cluster/${CLUSTER}`]: 'shared' },
    });
    w.elbv2.putLoadBalancer({
      name: 'other-cluster',
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: makeSubnet({ index: 12 }).subnetId }],
      securityGroups: [],
      tags: { ...owner, 'kubernetes.io/cluster/other': 'owned' },
    });
    w.ec2.putSecurityGroup({
      groupId: 'sg-000000000000shrd',
      groupName: 'shared-group',
      vpcId: VPC,
      description: '',
      tags: { ...owner, [`kubernetes.io/cluster/${CLUSTER}`]: 'shared' },
      ingress: [],
    });

    await collect();

    expect(lbNames().sort()).toEqual(['other-cluster', 'shared-one', 'untagged']);
    expect(w.ec2.securityGroups.has('sg-000000000000shrd')).toBe(true);
    expect(w.ec2.securityGroups.has(NODE_GROUP)).toBe(true);
  });

  it('stays in its VPC: the same owned resources of a Service that is gone, in a second VPC, are left untouched', async () => {
    const other = 'vpc-0000000000000two';
    const owned = { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'kubernetes.io/service-name': 'default/gone' };
    const subnet = w.ec2.putSubnet(makeSubnet({ index: 40, zone: 'eu-west-1a', vpcId: other }));
    // Another stage of the same cluster name: its own backend group, Node group with our rule, load balancer group.
    const backend = w.ec2.putSecurityGroup({
      ...group('sg-00000000000twoback', other, owned),
      groupName: `k8s-traffic-${CLUSTER}`,
    });
    const nodes = w.ec2.putSecurityGroup({
      ...group('sg-00000000000twonode', other, { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' }),
      ingress: [
        {
          protocol: 'tcp',
          fromPort: 30000,
          toPort: 32767,
          sourceGroupId: backend.groupId,
          description: `kubernetes.io/rule/nlb/backend=${CLUSTER}`,
        },
      ],
    });
    // Its load balancer group has the very name of ours for the Service (names are unique per VPC only).
    const goneGroupName = names().securityGroups.find(
      (g) => g.name.startsWith('k8s-elb-') && g.name.includes('-gone-'),
    )!.name;
    const lbGroup = w.ec2.putSecurityGroup({
      ...group('sg-00000000000twolbsg', other, owned),
      groupName: goneGroupName,
    });
    const lb = w.elbv2.putLoadBalancer({
      name: `${CLUSTER}-default-gone-twotwo`,
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: subnet.subnetId }],
      securityGroups: [lbGroup.groupId],
      tags: owned,
    });
    const tg = await w.elbv2Port.createTargetGroup({
      ...targetGroupInput('test-clu-default-gone-80-twotwo'),
      vpcId: other,
      tags: owned,
    });
    if (tg === 'name-taken') throw new Error('taken');
    // The fake states each one's VPC as the adapter maps VpcId.
    expect([lb.vpcId, tg.vpcId]).toEqual([other, other]);
    forceRemove('gone');

    await collect();

    // In VPC_ID, everything of the Service that is gone was collected...
    const mine = names();
    expect(mine.loadBalancers.filter((l) => l.name.includes('-gone-')).map((l) => l.name)).toEqual([lb.name]);
    expect(mine.targetGroups.filter((g) => g.name.includes('-gone-')).map((g) => g.name)).toEqual([tg.name]);
    const sameName = [...w.ec2.securityGroups.values()].filter((g) => g.groupName === goneGroupName);
    expect(sameName.map((g) => g.groupId)).toEqual([lbGroup.groupId]);
    expect(w.metrics.total(MetricName.LoadBalancerGarbageCollected, { resource: 'LoadBalancer' })).toBe(1);
    expect(w.metrics.total(MetricName.LoadBalancerGarbageCollected, { resource: 'TargetGroup' })).toBe(1);
    expect(w.metrics.total(MetricName.LoadBalancerGarbageCollected, { resource: 'SecurityGroup' })).toBe(1);
    // ... and in the other VPC nothing was touched, not even our rule on its Node group.
    expect(w.elbv2.loadBalancerNamed(lb.name)?.arn).toBe(lb.arn);
    expect(w.elbv2.targetGroupNamed(tg.name)?.arn).toBe(tg.arn);
    expect(w.ec2.securityGroups.get(lbGroup.groupId)).toEqual(lbGroup);
    expect(w.ec2.securityGroups.get(backend.groupId)).toEqual(backend);
    expect(w.ec2.securityGroups.get(nodes.groupId)).toEqual(nodes);
  });

  it('leaves alone a load balancer or target group whose VPC is not stated', async () => {
    const owned = { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'kubernetes.io/service-name': 'default/gone' };
    const lb = w.elbv2.putLoadBalancer({
      name: `${CLUSTER}-default-gone-novpc`,
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: makeSubnet({ index: 10 }).subnetId }],
      securityGroups: [],
      tags: owned,
    });
    const tg = await w.elbv2Port.createTargetGroup({
      ...targetGroupInput('test-clu-default-gone-80-novpc'),
      tags: owned,
    });
    if (tg === 'name-taken') throw new Error('taken');
    // The adapter maps an absent VpcId to undefined.
    w.elbv2.loadBalancers.get(lb.arn)!.lb.vpcId = undefined;
    w.elbv2.targetGroups.get(tg.arn)!.tg.vpcId = undefined;
    forceRemove('gone');

    await collect();

    expect(lbNames().sort()).toEqual([lb.name, expect.stringMatching(/-kept-/)].sort());
    expect(w.elbv2.targetGroupNamed(tg.name)?.arn).toBe(tg.arn);
    expect(w.metrics.total(MetricName.LoadBalancerGarbageCollected, { resource: 'LoadBalancer' })).toBe(1);
  });

  it('waits for the network interfaces of a deleted load balancer by requeueing, then finishes', async () => {
    forceRemove('gone');
    const result = await collectGarbage(w.serviceDeps);
    expect(result).toEqual({ requeueAfterSeconds: 30 });
    expect(names().securityGroups).toHaveLength(4);
    await collect();
    expect(names().securityGroups).toHaveLength(3);
    w.resetCounters();
    expect(await collectGarbage(w.serviceDeps)).toBeUndefined();
    expect(w.awsWrites()).toBe(0);
  });

  it('with nothing to collect it only reads: one call per list, tags 20 ARNs at a time', async () => {
    await collectGarbage(w.serviceDeps);
    expect(w.awsWrites()).toBe(0);
    expect(w.elbv2.callCount('DescribeLoadBalancers')).toBe(1);
    expect(w.elbv2.callCount('DescribeTargetGroups')).toBe(1);
    expect(w.elbv2.callCount('DescribeTags')).toBe(1);
    expect(w.ec2.callCount('DescribeSecurityGroups')).toBe(1);
    expect(w.kube.callCount('listServices')).toBe(1);
  });

  it('revokes the Node rules no Service needs any more, and keeps those one does', async () => {
    const ours = () =>
      w.ec2.securityGroups
        .get(NODE_GROUP)!
        .ingress.filter((r) => r.description === `kubernetes.io/rule/nlb/backend=${CLUSTER}`)
        .map((r) => `${r.protocol}:${r.fromPort}-${r.toPort}`)
        .sort();
    w.kube.mutateService('default', 'kept', (s) => {
      s.spec!.ports!.push({ name: 'dns', protocol: 'UDP', port: 53, targetPort: 53, nodePort: 30053 });
    });
    await w.converge([w.serviceKey('kept')]);
    expect(ours()).toEqual(['tcp:30000-32767', 'udp:30000-32767']);
    w.kube.mutateService('default', 'kept', (s) => {
      s.spec!.ports = s.spec!.ports!.filter((p) => p.protocol === 'TCP');
    });
    await w.converge([w.serviceKey('kept')]);
    // Shared rules are never revoked by one Service's reconcile...
    expect(ours()).toEqual(['tcp:30000-32767', 'udp:30000-32767']);
    // ... only by the collector, once no Service needs them.
    await collect();
    expect(ours()).toEqual(['tcp:30000-32767']);
    forceRemove('kept');
    forceRemove('gone');
    await collect();
    expect(ours()).toEqual([]);
    // Rules of others on the Node group are never touched.
    expect(w.ec2.securityGroups.get(NODE_GROUP)!.ingress).toHaveLength(1);
  });

  it("keeps the Node rules an Ingress's Application Load Balancer needs, on the shared backend group", async () => {
    const ours = () =>
      w.ec2.securityGroups
        .get(NODE_GROUP)!
        .ingress.filter((r) => r.description === `kubernetes.io/rule/nlb/backend=${CLUSTER}`)
        .map((r) => `${r.protocol}:${r.fromPort}-${r.toPort}`);
    expect(ours()).toEqual(['tcp:30000-32767']);
    const backend = [...w.ec2.securityGroups.values()].find((g) => g.groupName === `k8s-traffic-${CLUSTER}`)!;
    // An Ingress's load balancer (made as the Ingress controller makes it): the backend group, an instance target group.
    const alb = await w.elbv2Port.createLoadBalancer({
      name: 'k8s-shop-0123456789',
      type: 'application',
      scheme: 'internet-facing',
      subnetMappings: [
        { subnetId: makeSubnet({ index: 10 }).subnetId },
        { subnetId: makeSubnet({ index: 11 }).subnetId },
      ],
      securityGroups: [backend.groupId],
      tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'ingress.k8s.aws/stack': 'shop' },
    });
    if (alb === 'name-taken') throw new Error('name taken');
    const tg = await w.elbv2Port.createTargetGroup({
      ...targetGroupInput('k8s-shop-web-0123456789'),
      protocol: 'HTTP',
      port: 31000,
      healthCheck: { ...DEFAULT_HEALTH_CHECK, protocol: 'HTTP', path: '/' },
    });
    if (tg === 'name-taken') throw new Error('name taken');
    await w.elbv2Port.createApplicationListener(
      alb.arn,
      {
        port: 80,
        protocol: 'HTTP',
        defaultActions: [
          { type: 'forward', targetGroups: [{ arn: tg.arn, weight: 1 }], stickiness: { enabled: false } },
        ],
      },
      {},
    );
    forceRemove('kept');
    forceRemove('gone');
    await collect();
    // No Service needs the node port range any more; the Ingress's load balancer does.
    expect(ours()).toEqual(['tcp:30000-32767']);
    await w.elbv2Port.deleteLoadBalancer(alb.arn);
    await w.elbv2Port.deleteTargetGroup(tg.arn);
    await collect();
    expect(ours()).toEqual([]);
  });

  it('revokes no Node rule while a Service with IP targets on a named port needs what only its endpoints say', async () => {
    w.putService('named', {
      annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'web' }],
    });
    w.putSlice('named', [{ ip: '10.0.1.9' }], { ports: [{ name: 'http', protocol: 'TCP', port: 9999 }] });
    await w.converge([w.serviceKey('named')]);
    const rules = () => w.ec2.securityGroups.get(NODE_GROUP)!.ingress.length;
    const before = rules();
    await collect();
    expect(rules()).toBe(before);
  });

  it('keeps everything of a Service whose annotations cannot be read', async () => {
    w.kube.mutateService('default', 'kept', (s) => {
      s.metadata.annotations = { [ANNOTATION.healthcheckInterval]: 'often' };
    });
    await collect();
    expect(lbNames()).toHaveLength(2);
  });
});
