import { ElbAdapter } from '../../../shared/aws/elb-adapter.ts';
import type { ClassicListener } from '../../../shared/aws/elb-port.ts';
import { makeSubnet } from '../../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElb } from '../../../shared/aws/fakes/elb/fake-elb.ts';
import type { Service } from '../../../shared/k8s/types.ts';
import { createServiceWorld, VPC } from '../../../test/helpers/service-world.ts';
import { CLUSTER } from '../../../test/helpers/world.ts';
import { ANNOTATION } from '../annotations.ts';
import { referenceLoadBalancerName } from '../names.ts';

/**
 * The service world with a Classic ELB account beside ELBv2 (the fake behind the real adapter), and a
 * Service the reference controller gave a Classic ELB: its `a<uid>` load balancer, its `k8s-elb-` group
 * tagged with the cluster only, and the all-protocol rule from that group on the Nodes' group.
 */
export function createClassicWorld() {
  const w = createServiceWorld();
  const elbFake = new FakeElb(w.clock, w.ec2);
  const elb = new ElbAdapter(elbFake);
  w.serviceDeps.elb = elb;
  const awsWrites = () => w.awsWrites() + elbFake.writeCallCount();
  const awsCalls = () => w.awsCalls() + elbFake.callCount();
  const resetCounters = () => {
    w.resetCounters();
    elbFake.resetCalls();
  };
  return { ...w, elbFake, elb, awsWrites, awsCalls, resetCounters };
}

export type ClassicWorld = ReturnType<typeof createClassicWorld>;

export const UID = '5e1f3b2a-9c4d-4e6f-8a7b-0c1d2e3f4a5b';
export const REFERENCE_NAME = referenceLoadBalancerName(UID)!;
export const REFERENCE_TAGS = {
  [`kubernetes.io/cluster/${CLUSTER}`]: 'owned',
  'kubernetes.io/service-name': 'default/web',
};
export const PUBLIC_SUBNETS = [10, 11, 12].map((index) => makeSubnet({ index }).subnetId);

/**
 * What the reference controller left: the load balancer, its group and the Nodes' rule, and the Service
 * (`default/web` with UID unless `service` names another).
 */
export async function referenceClassic(
  w: ClassicWorld,
  options: {
    listeners?: ClassicListener[];
    annotations?: Record<string, string>;
    service?: { name: string; uid: string };
    /**
     * The user's group (`aws-load-balancer-security-groups`, set on the Service too): the reference then made no
     * group of its own, and allowed every protocol from the user's group on the Nodes' groups.
     */
    userGroup?: string;
  } = {},
): Promise<{ dnsName: string; groupId: string }> {
  const service = options.service ?? { name: 'web', uid: UID };
  const lbName = referenceLoadBalancerName(service.uid)!;
  const group = options.userGroup
    ? { groupId: options.userGroup }
    : await w.ec2Port.createSecurityGroup({
        groupName: `k8s-elb-${lbName}`,
        description: `Security group for Kubernetes ELB ${lbName} (default/${service.name})`,
        vpcId: VPC,
        tags: { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' },
      });
  if (group === 'name-taken') throw new Error('unexpected');
  if (!options.userGroup) {
    await w.ec2Port.authorizeSecurityGroupIngress(group.groupId, [
      { protocol: 'tcp', fromPort: 80, toPort: 80, cidrIpv4: '0.0.0.0/0' },
      { protocol: 'icmp', fromPort: 3, toPort: 4, cidrIpv4: '0.0.0.0/0' },
    ]);
  }
  // A user's group two Services name has its rule once.
  const nodeRules = w.ec2.securityGroups.get('sg-0000000000000node')!.ingress;
  if (!nodeRules.some((r) => r.sourceGroupId === group.groupId && r.protocol === '-1')) {
    await w.ec2Port.authorizeSecurityGroupIngress('sg-0000000000000node', [
      { protocol: '-1', fromPort: -1, toPort: -1, sourceGroupId: group.groupId },
    ]);
  }
  const listeners = options.listeners ?? [
    { loadBalancerPort: 80, protocol: 'TCP', instancePort: 30080, instanceProtocol: 'TCP' },
  ];
  const created = await w.elb.createLoadBalancer({
    name: lbName,
    scheme: 'internet-facing',
    subnets: PUBLIC_SUBNETS,
    securityGroups: [group.groupId],
    listeners,
    tags: { ...REFERENCE_TAGS, 'kubernetes.io/service-name': `default/${service.name}` },
  });
  if (created === 'name-taken') throw new Error('unexpected');
  await w.elb.configureHealthCheck(lbName, {
    target: 'TCP:30080',
    intervalSeconds: 10,
    timeoutSeconds: 5,
    healthyThreshold: 2,
    unhealthyThreshold: 6,
  });
  const annotations = options.userGroup
    ? { ...options.annotations, [ANNOTATION.securityGroups]: options.userGroup }
    : options.annotations;
  w.kube.putService(classicService(created.dnsName, annotations, service));
  return { dnsName: created.dnsName, groupId: group.groupId };
}

export function classicService(
  hostname: string | undefined,
  annotations?: Record<string, string>,
  { name, uid } = { name: 'web', uid: UID },
): Service {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid,
      finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      type: 'LoadBalancer',
      ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
      externalTrafficPolicy: 'Cluster',
    },
    ...(hostname ? { status: { loadBalancer: { ingress: [{ hostname }] } } } : {}),
  };
}

export const INTERNAL = { [ANNOTATION.internal]: 'true' };

/** Everything a Classic ELB account holds that a Service could have changed, plus the security groups. */
export async function classicAccount(w: ClassicWorld) {
  const loadBalancers = [];
  for (const name of [...w.elbFake.loadBalancers.keys()].sort()) {
    const lb = (await w.elb.findLoadBalancer(name))!;
    const { dnsName: _dns, ...rest } = lb;
    loadBalancers.push({
      ...rest,
      instanceIds: [...rest.instanceIds].sort(),
      attributes: await w.elb.describeAttributes(name),
      policies: (await w.elb.describePolicies(name)).map((p) => p.policyName).sort(),
      tags: (await w.elb.describeTags([name])).get(name),
    });
  }
  return { loadBalancers, securityGroups: w.inventory().securityGroups };
}
