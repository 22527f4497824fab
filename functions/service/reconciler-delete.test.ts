import { beforeEach, describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createServiceWorld, type ServiceWorld, VPC } from '../../test/helpers/service-world.ts';
import { ANNOTATION } from './annotations.ts';
import { serviceTesting } from './testing/service.ts';

let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
});
const { service, reasons, eventsOf, onlyLb, managedGroup, create } = serviceTesting(() => w);

describe('deleting', () => {
  beforeEach(async () => {
    w.addNode(1);
    await create('web');
    w.resetCounters();
  });

  it('deletes listeners, the NLB, target groups and the security group, then removes the finalizer', async () => {
    const lb = onlyLb();
    w.kube.deleteService('default', 'web');
    expect(service().metadata.deletionTimestamp).toBeDefined();

    // First pass: the load balancer goes; its network interfaces keep the group for a while.
    await w.reconcile(w.serviceKey('web', 'default', { eventType: 'DELETED', resourceVersion: '1' }));
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(w.elbv2.targetGroups.size).toBe(0);
    expect(managedGroup()).toBeDefined();
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    expect(w.metrics.total(MetricName.LoadBalancerCleanupPending, { reason: 'DependencyViolation' })).toBe(1);
    expect(w.metrics.total(MetricName.Requeues)).toBe(1);

    await w.converge([w.serviceKey('web', 'default', { eventType: 'DELETED', resourceVersion: '2' })]);
    expect(managedGroup()).toBeUndefined();
    expect(w.kube.services.has('default/web')).toBe(false);
    expect(reasons()).toEqual(['DeletingLoadBalancer', 'DeletedLoadBalancer']);
    expect(eventsOf('DeletedLoadBalancer')[0]).toContain(lb.name);
  });

  it('where AWS frees the security group at once, the pass that deletes the NLB deletes it too, and the finalizer goes', async () => {
    w.elbv2.eniDrainMs = 0;
    w.kube.deleteService('default', 'web');
    await w.reconcile(w.serviceKey('web', 'default', { eventType: 'DELETED', resourceVersion: '1' }));
    expect(w.inventory()).toMatchObject({ loadBalancers: [], targetGroups: [] });
    expect(managedGroup()).toBeUndefined();
    expect(w.kube.services.has('default/web')).toBe(false);
    expect(w.metrics.total(MetricName.Requeues)).toBe(0);
  });

  it('while the network interfaces hold the group, it is tried again within seconds, then less often', async () => {
    // Freed 4 s after the load balancer went: the Service is gone a few seconds later, not a requeue period later.
    w.elbv2.eniDrainMs = 4_000;
    const start = w.clock.now();
    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web', 'default', { eventType: 'DELETED', resourceVersion: '1' })]);
    expect(w.kube.services.has('default/web')).toBe(false);
    expect(w.clock.now() - start).toBeLessThan(10_000);
    // Held for minutes: retried less and less often, never more often than every 5 s, at most once a requeue period.
    w.resetCounters();
    await create('api');
    w.elbv2.eniDrainMs = 10 * 60_000;
    w.kube.deleteService('default', 'api');
    w.resetCounters();
    await w.converge([w.serviceKey('api', 'default', { eventType: 'DELETED', resourceVersion: '1' })]);
    expect(w.kube.services.has('default/api')).toBe(false);
    // 600 s at a 30 s requeue period: 20 attempts; the first ones sooner, a few more in all.
    expect(w.ec2.callCount('DeleteSecurityGroup')).toBeGreaterThan(20);
    expect(w.ec2.callCount('DeleteSecurityGroup')).toBeLessThan(26);
  });

  it('deletes the NLB with its listeners, untagged ones of an earlier version too, without a listener call', async () => {
    const lb = onlyLb();
    for (const listener of w.elbv2.listenersOf(lb.arn)) w.elbv2.listenerTags.set(listener.arn, {});
    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web', 'default', { eventType: 'DELETED', resourceVersion: '1' })]);
    expect(w.kube.services.has('default/web')).toBe(false);
    expect(w.elbv2.listeners.size).toBe(0);
    expect(w.elbv2.callCount('DeleteListener')).toBe(0);
    expect(w.elbv2.callCount('AddTags')).toBe(0);
  });

  it('type LoadBalancer -> ClusterIP: everything goes, the status is cleared, the finalizer removed', async () => {
    w.kube.mutateService('default', 'web', (s) => {
      s.spec!.type = 'ClusterIP';
    });
    await w.converge([w.serviceKey('web')]);
    expect(w.inventory()).toMatchObject({ loadBalancers: [], targetGroups: [] });
    expect(service().metadata.finalizers ?? []).toEqual([]);
    expect(service().status?.loadBalancer?.ingress).toBeUndefined();
  });

  it('handed to the AWS Load Balancer Controller (type external): ours goes and the Service is left to it', async () => {
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = { [ANNOTATION.type]: 'external' };
    });
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(service().metadata.finalizers ?? []).toEqual([]);
    w.resetCounters();
    await w.converge([w.serviceKey('web')]);
    expect(w.awsCalls()).toBe(0);
    expect(w.metrics.total(MetricName.ServicesSkipped, { reason: 'other-controller' })).toBe(1);
  });

  it("never deletes resources of those names that are not this Service's", async () => {
    const lb = onlyLb();
    // Everything now says it belongs to another Service (as if that one had taken the names).
    w.elbv2.loadBalancers.get(lb.arn)!.tags['kubernetes.io/service-name'] = 'other/web';
    for (const group of w.elbv2.targetGroups.values()) group.tags['kubernetes.io/service-name'] = 'other/web';
    managedGroup()!.tags['kubernetes.io/service-name'] = 'other/web';
    const before = w.inventory();
    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web')]);
    expect(w.kube.services.has('default/web')).toBe(false);
    // Nothing that says it is another Service's is touched.
    expect(w.inventory().loadBalancers).toEqual(before.loadBalancers);
    expect(w.inventory().targetGroups).toEqual(before.targetGroups);
    expect(managedGroup()).toBeDefined();
  });

  it('keeps the finalizer and says why while a foreign rule holds the security group', async () => {
    const group = managedGroup()!;
    w.ec2.putSecurityGroup({
      groupId: 'sg-00000000000000db',
      groupName: 'database',
      vpcId: VPC,
      description: '',
      tags: {},
      ingress: [
        {
          protocol: 'tcp',
          fromPort: 5432,
          toPort: 5432,
          sourceGroupId: group.groupId,
          description: 'from the web NLB',
        },
      ],
    });
    w.kube.deleteService('default', 'web');
    await w.converge([w.serviceKey('web')], w.serviceDeps, 20).catch(() => undefined);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    expect(eventsOf('SyncLoadBalancerFailed').at(-1)).toMatch(/sg-00000000000000db references sg-/);
    expect(w.ec2.securityGroups.get('sg-00000000000000db')!.ingress).toHaveLength(1);
  });
});
