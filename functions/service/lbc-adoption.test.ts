import { beforeEach, describe, expect, it } from 'vitest';
import type { LoadBalancer } from '../../shared/aws/elbv2-port.ts';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { createServiceWorld, NODE_GROUP, type ServiceWorld, VPC } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { lbcLoadBalancerName, lbcSecurityGroupName, lbcTargetGroupName } from './lbc/names.ts';
import { lbcWorld, putLbcService, WEB_UID } from './testing/lbc.ts';
import { serviceTesting } from './testing/service.ts';

/**
 * A Network Load Balancer the AWS Load Balancer Controller made for a Service is adopted in place: the same ARN and DNS
 * name keep serving. At every AWS state of the first pass (before each call the pass makes, so after each of its
 * writes, and at its end) the load balancer the Service's status names forwards every port of the Service to a target
 * group with a healthy target, and the Nodes admit one of its security groups on the target port.
 */

const ID = { clusterName: CLUSTER, namespace: 'default', name: 'web', uid: WEB_UID };
const PORTS = [
  { name: 'http', protocol: 'TCP' as const, port: 80, targetPort: 8080, nodePort: 30080 },
  { name: 'https', protocol: 'TCP' as const, port: 443, targetPort: 8443, nodePort: 30443 },
];
const tracking = (resource: string) => ({
  'elbv2.k8s.aws/cluster': CLUSTER,
  'service.k8s.aws/stack': 'default/web',
  'service.k8s.aws/resource': resource,
});

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
let nodes: { instance: { instanceId: string } }[];
beforeEach(() => {
  w = createServiceWorld();
  lbc = lbcWorld(w);
  nodes = [w.addNode(1), w.addNode(2)];
});
const { service, hostname, eventsOf, backendGroup, nodeRules } = serviceTesting(() => w);

/** What the reference leaves: its managed and backend groups, the NLB, a target group and listener per port, targets. */
async function referenceStack(): Promise<{ lb: LoadBalancer; groups: Map<number, string>; backend: string }> {
  const ec2 = w.ec2Port;
  const elbv2 = w.elbv2Port;
  const managed = await ec2.createSecurityGroup({
    groupName: lbcSecurityGroupName(ID),
    description: '[k8s] Managed SecurityGroup for LoadBalancer',
    vpcId: VPC,
    tags: tracking('ManagedLBSecurityGroup'),
  });
  const backend = await ec2.createSecurityGroup({
    groupName: `k8s-traffic-${CLUSTER}-0123456789`,
    description: '[k8s] Shared Backend SecurityGroup for LoadBalancer',
    vpcId: VPC,
    tags: { 'elbv2.k8s.aws/cluster': CLUSTER, 'elbv2.k8s.aws/resource': 'backend-sg' },
  });
  if (managed === 'name-taken' || backend === 'name-taken') throw new Error('groups');
  await ec2.authorizeSecurityGroupIngress(
    managed.groupId,
    PORTS.map((p) => ({ protocol: 'tcp', fromPort: p.port, toPort: p.port, cidrIpv4: '0.0.0.0/0' })),
  );
  await ec2.authorizeSecurityGroupIngress(NODE_GROUP, [
    {
      protocol: 'tcp',
      fromPort: 30080,
      toPort: 30443,
      sourceGroupId: backend.groupId,
      description: 'elbv2.k8s.aws/targetGroupBinding=shared',
    },
  ]);
  const lb = await elbv2.createLoadBalancer({
    name: lbcLoadBalancerName(ID, 'internal'),
    scheme: 'internal',
    subnetMappings: [20, 21, 22].map((i) => ({ subnetId: makeSubnet({ index: i }).subnetId })),
    securityGroups: [managed.groupId, backend.groupId],
    tags: tracking('LoadBalancer'),
  });
  if (lb === 'name-taken') throw new Error('lb');
  w.elbv2.activate(lb.name);
  const groups = new Map<number, string>();
  for (const port of PORTS) {
    const name = lbcTargetGroupName(ID, {
      port: port.nodePort,
      servicePort: port.port,
      targetType: 'instance',
      protocol: 'TCP',
      healthCheckProtocol: 'TCP',
      healthCheckIntervalSeconds: 10,
    });
    const group = await elbv2.createTargetGroup({
      name,
      protocol: 'TCP',
      port: port.nodePort,
      targetType: 'instance',
      vpcId: VPC,
      healthCheck: {
        protocol: 'TCP',
        port: 'traffic-port',
        intervalSeconds: 10,
        timeoutSeconds: 10,
        healthyThreshold: 3,
        unhealthyThreshold: 3,
      },
      tags: tracking(`default/web:${port.port}`),
    });
    if (group === 'name-taken') throw new Error('tg');
    await elbv2.createListener(
      lb.arn,
      { port: port.port, protocol: 'TCP', targetGroupArn: group.arn },
      tracking(String(port.port)),
    );
    await elbv2.registerTargets(
      group.arn,
      nodes.map((n) => ({ id: n.instance.instanceId, port: port.nodePort })),
    );
    for (const n of nodes) w.elbv2.setTargetHealth(group.arn, n.instance.instanceId, 'healthy');
    groups.set(port.port, group.arn);
  }
  putLbcService(w, { ports: PORTS, finalizers: ['service.k8s.aws/resources'], hostname: lb.dnsName });
  w.resetCounters();
  return { lb: w.elbv2.loadBalancerNamed(lb.name)!, groups, backend: backend.groupId };
}

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
          r.fromPort <= p.nodePort &&
          p.nodePort <= r.toPort,
      );
    return admitted ? [] : [`port ${p.port}: no group of the load balancer is admitted by the Nodes`];
  });
}

describe('adopting the reference load balancer', () => {
  it('keeps its ARN and DNS name serving every port at every step of the first pass, then it is ours', async () => {
    const { lb, groups, backend } = await referenceStack();
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
    await referenceStack();
    await lbc.converge();
    w.resetCounters();
    await lbc.pass();
    expect(w.awsWrites()).toBe(0);
    expect(eventsOf('AdoptedLoadBalancer')).toEqual([]);
  });

  it('deleting the Service afterwards deletes what it adopted, and leaves the reference backend group', async () => {
    const { backend } = await referenceStack();
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
    const { lb } = await referenceStack();
    await w.elbv2Port.addTags(lb.arn, { 'service.k8s.aws/stack': 'default/other' });
    w.resetCounters();
    await lbc.pass();
    expect(w.elbv2.tagsOf(lb.arn)?.[`kubernetes.io/cluster/${CLUSTER}`]).toBeUndefined();
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toContain(`load balancer name ${lb.name} is taken`);
  });
});
