import { beforeEach, describe, expect, it } from 'vitest';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { createServiceWorld, NODE_GROUP, type ServiceWorld } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { lbcLoadBalancerName, lbcSecurityGroupName, lbcTargetGroupName } from './lbc/names.ts';
import { lbcWorld, putLbcService, WEB_UID } from './testing/lbc.ts';
import { serviceTesting } from './testing/service.ts';

/**
 * The Services the AWS Load Balancer Controller serves, served its way with SERVICE_LBC_SERVICES on: which ones, their
 * names, tags, finalizer and defaults, and every state checked in the fakes.
 */

let w: ServiceWorld;
let lbc: ReturnType<typeof lbcWorld>;
beforeEach(() => {
  w = createServiceWorld();
  lbc = lbcWorld(w);
});
const { service, hostname, reasons, eventsOf, onlyLb, groupsOf, backendGroup, nodeRules, targetsOf } = serviceTesting(
  () => w,
);
const ID = { clusterName: CLUSTER, namespace: 'default', name: 'web', uid: WEB_UID };
const owned = { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'kubernetes.io/service-name': 'default/web' };
const tracking = { 'elbv2.k8s.aws/cluster': CLUSTER, 'service.k8s.aws/stack': 'default/web' };
const managed = () => [...w.ec2.securityGroups.values()].find((g) => g.groupName === lbcSecurityGroupName(ID));

describe('which Services are served', () => {
  it.each([
    ['class service.k8s.aws/nlb', {}, true],
    ['type external', { annotations: { [ANNOTATION.type]: 'external' }, byClass: false }, true],
    ['type nlb-ip', { annotations: { [ANNOTATION.type]: 'nlb-ip' }, byClass: false }, true],
  ] as const)('switch off: a Service of %s is left alone', async (_, options, _served) => {
    w.addNode(1);
    putLbcService(w, options);
    await lbc.converge('web', { deps: { ...lbc.deps, lbcServices: false } });
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(service().metadata.finalizers ?? []).toEqual([]);
    expect(lbc.leaseReads()).toBe(0);
  });

  it.each([
    ['class service.k8s.aws/nlb', {}],
    ['type external', { annotations: { [ANNOTATION.type]: 'external' }, byClass: false }],
    ['type nlb-ip', { annotations: { [ANNOTATION.type]: 'nlb-ip' }, byClass: false }],
  ] as const)(
    'switch on: a Service of %s gets its load balancer, under the reference finalizer',
    async (_, options) => {
      w.addNode(1);
      putLbcService(w, options);
      await lbc.converge();
      expect(onlyLb().name).toBe(lbcLoadBalancerName(ID, 'internal'));
      expect(service().metadata.finalizers).toEqual(['service.k8s.aws/resources']);
      expect(hostname()).toBe(onlyLb().dnsName);
      expect(lbc.leaseReads()).toBeGreaterThan(0);
    },
  );

  it('switch on: a Service of another class, and an in-tree one, are as before', async () => {
    w.addNode(1);
    putLbcService(w, { name: 'other', spec: { loadBalancerClass: 'example.com/lb' } });
    w.putService('plain');
    await lbc.converge('other');
    await lbc.converge('plain');
    expect(onlyLb().name).toMatch(/^test-clus[a-z]*-default-plain-/);
    expect(service('plain').metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    expect(service('other').metadata.finalizers ?? []).toEqual([]);
    // An in-tree Service never waits on the reference's Lease.
    expect(lbc.leaseReads()).toBe(0);
  });
});

describe('what such a Service gets', () => {
  it('the reference defaults: internal, instance targets, TCP health checks every 10 s; its names and tracking tags', async () => {
    const a = w.addNode(1);
    const b = w.addNode(2);
    putLbcService(w);
    await lbc.converge();

    const lb = onlyLb();
    expect(lb).toMatchObject({ name: lbcLoadBalancerName(ID, 'internal'), scheme: 'internal', type: 'network' });
    expect(lb.subnets.map((s) => s.subnetId).sort()).toEqual(
      [20, 21, 22].map((i) => makeSubnet({ index: i }).subnetId),
    );
    expect(w.elbv2.tagsOf(lb.arn)).toEqual({ ...owned, ...tracking, 'service.k8s.aws/resource': 'LoadBalancer' });
    const [group] = groupsOf(lb.arn);
    expect(group).toMatchObject({
      name: lbcTargetGroupName(ID, {
        port: 30080,
        servicePort: 80,
        targetType: 'instance',
        protocol: 'TCP',
        healthCheckProtocol: 'TCP',
        healthCheckIntervalSeconds: 10,
      }),
      targetType: 'instance',
      port: 30080,
      healthCheck: {
        protocol: 'TCP',
        port: 'traffic-port',
        intervalSeconds: 10,
        timeoutSeconds: 10,
        healthyThreshold: 3,
        unhealthyThreshold: 3,
      },
    });
    expect(group!.tags).toEqual({ ...owned, ...tracking, 'service.k8s.aws/resource': 'default/web:80' });
    expect(w.elbv2.listenersOf(lb.arn).map((l) => w.elbv2.listenerTags.get(l.arn))).toEqual([
      { ...owned, ...tracking, 'service.k8s.aws/resource': '80' },
    ]);
    expect(targetsOf(group!.arn)).toEqual([`${a.instance.instanceId}:30080`, `${b.instance.instanceId}:30080`]);
    expect(managed()!.description).toBe('[k8s] Managed SecurityGroup for LoadBalancer');
    expect(managed()!.tags).toEqual({ ...owned, ...tracking, 'service.k8s.aws/resource': 'ManagedLBSecurityGroup' });
    // The managed frontend group and the cluster's backend group, which the Nodes admit.
    expect(lb.securityGroups).toEqual([managed()!.groupId, backendGroup()!.groupId]);
    expect(nodeRules()[0]?.sourceGroupId).toBe(backendGroup()!.groupId);
    expect(reasons()).toEqual(['EnsuringLoadBalancer', 'EnsuredLoadBalancer']);
  });

  it('internet-facing when asked: another name (the scheme is hashed into it), public subnets', async () => {
    w.addNode(1);
    putLbcService(w, { annotations: { [ANNOTATION.scheme]: 'internet-facing' } });
    await lbc.converge();
    expect(onlyLb()).toMatchObject({ name: lbcLoadBalancerName(ID, 'internet-facing'), scheme: 'internet-facing' });
    expect(lbcLoadBalancerName(ID, 'internet-facing')).not.toBe(lbcLoadBalancerName(ID, 'internal'));
    expect(
      onlyLb()
        .subnets.map((s) => s.subnetId)
        .sort(),
    ).toEqual([10, 11, 12].map((i) => makeSubnet({ index: i }).subnetId));
  });

  it('instance targets with externalTrafficPolicy Local: HTTP on the health check node port', async () => {
    w.addNode(1);
    putLbcService(w, { spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 31999 } });
    await lbc.converge();
    expect(groupsOf(onlyLb().arn)[0]!.healthCheck).toMatchObject({
      protocol: 'HTTP',
      port: '31999',
      path: '/healthz',
      intervalSeconds: 10,
    });
  });

  it.each([
    ['nlb-target-type ip', { [ANNOTATION.type]: 'external', [ANNOTATION.nlbTargetType]: 'ip' }],
    ['type nlb-ip', { [ANNOTATION.type]: 'nlb-ip' }],
  ])('%s: the ready EndpointSlice addresses on the target port', async (_, annotations) => {
    w.addNode(1);
    putLbcService(w, { annotations, byClass: false });
    w.putSlice('web', [{ ip: '10.0.1.10' }, { ip: '10.0.1.11' }, { ip: '10.0.1.12', ready: false }]);
    await lbc.converge();
    const [group] = groupsOf(onlyLb().arn);
    expect(group).toMatchObject({ targetType: 'ip', port: 8080 });
    expect(targetsOf(group!.arn)).toEqual(['10.0.1.10:8080', '10.0.1.11:8080']);
  });
});

describe('the annotations the in-tree backend lacked', () => {
  it('target-group-attributes and listener-attributes.<protocol>-<port> are kept in line', async () => {
    w.addNode(1);
    putLbcService(w, {
      annotations: {
        [ANNOTATION.targetGroupAttributes]: 'deregistration_delay.timeout_seconds=15',
        'service.beta.kubernetes.io/aws-load-balancer-listener-attributes.TCP-80': 'tcp.idle_timeout.seconds=900',
      },
    });
    await lbc.converge();
    const lb = onlyLb();
    const [group] = groupsOf(lb.arn);
    expect(w.elbv2.targetGroups.get(group!.arn)!.attributes['deregistration_delay.timeout_seconds']).toBe('15');
    const [listener] = w.elbv2.listenersOf(lb.arn);
    expect(w.elbv2.listenerAttributes.get(listener!.arn)?.['tcp.idle_timeout.seconds']).toBe('900');
  });

  it('target-node-labels: only the Nodes that carry them are targets', async () => {
    const a = w.addNode(1, { labels: { pool: 'edge' } });
    w.addNode(2);
    putLbcService(w, { annotations: { [ANNOTATION.targetNodeLabels]: 'pool=edge' } });
    await lbc.converge();
    expect(targetsOf(groupsOf(onlyLb().arn)[0]!.arn)).toEqual([`${a.instance.instanceId}:30080`]);
  });

  it('private-ipv4-addresses fit the default internal scheme', async () => {
    w.addNode(1);
    const addresses = [20, 21, 22].map((i) => makeSubnet({ index: i }).cidrBlock!.replace(/0\/\d+$/, '50'));
    putLbcService(w, { annotations: { [ANNOTATION.privateIpv4Addresses]: addresses.join(',') } });
    await lbc.converge();
    expect(
      onlyLb()
        .subnets.map((s) => s.privateIPv4Address)
        .sort(),
    ).toEqual([...addresses].sort());
  });

  it('eip-allocations and subnets on an internet-facing one; eip-allocations on the default internal scheme is refused', async () => {
    w.addNode(1);
    putLbcService(w, {
      annotations: {
        [ANNOTATION.scheme]: 'internet-facing',
        [ANNOTATION.subnets]: 'public-eu-west-1a, public-eu-west-1b',
        [ANNOTATION.eipAllocations]: 'eipalloc-0a,eipalloc-0b',
      },
    });
    await lbc.converge();
    expect(onlyLb().subnets.map((s) => `${s.subnetId}:${s.allocationId}`)).toEqual([
      `${makeSubnet({ index: 10 }).subnetId}:eipalloc-0a`,
      `${makeSubnet({ index: 11 }).subnetId}:eipalloc-0b`,
    ]);

    putLbcService(w, { name: 'inner', annotations: { [ANNOTATION.eipAllocations]: 'eipalloc-0c' } });
    await lbc.pass('inner');
    expect(eventsOf('SyncLoadBalancerFailed', 'inner')[0]).toContain(
      `${ANNOTATION.eipAllocations}: Elastic IPs need an internet-facing load balancer`,
    );
  });

  it('security-groups without manage-backend-security-group-rules: the user groups alone, no Node rule', async () => {
    w.addNode(1);
    w.ec2.putSecurityGroup({
      groupId: 'sg-0000000000000abc1',
      groupName: 'clients',
      vpcId: w.serviceDeps.vpcId,
      description: 'mine',
      tags: {},
      ingress: [],
    });
    putLbcService(w, { annotations: { [ANNOTATION.securityGroups]: 'sg-0000000000000abc1' } });
    await lbc.converge();
    expect(onlyLb().securityGroups).toEqual(['sg-0000000000000abc1']);
    expect(nodeRules()).toEqual([]);
  });

  it('security-groups with manage-backend-security-group-rules "true": the backend group too, and its Node rule', async () => {
    w.addNode(1);
    w.ec2.putSecurityGroup({
      groupId: 'sg-0000000000000abc1',
      groupName: 'clients',
      vpcId: w.serviceDeps.vpcId,
      description: 'mine',
      tags: {},
      ingress: [],
    });
    putLbcService(w, {
      annotations: {
        [ANNOTATION.securityGroups]: 'sg-0000000000000abc1',
        [ANNOTATION.manageBackendSecurityGroupRules]: 'true',
      },
    });
    await lbc.converge();
    expect(onlyLb().securityGroups).toEqual(['sg-0000000000000abc1', backendGroup()!.groupId]);
    expect(nodeRules()[0]?.sourceGroupId).toBe(backendGroup()!.groupId);
  });

  it('an annotation not carried out is a Warning naming it; the load balancer is still made', async () => {
    w.addNode(1);
    putLbcService(w, {
      annotations: {
        'service.beta.kubernetes.io/aws-load-balancer-ipv6-addresses': '2600:1f13::5',
        'service.beta.kubernetes.io/aws-load-balancer-security-group-prefix-lists': 'pl-0123',
      },
    });
    await lbc.converge();
    expect(eventsOf('UnsupportedAnnotation')).toEqual([
      'Annotation(s) not supported, ignored: service.beta.kubernetes.io/aws-load-balancer-ipv6-addresses, service.beta.kubernetes.io/aws-load-balancer-security-group-prefix-lists',
    ]);
    expect(w.elbv2.loadBalancers.size).toBe(1);
  });

  it('a bad listener-attributes key is a Warning naming it, and nothing is made', async () => {
    w.addNode(1);
    putLbcService(w, {
      annotations: { 'service.beta.kubernetes.io/aws-load-balancer-listener-attributes.HTTP': 'a=b' },
    });
    await lbc.pass();
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toContain(
      'service.beta.kubernetes.io/aws-load-balancer-listener-attributes.HTTP',
    );
  });
});

describe('deleting such a Service', () => {
  it('deletes its load balancer, target groups and frontend group, then drops the reference finalizer', async () => {
    w.addNode(1);
    putLbcService(w);
    await lbc.converge();
    expect(managed()).toBeDefined();
    w.kube.deleteService('default', 'web');
    await lbc.converge();
    expect(w.elbv2.loadBalancers.size).toBe(0);
    expect(w.elbv2.targetGroups.size).toBe(0);
    expect(managed()).toBeUndefined();
    expect(w.kube.services.get('default/web')).toBeUndefined();
    // The cluster's backend group and the Nodes' group stay.
    expect(backendGroup()).toBeDefined();
    expect(w.ec2.securityGroups.get(NODE_GROUP)).toBeDefined();
  });
});
