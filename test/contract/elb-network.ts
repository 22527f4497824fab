import type { ClassicListener, CreateClassicLoadBalancerInput } from '../../shared/aws/elb-port.ts';
import type { ElbBackend } from './elb-backends.ts';

/** What the Classic ELB contract tests build on: a VPC with an internet gateway, subnets in three zones, two groups. */
export interface ClassicNetwork {
  vpcId: string;
  /** One subnet per zone a, b, c, plus a second one in zone a. */
  subnets: { a: string; b: string; c: string; a2: string };
  securityGroups: [string, string];
}

export const OWNED = { 'kubernetes.io/cluster/contract': 'owned' };

export const TCP_80: ClassicListener = {
  loadBalancerPort: 80,
  protocol: 'TCP',
  instancePort: 30080,
  instanceProtocol: 'TCP',
};

export async function classicNetwork(backend: ElbBackend): Promise<ClassicNetwork> {
  const { ec2, seed } = backend;
  const vpcId = await seed.vpc({ cidr: '10.0.0.0/16', internetGateway: true });
  const subnet = (cidr: string, zone: string) => seed.subnet({ vpcId, cidr, zone });
  const subnets = {
    a: await subnet('10.0.1.0/24', 'eu-west-1a'),
    b: await subnet('10.0.2.0/24', 'eu-west-1b'),
    c: await subnet('10.0.3.0/24', 'eu-west-1c'),
    a2: await subnet('10.0.4.0/24', 'eu-west-1a'),
  };
  const group = async (groupName: string) => {
    const created = await ec2.createSecurityGroup({ groupName, description: groupName, vpcId, tags: OWNED });
    if (created === 'name-taken') throw new Error(`${groupName} is taken`);
    return created.groupId;
  };
  return { vpcId, subnets, securityGroups: [await group('lb'), await group('traffic')] };
}

/** An internet-facing load balancer `web` in zones a and b, with the first group and a TCP listener on 80. */
export function lbInput(
  network: ClassicNetwork,
  extra: Partial<CreateClassicLoadBalancerInput> = {},
): CreateClassicLoadBalancerInput {
  return {
    name: 'web',
    scheme: 'internet-facing',
    subnets: [network.subnets.a, network.subnets.b],
    securityGroups: [network.securityGroups[0]],
    listeners: [TCP_80],
    tags: OWNED,
    ...extra,
  };
}

/** Creates it; its DNS name. */
export async function createdLoadBalancer(backend: ElbBackend, input: CreateClassicLoadBalancerInput) {
  const created = await backend.elb.createLoadBalancer(input);
  if (created === 'name-taken') throw new Error(`${input.name} is taken`);
  return created.dnsName;
}
