import type { CreateTargetGroupInput, HealthCheck, ListenerSpec } from '../../shared/aws/elbv2-port.ts';
import type { Elbv2Backend } from './backends.ts';

/** What the ELBv2 contract tests build on: a VPC with subnets in three zones and two security groups. */
export interface ElbNetwork {
  vpcId: string;
  /** One subnet per zone a, b, c, plus a second one in zone a; all with an IPv6 block when asked. */
  subnets: { a: string; b: string; c: string; a2: string };
  securityGroups: [string, string];
}

export const OWNED = { 'kubernetes.io/cluster/contract': 'owned' };

export async function elbNetwork(backend: Elbv2Backend, options: { ipv6?: boolean } = {}): Promise<ElbNetwork> {
  const { ec2, seed } = backend;
  const ipv6 = options.ipv6 === true;
  const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16', ipv6 });
  const subnet = async (cidr: string, zone: string, index: number) =>
    (await seed.subnet({ vpcId, cidr, zone, ...(ipv6 ? { ipv6Index: index } : {}) })).subnetId;
  const subnets = {
    a: await subnet('10.0.1.0/24', 'eu-west-1a', 1),
    b: await subnet('10.0.2.0/24', 'eu-west-1b', 2),
    c: await subnet('10.0.3.0/24', 'eu-west-1c', 3),
    a2: await subnet('10.0.4.0/24', 'eu-west-1a', 4),
  };
  const group = async (groupName: string) => {
    const created = await ec2.createSecurityGroup({ groupName, description: groupName, vpcId, tags: OWNED });
    if (created === 'name-taken') throw new Error(`${groupName} is taken`);
    return created.groupId;
  };
  return { vpcId, subnets, securityGroups: [await group('lb'), await group('traffic')] };
}

export const TCP_HEALTH_CHECK: HealthCheck = {
  protocol: 'TCP',
  port: 'traffic-port',
  intervalSeconds: 10,
  timeoutSeconds: 10,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
};

export function targetGroupInput(
  network: ElbNetwork,
  name: string,
  extra: Partial<CreateTargetGroupInput> = {},
): CreateTargetGroupInput {
  return {
    name,
    protocol: 'TCP',
    port: 30080,
    targetType: 'instance',
    vpcId: network.vpcId,
    healthCheck: TCP_HEALTH_CHECK,
    tags: OWNED,
    ...extra,
  };
}

/** An internet-facing NLB in zones a and b with the first security group, plus a target group and a TCP listener. */
export async function loadBalancerWithListener(backend: Elbv2Backend, network: ElbNetwork, name = 'web') {
  const { elbv2 } = backend;
  const lb = await elbv2.createLoadBalancer({
    name,
    scheme: 'internet-facing',
    subnetMappings: [{ subnetId: network.subnets.a }, { subnetId: network.subnets.b }],
    securityGroups: [network.securityGroups[0]],
    tags: OWNED,
  });
  if (lb === 'name-taken') throw new Error(`${name} is taken`);
  const group = await elbv2.createTargetGroup(targetGroupInput(network, `${name}-80`));
  if (group === 'name-taken') throw new Error(`${name}-80 is taken`);
  const spec: ListenerSpec = { port: 80, protocol: 'TCP', targetGroupArn: group.arn };
  const listener = await elbv2.createListener(lb.arn, spec, OWNED);
  return { lb, group, listener, spec };
}
