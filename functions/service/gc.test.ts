import { beforeEach, describe, expect, it } from 'vitest';
import { makeSubnet } from '../../shared/aws/ec2-fake.ts';
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
    const stale = await w.elbv2.createTargetGroup({
      name: 'test-clu-default-kept-81-aaaaaaa',
      protocol: 'TCP',
      port: 30081,
      targetType: 'instance',
      vpcId: VPC,
      healthCheck: {
        protocol: 'TCP',
        port: 'traffic-port',
        intervalSeconds: 30,
        timeoutSeconds: 10,
        healthyThreshold: 3,
        unhealthyThreshold: 3,
      },
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
