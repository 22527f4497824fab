import { beforeEach, describe, expect, it } from 'vitest';
import type { Service } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createServiceWorld, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { serviceTesting } from './testing/service.ts';

let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
});
const { hostname, reasons, eventsOf, onlyLb, groupsOf, managedGroup, backendGroup, nodeRuleRanges, targetsOf, create } =
  serviceTesting(() => w);

describe('keeping it in line', () => {
  beforeEach(async () => {
    w.addNode(1);
    w.addNode(2);
    await create('web');
    w.resetCounters();
  });

  const edit = async (change: (s: Service) => void) => {
    w.kube.mutateService('default', 'web', change);
    await w.converge([w.serviceKey('web')]);
  };

  it('a new port gets a listener and target group; a removed one loses both', async () => {
    await edit((s) => {
      s.spec!.ports!.push({ name: 'admin', protocol: 'TCP', port: 9000, targetPort: 9000, nodePort: 30900 });
    });
    expect(
      w.elbv2
        .listenersOf(onlyLb().arn)
        .map((l) => l.port)
        .sort(),
    ).toEqual([80, 9000]);
    expect(w.elbv2.targetGroups.size).toBe(2);
    expect(reasons()).toEqual(['EnsuringLoadBalancer', 'EnsuredLoadBalancer']);

    await edit((s) => {
      s.spec!.ports = s.spec!.ports!.filter((p) => p.port !== 80);
    });
    expect(w.elbv2.listenersOf(onlyLb().arn).map((l) => l.port)).toEqual([9000]);
    expect([...w.elbv2.targetGroups.values()].map((g) => g.tg.port)).toEqual([30900]);
    expect(nodeRuleRanges()).toEqual(['tcp:30000-32767']);
    expect(
      managedGroup()!
        .ingress.map((r) => `${r.protocol}:${r.fromPort}`)
        .sort(),
    ).toEqual(['icmp:3', 'tcp:9000']);
  });

  it('a changed health check annotation modifies the target group in place', async () => {
    const before = [...w.elbv2.targetGroups.values()][0]!.tg.arn;
    await edit((s) => {
      s.metadata.annotations = { [ANNOTATION.healthcheckProtocol]: 'http', [ANNOTATION.healthcheckPath]: '/ready' };
    });
    const [group] = groupsOf(onlyLb().arn);
    expect(group?.arn).toBe(before);
    expect(group?.healthCheck).toMatchObject({ protocol: 'HTTP', path: '/ready', timeoutSeconds: 6 });
    expect(w.elbv2.callCount('ModifyTargetGroup')).toBe(1);
  });

  it('a changed node port re-registers the targets on it', async () => {
    await edit((s) => {
      s.spec!.ports![0]!.nodePort = 31000;
    });
    const [group] = groupsOf(onlyLb().arn);
    expect(targetsOf(group!.arn).every((t) => t.endsWith(':31000'))).toBe(true);
  });

  it('changed source ranges replace the managed group rules', async () => {
    await edit((s) => {
      s.spec!.loadBalancerSourceRanges = ['198.51.100.0/24'];
    });
    expect(
      managedGroup()!
        .ingress.map((r) => `${r.protocol}:${r.cidrIpv4}`)
        .sort(),
    ).toEqual(['icmp:198.51.100.0/24', 'tcp:198.51.100.0/24']);
  });

  it('scheme internet-facing -> internal: the new NLB is built beside the old one, which keeps serving and stays in the status until the new one is active', async () => {
    const old = onlyLb();
    const oldGroup = groupsOf(old.arn)[0]!;
    w.elbv2.provisioningDescribes = 100;
    w.kube.mutateService('default', 'web', (s) => {
      s.metadata.annotations = { [ANNOTATION.scheme]: 'internal' };
    });

    // First pass: the successor exists and provisions; the old one is untouched and still named.
    await w.reconcile(w.serviceKey('web', 'default', { eventType: 'MODIFIED', resourceVersion: '10' }));
    const both = [...w.elbv2.loadBalancers.values()].map((l) => l.lb);
    expect(both).toHaveLength(2);
    const next = both.find((lb) => lb.arn !== old.arn)!;
    expect(next).toMatchObject({ scheme: 'internal', state: 'provisioning' });
    expect(next.name).not.toBe(old.name);
    expect(w.elbv2.loadBalancers.get(old.arn)!.lb.state).toBe('active');
    expect(hostname()).toBe(old.dnsName);
    expect(targetsOf(oldGroup.arn)).toHaveLength(2);
    expect(groupsOf(old.arn).map((g) => g.arn)).toEqual([oldGroup.arn]);
    expect(eventsOf('ReplacingLoadBalancer')[0]).toMatch(
      /scheme internet-facing -> internal cannot be changed in place/,
    );

    // Still provisioning: nothing moves.
    await w.reconcile(w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: 'r1' }));
    expect(w.elbv2.loadBalancers.size).toBe(2);
    expect(hostname()).toBe(old.dnsName);

    // Active: the status names the new one, and only then the old one goes.
    w.elbv2.activate(next.name);
    await w.converge([w.serviceKey('web')]);
    const lb = onlyLb();
    expect(lb.arn).toBe(next.arn);
    expect(hostname()).toBe(lb.dnsName);
    expect(targetsOf(groupsOf(lb.arn)[0]!.arn)).toHaveLength(2);
    expect(w.elbv2.targetGroups.has(oldGroup.arn)).toBe(false);
    expect(w.elbv2.tagsOf(lb.arn)?.['serverless-ccm/replaces']).toBeUndefined();

    // And back: the successor of the successor takes the first name again.
    await edit((s) => {
      s.metadata.annotations = {};
    });
    expect(onlyLb()).toMatchObject({ name: old.name, scheme: 'internet-facing' });
    expect(hostname()).toBe(onlyLb().dnsName);
  });

  it('a load balancer that failed to provision is replaced, with an Event', async () => {
    const old = onlyLb();
    w.elbv2.loadBalancers.get(old.arn)!.lb.state = 'failed';
    w.elbv2.loadBalancers.get(old.arn)!.lb.stateReason = 'capacity';
    await w.converge([w.serviceKey('web')]);
    expect(onlyLb().arn).not.toBe(old.arn);
    expect(eventsOf('ReplacingLoadBalancer')[0]).toMatch(/failed to provision \(capacity\)/);
    expect(hostname()).toBe(onlyLb().dnsName);
  });

  it('tags listeners on create with the ownership tags of the load balancer, additional tags included', async () => {
    await edit((s) => {
      s.metadata.annotations = { [ANNOTATION.additionalResourceTags]: 'team=web' };
      s.spec!.ports!.push({ name: 'admin', protocol: 'TCP', port: 9000, targetPort: 9000, nodePort: 30900 });
    });
    const lb = onlyLb();
    const lbTags = w.elbv2.tagsOf(lb.arn);
    expect(lbTags).toEqual({
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
      'kubernetes.io/service-name': 'default/web',
      team: 'web',
    });
    // The new listener was born with them; the old one got the additional tag like the load balancer did.
    const listeners = w.elbv2.listenersOf(lb.arn);
    expect(listeners).toHaveLength(2);
    for (const listener of listeners) expect(w.elbv2.tagsOf(listener.arn)).toEqual(lbTags);
    w.resetCounters();
    await w.converge([w.serviceKey('web')]);
    expect(w.awsWrites()).toBe(0);
  });

  it('a listener an earlier version made untagged gets the tags before it is modified, once', async () => {
    const lb = onlyLb();
    const [listener] = w.elbv2.listenersOf(lb.arn);
    w.elbv2.listenerTags.set(listener!.arn, {});
    const writes: string[] = [];
    w.elbv2.beforeCall = (op) => {
      if (['AddTags', 'ModifyListener', 'DeleteListener', 'CreateListener'].includes(op)) writes.push(op);
    };
    w.putSlice('web', [{ ip: '10.0.1.5' }]);
    await edit((s) => {
      s.metadata.annotations = { [ANNOTATION.nlbTargetType]: 'ip' };
    });
    expect(writes).toEqual(['AddTags', 'ModifyListener']);
    expect(w.elbv2.tagsOf(listener!.arn)).toEqual(w.elbv2.tagsOf(lb.arn));
    w.resetCounters();
    writes.length = 0;
    await w.converge([w.serviceKey('web')]);
    expect(w.awsWrites()).toBe(0);
  });

  it('an untagged listener on a removed port gets the tags before it is deleted', async () => {
    const [listener] = w.elbv2.listenersOf(onlyLb().arn);
    w.elbv2.listenerTags.set(listener!.arn, { team: 'someone' });
    const writes: string[] = [];
    w.elbv2.beforeCall = (op) => {
      if (['AddTags', 'DeleteListener', 'CreateListener'].includes(op)) writes.push(op);
    };
    await edit((s) => {
      s.spec!.ports = [{ name: 'admin', protocol: 'TCP', port: 9000, targetPort: 9000, nodePort: 30900 }];
    });
    expect(writes).toEqual(['AddTags', 'DeleteListener', 'CreateListener']);
    expect(w.elbv2.listenersOf(onlyLb().arn).map((l) => l.port)).toEqual([9000]);
  });

  it('target type instance -> ip moves the listener to a new target group and deletes the old one', async () => {
    const old = [...w.elbv2.targetGroups.values()][0]!.tg;
    w.putSlice('web', [{ ip: '10.0.1.5' }, { ip: '10.0.1.6', ready: false }]);
    await edit((s) => {
      s.metadata.annotations = { [ANNOTATION.nlbTargetType]: 'ip' };
    });
    const groups = [...w.elbv2.targetGroups.values()].map((g) => g.tg);
    expect(groups).toHaveLength(1);
    expect(groups[0]).toMatchObject({ targetType: 'ip', port: 8080 });
    expect(groups[0]!.name).not.toBe(old.name);
    expect(w.elbv2.listenersOf(onlyLb().arn)[0]?.targetGroupArn).toBe(groups[0]!.arn);
    expect(targetsOf(groups[0]!.arn)).toEqual(['10.0.1.5:8080']);
    expect(eventsOf('ReplacingLoadBalancer')).toEqual([
      `Replacing target group ${old.name} with ${groups[0]!.name} on port 80 (target type instance -> ip)`,
    ]);
    // The Pod port is allowed too; the node port range rule stays until the garbage collector finds it unneeded.
    expect(nodeRuleRanges()).toEqual(['tcp:30000-32767', 'tcp:8080-8080']);
  });

  it('a renamed load balancer (annotation) is created, and the old one and its target groups go', async () => {
    const old = onlyLb();
    await edit((s) => {
      s.metadata.annotations = { [ANNOTATION.name]: 'renamed-web' };
    });
    expect(onlyLb().name).toBe('renamed-web');
    expect(hostname()).toBe(onlyLb().dnsName);
    expect(w.elbv2.loadBalancerNamed(old.name)).toBeUndefined();
    expect(w.elbv2.targetGroups.size).toBe(1);
    expect(onlyLb().securityGroups).toContain(backendGroup()!.groupId);
  });
});

describe('targets follow the cluster', () => {
  it('instance targets: Nodes joining, leaving, not Ready (kept), excluded, tainted by the autoscaler, or off the target-node-labels', async () => {
    const a = w.addNode(1, { labels: { pool: 'web' } });
    const b = w.addNode(2, { labels: { pool: 'web' } });
    w.addNode(3, { labels: { pool: 'batch' } });
    await create('web', { annotations: { [ANNOTATION.targetNodeLabels]: 'pool=web' } });
    const group = () => groupsOf(onlyLb().arn)[0]!;
    expect(targetsOf(group().arn)).toEqual([`${a.instance.instanceId}:30080`, `${b.instance.instanceId}:30080`]);

    // KEP-3458: a Node going NotReady stays a target (the health check decides); a new Node joins.
    const c = w.addNode(4, { labels: { pool: 'web' } });
    w.kube.mutateNode(b.node.metadata.name, (n) => {
      n.status!.conditions = [{ type: 'Ready', status: 'False' }];
    });
    w.resetCounters();
    await w.converge([w.serviceKey('web')]);
    expect(targetsOf(group().arn)).toEqual([
      `${a.instance.instanceId}:30080`,
      `${b.instance.instanceId}:30080`,
      `${c.instance.instanceId}:30080`,
    ]);
    expect(reasons()).toEqual(['UpdatedLoadBalancer']);
    expect(w.metrics.total(MetricName.TargetsDeregistered)).toBe(0);

    // Deleted: out.
    w.kube.mutateNode(b.node.metadata.name, (n) => {
      n.metadata.deletionTimestamp = '2026-12-01T00:00:00Z';
    });
    await w.converge([w.serviceKey('web')]);
    expect(targetsOf(group().arn)).toEqual([`${a.instance.instanceId}:30080`, `${c.instance.instanceId}:30080`]);

    w.kube.mutateNode(a.node.metadata.name, (n) => {
      n.metadata.labels = { ...n.metadata.labels, 'node.kubernetes.io/exclude-from-external-load-balancers': '' };
    });
    w.kube.mutateNode(c.node.metadata.name, (n) => {
      n.spec!.taints = [{ key: 'ToBeDeletedByClusterAutoscaler', value: '1', effect: 'NoSchedule' }];
    });
    await w.converge([w.serviceKey('web')]);
    expect(targetsOf(group().arn)).toEqual([]);
    // Draining targets are not deregistered twice.
    w.resetCounters();
    await w.converge([w.serviceKey('web')]);
    expect(w.awsWrites()).toBe(0);
  });

  it('IP targets follow ready EndpointSlice addresses, with named target ports resolved by the slice', async () => {
    w.addNode(1);
    w.putSlice('web', [{ ip: '10.0.1.10' }, { ip: '10.0.1.11' }], {
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });
    await create('web', {
      annotations: { [ANNOTATION.nlbTargetType]: 'ip' },
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 'web-port', nodePort: 30080 }],
    });
    const group = () => groupsOf(onlyLb().arn)[0]!;
    expect(targetsOf(group().arn)).toEqual(['10.0.1.10:8080', '10.0.1.11:8080']);

    w.putSlice(
      'web',
      [
        { ip: '10.0.1.11' },
        { ip: '10.0.1.12' },
        { ip: '10.0.1.13', ready: false },
        { ip: '10.0.1.14', terminating: true, ready: false },
      ],
      {
        ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
      },
    );
    w.putSlice('web', [{ ip: '10.0.2.20' }], {
      name: 'web-second',
      ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
    });
    await w.converge([w.serviceKey('web')]);
    expect(targetsOf(group().arn)).toEqual(['10.0.1.11:8080', '10.0.1.12:8080', '10.0.2.20:8080']);
    expect(w.elbv2.targetsOf(group().arn).find((t) => t.target.id === '10.0.1.10')?.state).toBe('draining');
  });
});
