import { beforeEach, describe, expect, it } from 'vitest';
import { makeSubnet } from '../../shared/aws/ec2-fake.ts';
import { AwsServiceError } from '../../shared/aws/errors.ts';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import type { Service } from '../../shared/k8s/types.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createServiceWorld, NODE_GROUP, type ServiceWorld, VPC } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { serviceReconciler } from './reconciler.ts';

let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
});

const service = (name = 'web', namespace = 'default'): Service => w.kube.services.get(`${namespace}/${name}`)!;
const hostname = (name = 'web') => service(name)?.status?.loadBalancer?.ingress?.[0]?.hostname;
const reasons = (name = 'web') => w.kube.eventsFor('Service', name).map((e) => e.reason);
const eventsOf = (reason: string, name = 'web') => w.kube.eventsFor('Service', name, reason).map((e) => e.message);
const onlyLb = () => {
  const lbs = [...w.elbv2.loadBalancers.values()];
  expect(lbs).toHaveLength(1);
  return lbs[0]!.lb;
};
const groupsOf = (lbArn: string) =>
  [...w.elbv2.targetGroups.values()]
    .map((g) => w.elbv2.targetGroupNamed(g.tg.name)!)
    .filter((g) => g.loadBalancerArns.includes(lbArn));
const managedGroup = () => [...w.ec2.securityGroups.values()].find((g) => g.groupName.startsWith('k8s-elb-'));
const backendGroup = () => [...w.ec2.securityGroups.values()].find((g) => g.groupName === `k8s-traffic-${CLUSTER}`);
const nodeRules = () =>
  w.ec2.securityGroups.get(NODE_GROUP)!.ingress.filter((r) => r.description?.startsWith('kubernetes.io/rule/nlb/'));
const nodeRuleRanges = () =>
  nodeRules()
    .map((r) => `${r.protocol}:${r.fromPort}-${r.toPort}`)
    .sort();
const targetsOf = (groupArn: string) =>
  w.elbv2
    .targetsOf(groupArn)
    .filter((t) => t.state !== 'draining')
    .map((t) => `${t.target.id}:${t.target.port}`)
    .sort();

async function create(
  name = 'web',
  options: Parameters<ServiceWorld['putService']>[1] = {},
  nodePortRange?: { from: number; to: number },
) {
  w.putService(name, options);
  await w.converge(
    [w.serviceKey(name, options.namespace)],
    nodePortRange ? { ...w.serviceDeps, nodePortRange } : w.serviceDeps,
  );
}

describe('creating a load balancer', () => {
  it('finalizer first, then an internet-facing NLB in the public subnets with listener, target group, targets, groups, status and Events', async () => {
    const a = w.addNode(1);
    const b = w.addNode(2);
    const key = w.serviceKey('web');
    w.putService('web');
    // The finalizer is written before the first AWS write: watch the first mutating call.
    let finalizerBeforeFirstWrite: boolean | undefined;
    w.elbv2.beforeCall = () => {
      finalizerBeforeFirstWrite ??= (service().metadata.finalizers ?? []).includes(FINALIZER_LOAD_BALANCER_CLEANUP);
    };

    await w.converge([key]);

    expect(finalizerBeforeFirstWrite).toBe(true);
    const lb = onlyLb();
    expect(lb).toMatchObject({
      name: expect.stringMatching(/^test-cluste-default-web-[0-9a-z]{8}$/),
      scheme: 'internet-facing',
      type: 'network',
      state: 'active',
      subnets: [10, 11, 12].map((i) => expect.objectContaining({ subnetId: makeSubnet({ index: i }).subnetId })),
    });
    expect(w.elbv2.tagsOf(lb.arn)).toEqual({
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
      'kubernetes.io/service-name': 'default/web',
    });
    expect(lb.securityGroups).toEqual([managedGroup()!.groupId, backendGroup()!.groupId]);
    expect(backendGroup()!.tags).toEqual({
      [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
      'serverless-ccm/security-group-role': 'backend',
    });
    expect(managedGroup()).toMatchObject({
      vpcId: VPC,
      tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned', 'kubernetes.io/service-name': 'default/web' },
      ingress: [
        { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' },
        { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: '0.0.0.0/0' },
      ],
    });
    const [group] = groupsOf(lb.arn);
    expect(group).toMatchObject({
      name: expect.stringMatching(/^test-clu-default-web-80-[0-9a-z]{8}$/),
      protocol: 'TCP',
      port: 30080,
      targetType: 'instance',
      healthCheck: {
        protocol: 'TCP',
        port: 'traffic-port',
        intervalSeconds: 30,
        healthyThreshold: 3,
        unhealthyThreshold: 3,
      },
      tags: { 'kubernetes.io/service-name': 'default/web' },
    });
    expect(w.elbv2.listenersOf(lb.arn)).toMatchObject([{ port: 80, protocol: 'TCP', targetGroupArn: group!.arn }]);
    expect(targetsOf(group!.arn)).toEqual([`${a.instance.instanceId}:30080`, `${b.instance.instanceId}:30080`]);
    // One rule from the cluster's backend group covers every node port of every load balancer.
    expect(nodeRules()).toEqual([
      {
        protocol: 'tcp',
        fromPort: 30000,
        toPort: 32767,
        sourceGroupId: backendGroup()!.groupId,
        description: `kubernetes.io/rule/nlb/backend=${CLUSTER}`,
      },
    ]);
    expect(hostname()).toBe(lb.dnsName);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
    expect(reasons()).toEqual(['EnsuringLoadBalancer', 'EnsuredLoadBalancer']);
    expect(eventsOf('EnsuredLoadBalancer')[0]).toContain(lb.dnsName);
    expect(w.metrics.total(MetricName.LoadBalancersCreated)).toBe(1);
    expect(w.metrics.total(MetricName.TargetsRegistered)).toBe(2);
  });

  it('sets the hostname at once and requeues (not sleeps) while the NLB provisions', async () => {
    w.addNode(1);
    w.elbv2.provisioningDescribes = 100;
    w.elbv2.provisioningMs = 10 * 60_000;
    w.putService('web');

    const first = await w.reconcile(w.serviceKey('web'));

    expect(first.batchItemFailures).toHaveLength(1);
    expect(onlyLb().state).toBe('provisioning');
    expect(hostname()).toBe(onlyLb().dnsName);
    expect(w.metrics.total(MetricName.Requeues)).toBe(1);
    // Once active, the key is done.
    w.elbv2.activate(onlyLb().name);
    w.resetCounters();
    expect(await w.reconcile(w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: '2' }))).toEqual({
      batchItemFailures: [],
    });
    expect(w.awsWrites()).toBe(0);
  });

  it('a reconcile that finds everything in place makes no mutating call, to AWS or Kubernetes, and says nothing', async () => {
    w.addNode(1);
    w.addNode(2);
    await create('web', {
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 },
        { name: 'dns', protocol: 'UDP', port: 53, targetPort: 53, nodePort: 30053 },
      ],
      annotations: {
        [ANNOTATION.crossZone]: 'true',
        [ANNOTATION.additionalResourceTags]: 'team=web,cost-center=42',
        [ANNOTATION.healthcheckInterval]: '10',
        [ANNOTATION.targetGroupAttributes]: 'deregistration_delay.timeout_seconds=30',
      },
    });
    w.resetCounters();

    expect(await w.reconcile(w.serviceKey('web', 'default', { eventType: 'RESYNC', eventId: 'r' }))).toEqual({
      batchItemFailures: [],
    });

    expect(w.awsWrites()).toBe(0);
    expect(w.kube.writeCount()).toBe(0);
    expect(w.kube.events).toEqual([]);
  });

  it('creates an internal NLB in the private subnets', async () => {
    w.addNode(1);
    await create('web', { annotations: { [ANNOTATION.internal]: 'true' } });
    expect(onlyLb()).toMatchObject({
      scheme: 'internal',
      subnets: [20, 21, 22].map((i) => expect.objectContaining({ subnetId: makeSubnet({ index: i }).subnetId })),
    });
  });

  it('uses the subnets and Elastic IPs the annotations name, in order', async () => {
    w.addNode(1);
    await create('web', {
      annotations: {
        [ANNOTATION.subnets]: 'public-eu-west-1b, subnet-0000000000000000a',
        [ANNOTATION.eipAllocations]: 'eipalloc-0b,eipalloc-0a',
      },
    });
    expect(onlyLb().subnets).toEqual([
      { subnetId: makeSubnet({ index: 11 }).subnetId, allocationId: 'eipalloc-0b', zoneName: 'eu-west-1b' },
      { subnetId: makeSubnet({ index: 10 }).subnetId, allocationId: 'eipalloc-0a', zoneName: 'eu-west-1a' },
    ]);
  });

  it('gives the load balancer the name of the annotation', async () => {
    w.addNode(1);
    await create('web', { annotations: { [ANNOTATION.name]: 'my-web' } });
    expect(onlyLb().name).toBe('my-web');
    expect(managedGroup()?.groupName).toBe('k8s-elb-my-web');
  });

  it('externalTrafficPolicy Local: HTTP /healthz on the health check node port, interval 10, thresholds 2/2, and a rule for it', async () => {
    w.addNode(1);
    await create(
      'web',
      { spec: { externalTrafficPolicy: 'Local', healthCheckNodePort: 32123 } },
      { from: 30000, to: 30100 },
    );
    const [group] = groupsOf(onlyLb().arn);
    expect(group?.healthCheck).toEqual({
      protocol: 'HTTP',
      port: '32123',
      path: '/healthz',
      intervalSeconds: 10,
      timeoutSeconds: 6,
      healthyThreshold: 2,
      unhealthyThreshold: 2,
    });
    // With a narrower node port range the health check node port is outside it: a rule of its own.
    expect(nodeRuleRanges()).toEqual(['tcp:30000-30100', 'tcp:32123-32123']);
  });

  it('TLS on the ssl-ports with the certificate and policy; backend ssl makes a TLS target group', async () => {
    w.addNode(1);
    await create('web', {
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 },
        { name: 'https', protocol: 'TCP', port: 443, targetPort: 8443, nodePort: 30443 },
      ],
      annotations: {
        [ANNOTATION.sslCert]: 'arn:aws:acm:eu-west-1:111122223333:certificate/abc',
        [ANNOTATION.sslPorts]: 'https',
        [ANNOTATION.sslNegotiationPolicy]: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
        [ANNOTATION.backendProtocol]: 'ssl',
      },
    });
    const listeners = w.elbv2.listenersOf(onlyLb().arn).sort((x, y) => x.port - y.port);
    expect(listeners).toMatchObject([
      { port: 80, protocol: 'TCP', certificateArns: [] },
      {
        port: 443,
        protocol: 'TLS',
        certificateArns: ['arn:aws:acm:eu-west-1:111122223333:certificate/abc'],
        sslPolicy: 'ELBSecurityPolicy-TLS13-1-2-2021-06',
      },
    ]);
    expect(
      groupsOf(onlyLb().arn)
        .map((g) => g.protocol)
        .sort(),
    ).toEqual(['TCP', 'TLS']);
  });

  it('TCP and UDP on one port become one TCP_UDP listener and target group', async () => {
    w.addNode(1);
    await create('dns', {
      ports: [
        { name: 'dns-tcp', protocol: 'TCP', port: 53, targetPort: 53, nodePort: 30053 },
        { name: 'dns-udp', protocol: 'UDP', port: 53, targetPort: 53, nodePort: 30053 },
      ],
    });
    expect(w.elbv2.listenersOf(onlyLb().arn)).toMatchObject([{ port: 53, protocol: 'TCP_UDP' }]);
    expect(groupsOf(onlyLb().arn)).toMatchObject([{ protocol: 'TCP_UDP', port: 30053 }]);
    expect(
      managedGroup()!
        .ingress.map((r) => `${r.protocol}:${r.fromPort}`)
        .sort(),
    ).toEqual(['icmp:3', 'tcp:53', 'udp:53']);
    expect(nodeRuleRanges()).toEqual(['tcp:30000-32767', 'udp:30000-32767']);
  });

  it('applies attributes, tags and source ranges from the annotations and the spec', async () => {
    w.addNode(1);
    await create('web', {
      annotations: {
        [ANNOTATION.crossZone]: 'true',
        [ANNOTATION.accessLogEnabled]: 'true',
        [ANNOTATION.accessLogBucket]: 'my-logs',
        [ANNOTATION.accessLogPrefix]: 'nlb',
        [ANNOTATION.proxyProtocol]: '*',
        [ANNOTATION.connectionDrainingTimeout]: '20',
        [ANNOTATION.targetGroupAttributes]: 'preserve_client_ip.enabled=false',
        [ANNOTATION.additionalResourceTags]: 'team=web',
      },
      spec: { loadBalancerSourceRanges: ['203.0.113.0/24', '2001:db8::/32'] },
    });
    const lb = onlyLb();
    expect(w.elbv2.attributesOf(lb.arn)).toMatchObject({
      'load_balancing.cross_zone.enabled': 'true',
      'access_logs.s3.enabled': 'true',
      'access_logs.s3.bucket': 'my-logs',
      'access_logs.s3.prefix': 'nlb',
    });
    const [group] = groupsOf(lb.arn);
    expect(w.elbv2.attributesOf(group!.arn)).toMatchObject({
      'proxy_protocol_v2.enabled': 'true',
      'deregistration_delay.timeout_seconds': '20',
      'preserve_client_ip.enabled': 'false',
    });
    for (const tags of [w.elbv2.tagsOf(lb.arn), group!.tags, managedGroup()!.tags]) expect(tags?.team).toBe('web');
    expect(
      managedGroup()!
        .ingress.map((r) => `${r.protocol}:${r.fromPort}:${r.cidrIpv4 ?? r.cidrIpv6}`)
        .sort(),
    ).toEqual(['icmp:3:203.0.113.0/24', 'icmpv6:2:2001:db8::/32', 'tcp:80:2001:db8::/32', 'tcp:80:203.0.113.0/24']);
  });

  it('uses the security groups of the annotation instead of a managed one, and never modifies them', async () => {
    w.addNode(1);
    w.ec2.putSecurityGroup({
      groupId: 'sg-0000000000000user',
      groupName: 'frontend',
      vpcId: VPC,
      description: '',
      tags: {},
      ingress: [],
    });
    await create('web', { annotations: { [ANNOTATION.securityGroups]: 'frontend' } });
    // The cluster's backend group is still added: it is what the Nodes allow.
    expect(onlyLb().securityGroups).toEqual(['sg-0000000000000user', backendGroup()!.groupId]);
    expect(managedGroup()).toBeUndefined();
    expect(w.ec2.securityGroups.get('sg-0000000000000user')!.ingress).toEqual([]);
    expect(w.ec2.callCount('CreateSecurityGroup')).toBe(1);
    expect(nodeRules()[0]?.sourceGroupId).toBe(backendGroup()!.groupId);
  });
});

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

describe('what is not ours, and what cannot be built', () => {
  beforeEach(() => {
    w.addNode(1);
  });

  it.each([
    [
      { [ANNOTATION.healthcheckInterval]: 'often' },
      /aws-load-balancer-healthcheck-interval: "often" must be a whole number of seconds from 5 to 300/,
    ],
    [{ [ANNOTATION.nlbTargetType]: 'pod' }, /aws-load-balancer-nlb-target-type: "pod" must be "instance" or "ip"/],
    [
      { [ANNOTATION.scheme]: 'internal', [ANNOTATION.internal]: 'false' },
      /aws-load-balancer-scheme: "internal" contradicts/,
    ],
    [{ [ANNOTATION.name]: '-bad-' }, /aws-load-balancer-name: "-bad-" must be 1-32 letters/],
    [
      { [ANNOTATION.sslPorts]: '443' },
      /aws-load-balancer-ssl-ports: needs service.beta.kubernetes.io\/aws-load-balancer-ssl-cert/,
    ],
  ])(
    'invalid annotations %j: a Warning Event naming the annotation, nothing created, no finalizer',
    async (annotations, pattern) => {
      w.putService('web', { annotations });
      expect(await w.reconcile(w.serviceKey('web'))).toEqual({ batchItemFailures: [] });
      expect(eventsOf('SyncLoadBalancerFailed')).toEqual([expect.stringMatching(pattern)]);
      expect(w.awsCalls()).toBe(0);
      expect(service().metadata.finalizers).toBeUndefined();
      expect(w.metrics.total(MetricName.LoadBalancerSyncFailures, { reason: 'InvalidAnnotation' })).toBe(1);
    },
  );

  it('one Service with a bad annotation does not hold up the others in its batch', async () => {
    w.putService('bad', { annotations: { [ANNOTATION.crossZone]: 'maybe' } });
    w.putService('good');
    await w.converge([w.serviceKey('bad'), w.serviceKey('good')]);
    expect(onlyLb().name).toMatch(/-good-/);
    expect(eventsOf('SyncLoadBalancerFailed', 'bad')).toHaveLength(1);
  });

  it.each([
    ['a ClusterIP Service', { spec: { type: 'ClusterIP' as const } }],
    ['another loadBalancerClass', { spec: { loadBalancerClass: 'service.k8s.aws/nlb' } }],
    ['type nlb-ip (the AWS Load Balancer Controller)', { annotations: { [ANNOTATION.type]: 'nlb-ip' } }],
  ])('%s is left alone', async (_, options) => {
    w.putService('web', options);
    await w.converge([w.serviceKey('web')]);
    expect(w.awsCalls()).toBe(0);
    expect(w.kube.writeCount()).toBe(0);
  });

  it('the configured loadBalancerClass is ours', async () => {
    w.putService('web', { spec: { loadBalancerClass: 'example.com/nlb' } });
    await w.converge([w.serviceKey('web')], { ...w.serviceDeps, loadBalancerClass: 'example.com/nlb' });
    expect(onlyLb()).toBeDefined();
  });

  it('a Service served by a Classic ELB (in-tree provider) is detected and left alone', async () => {
    w.putService('legacy', { annotations: {} });
    w.kube.mutateService('default', 'legacy', (s) => {
      s.metadata.finalizers = [FINALIZER_LOAD_BALANCER_CLEANUP];
      s.status = { loadBalancer: { ingress: [{ hostname: 'a1b2c3-1234567890.eu-west-1.elb.amazonaws.com' }] } };
    });
    await w.converge([w.serviceKey('legacy')]);
    expect(w.awsCalls()).toBe(0);
    expect(w.metrics.total(MetricName.ServicesSkipped, { reason: 'classic' })).toBe(1);
  });

  it('two Services can never share a load balancer: the second one asking for a taken name is refused', async () => {
    await create('first', { annotations: { [ANNOTATION.name]: 'shared-name' } });
    const lb = onlyLb();
    await create('second', { annotations: { [ANNOTATION.name]: 'shared-name' } });
    expect(eventsOf('SyncLoadBalancerFailed', 'second')).toEqual([
      expect.stringMatching(/load balancer name shared-name is taken by default\/first/),
    ]);
    expect(onlyLb()).toEqual(lb);
    expect(w.elbv2.listenersOf(lb.arn)).toHaveLength(1);
    expect(hostname('second')).toBeUndefined();
  });

  it('never adopts a load balancer without our cluster tag', async () => {
    w.elbv2.putLoadBalancer({
      name: 'someone-elses',
      scheme: 'internet-facing',
      subnetMappings: [{ subnetId: makeSubnet({ index: 10 }).subnetId }],
      securityGroups: [],
      tags: {},
    });
    await create('web', { annotations: { [ANNOTATION.name]: 'someone-elses' } });
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toMatch(/taken by a load balancer this cluster does not own/);
    expect(w.elbv2.loadBalancers.size).toBe(1);
  });

  it('no usable subnet: an Event saying which tags to set', async () => {
    for (const subnet of [...w.ec2.subnets.values()]) w.ec2.subnets.delete(subnet.subnetId);
    await create('web');
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toMatch(
      /no public .* subnet found .* tag subnets kubernetes.io\/role\/elb=1/,
    );
    expect(w.elbv2.loadBalancers.size).toBe(0);
  });
});

describe('AWS trouble', () => {
  beforeEach(() => {
    w.addNode(1);
  });

  it('throttling: retried with backoff, no Event, and the load balancer still made once', async () => {
    w.elbv2.throttle('CreateLoadBalancer', 2);
    w.ec2.throttle('DescribeSecurityGroups', 1);
    await create('web');
    expect(w.elbv2.loadBalancers.size).toBe(1);
    expect(eventsOf('SyncLoadBalancerFailed')).toEqual([]);
    expect(w.metrics.total(MetricName.ReconcileErrors, { errorClass: 'throttled' })).toBeGreaterThan(0);
  });

  it('an AWS error is reported on the Service with its code, and retried', async () => {
    w.elbv2.queueError(
      'CreateTargetGroup',
      new AwsServiceError('TooManyTargetGroups', 'You have reached the maximum number of target groups', 400),
    );
    w.putService('web');
    const first = await w.reconcile(w.serviceKey('web'));
    expect(first.batchItemFailures).toHaveLength(0);
    expect(eventsOf('SyncLoadBalancerFailed')[0]).toMatch(/TooManyTargetGroups/);
    expect(w.metrics.total(MetricName.LoadBalancerSyncFailures, { reason: 'TooManyTargetGroups' })).toBe(1);
    // A later pass (the resync) completes it.
    await w.converge([w.serviceKey('web')]);
    expect(w.elbv2.targetGroups.size).toBe(1);
  });

  it('a 409 on the finalizer re-reads the Service and tries again', async () => {
    w.putService('web');
    w.kube.queueError('patchService', new KubernetesApiError(409, 'Conflict', 'the object has been modified'));
    expect(await w.reconcile(w.serviceKey('web'))).toMatchObject({ batchItemFailures: [expect.anything()] });
    expect(w.kube.callCount('patchService')).toBe(2);
    expect(w.kube.callCount('getService')).toBe(2);
    expect(service().metadata.finalizers).toEqual([FINALIZER_LOAD_BALANCER_CLEANUP]);
  });

  it('refuses keys of other kinds, naming what it takes', async () => {
    const result = await w.invoke(serviceReconciler, w.serviceDeps, []);
    expect(result).toEqual({ batchItemFailures: [] });
    await expect(
      serviceReconciler.reconcile({ kind: 'Node', name: 'n' }, w.serviceDeps, undefined as never, {
        hints: [],
        receiveCount: 1,
      }),
    ).rejects.toThrow(/takes Service keys with a namespace, or the garbage collection key/);
  });
});
