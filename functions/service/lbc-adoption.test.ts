import { beforeEach, describe, expect, it } from 'vitest';
import { createServiceWorld, NODE_GROUP, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { lbcSecurityGroupName } from './lbc/names.ts';
import { lbcWorld, REFERENCE_PORTS, referenceStack, tracking, WEB_UID } from './testing/lbc.ts';
import { serviceTesting } from './testing/service.ts';

/**
 * A Network Load Balancer the AWS Load Balancer Controller made for a Service is adopted in place: the same ARN and DNS
 * name keep serving. At every AWS state of the first pass (before each call the pass makes, so after each of its
 * writes, and at its end) the load balancer the Service's status names forwards every port of the Service to a target
 * group with a healthy target, and the Nodes admit one of its security groups on the target port.
 */

const ID = { clusterName: CLUSTER, namespace: 'default', name: 'web', uid: WEB_UID };
const PORTS = REFERENCE_PORTS;

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
let nodes: { instance: { instanceId: string } }[];
beforeEach(() => {
  w = createServiceWorld();
  lbc = lbcWorld(w);
  nodes = [w.addNode(1), w.addNode(2)];
});
const { service, hostname, eventsOf, backendGroup, nodeRules } = serviceTesting(() => w);

/** Problems with the load balancer the status names, as things stand: none while it serves every port. */
function servingProblems(): string[] {
  const name = hostname();
  const found = [...w.elbv2.loadBalancers.values()].find((l) => l.lb.dnsName === name);
  if (!found) return [`no load balancer named ${name}`];
  if (found.lb.state !== 'active') return [`${found.lb.name} is ${found.lb.state}`];
  const listeners = w.elbv2.listenersOf(found.lb.arn);
  return PORTS.flatMap((p) => {
    const listener = listeners.find((l) => l.port === p.port);
    if (!listener?.targetGroupArn) return [`port ${p.port}: no listener`];
    if (!w.elbv2.targetGroups.has(listener.targetGroupArn)) return [`port ${p.port}: its target group is gone`];
    const healthy = w.elbv2.targetsOf(listener.targetGroupArn).some((t) => t.state === 'healthy');
    if (!healthy) return [`port ${p.port}: no healthy target`];
    // Health is not modelled from security groups: the Nodes must admit one of the load balancer's groups.
    const admitted = w.ec2.securityGroups
      .get(NODE_GROUP)!
      .ingress.some(
        (r) =>
          r.sourceGroupId !== undefined &&
          r.sourceGroupId !== NODE_GROUP &&
          found.lb.securityGroups.includes(r.sourceGroupId) &&
          r.fromPort <= p.nodePort! &&
          p.nodePort! <= r.toPort,
      );
    return admitted ? [] : [`port ${p.port}: no group of the load balancer is admitted by the Nodes`];
  });
}

describe('adopting the reference load balancer', () => {
  it('keeps its ARN and DNS name serving every port at every step of the first pass, then it is ours', async () => {
    const { lb, groups, backend } = await referenceStack(w, nodes);
    const seen: string[] = [];
    let states = 0;
    const look = () => {
      states++;
      for (const p of servingProblems()) seen.push(p);
    };
    w.elbv2.beforeCall = look;
    w.ec2.beforeCall = look;

    await lbc.pass();
    look();
    w.elbv2.beforeCall = undefined;
    w.ec2.beforeCall = undefined;

    expect(states).toBeGreaterThan(10);
    expect(seen).toEqual([]);
    // The same load balancer, target groups and DNS name: nothing made anew.
    expect(w.elbv2.callCount('CreateLoadBalancer')).toBe(0);
    expect(w.elbv2.callCount('CreateTargetGroup')).toBe(0);
    expect(w.elbv2.callCount('DeleteTargetGroup')).toBe(0);
    expect([...w.elbv2.loadBalancers.values()].map((l) => l.lb.arn)).toEqual([lb.arn]);
    expect(hostname()).toBe(lb.dnsName);
    expect(w.elbv2.listenersOf(lb.arn).map((l) => [l.port, l.targetGroupArn])).toEqual(
      PORTS.map((p) => [p.port, groups.get(p.port)]),
    );
    // Ours now: our ownership tags beside the reference's, on everything of its stack.
    const ours = { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'kubernetes.io/service-name': 'default/web' };
    expect(w.elbv2.tagsOf(lb.arn)).toEqual({ ...ours, ...tracking('LoadBalancer') });
    for (const p of PORTS) {
      expect(w.elbv2.tagsOf(groups.get(p.port)!)).toEqual({ ...ours, ...tracking(`default/web:${p.port}`) });
    }
    for (const l of w.elbv2.listenersOf(lb.arn)) {
      expect(w.elbv2.listenerTags.get(l.arn)).toEqual({ ...ours, ...tracking(String(l.port)) });
    }
    const managed = [...w.ec2.securityGroups.values()].find((g) => g.groupName === lbcSecurityGroupName(ID))!;
    expect(managed.tags).toEqual({ ...ours, ...tracking('ManagedLBSecurityGroup') });
    // The cluster's backend group took over from the reference's, once the Nodes admitted it.
    const now = w.elbv2.loadBalancerNamed(lb.name)!;
    expect(now.securityGroups).toEqual([managed.groupId, backendGroup()!.groupId]);
    expect(now.securityGroups).not.toContain(backend);
    expect(nodeRules().map((r) => r.sourceGroupId)).toContain(backendGroup()!.groupId);
    expect(eventsOf('AdoptedLoadBalancer')).toEqual([expect.stringContaining(lb.dnsName)]);
    expect(service().metadata.finalizers).toEqual(['service.k8s.aws/resources']);
  });

  it('the next pass finds it in line: no write', async () => {
    await referenceStack(w, nodes);
    await lbc.converge();
    w.resetCounters();
    await lbc.pass();
    expect(w.awsWrites()).toBe(0);
    expect(eventsOf('AdoptedLoadBalancer')).toEqual([]);
  });

  it('deleting the Service afterwards deletes what it adopted, and leaves the reference backend group', async () => {
    const { backend } = await referenceStack(w, nodes);
    await lbc.converge();
    w.kube.deleteService('default', 'web');
    await lbc.converge();
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(w.elbv2.targetGroups.size).toBe(0);
    expect([...w.ec2.securityGroups.values()].some((g) => g.groupName === lbcSecurityGroupName(ID))).toBe(false);
    expect(w.ec2.securityGroups.has(backend)).toBe(true);
    expect(w.kube.services.get('default/web')).toBeUndefined();
  });

  it("another cluster's (or Service's) load balancer of that name is never adopted", async () => {
    const { lb } = await referenceStack(w, nodes);
    await w.elbv2Port.addTags(lb.arn, { 'service.k8s.aws/stack': 'default/other' });
    w.resetCounters();
    await lbc.pass();
    expect(w.elbv2.tagsOf(lb.arn)?.[`kubernetes.io/cluster/${CLUSTER}`]).toBeUndefined();
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toContain(`load balancer name ${lb.name} is taken`);
  });
});
