import { beforeEach, describe, expect, it } from 'vitest';
import { makeSubnet } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../shared/k8s/service-port.ts';
import { MetricName } from '../../shared/observability/metrics.ts';
import { createServiceWorld, type ServiceWorld, VPC, WEB_PORTS } from '../../test/helpers/service-world.ts';
import { CLUSTER } from '../../test/helpers/world.ts';
import { ANNOTATION } from './annotations.ts';
import { serviceTesting } from './testing/service.ts';

let w: ServiceWorld;
beforeEach(() => {
  w = createServiceWorld();
});
const {
  service,
  hostname,
  reasons,
  eventsOf,
  onlyLb,
  groupsOf,
  managedGroup,
  backendGroup,
  nodeRules,
  nodeRuleRanges,
  targetsOf,
  create,
} = serviceTesting(() => w);

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
      ports: WEB_PORTS,
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
