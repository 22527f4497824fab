import type { SubnetMapping } from '../../elbv2-port.ts';
import type { Elbv2State } from './state.ts';
import { elbv2Failure } from './wire.ts';

/** What an Application Load Balancer asks of its subnets and security groups beyond a Network Load Balancer's. */

/**
 * "You must specify subnets from at least two Availability Zones"; Elastic IPs and private addresses are Network
 * Load Balancer settings. https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
 */
export function checkApplicationSubnets(elb: Elbv2State, mappings: readonly SubnetMapping[]): void {
  if (mappings.some((m) => m.allocationId || m.privateIPv4Address)) {
    throw elbv2Failure(
      'InvalidConfigurationRequest',
      'Elastic IP addresses and private IPv4 addresses can only be set on Network Load Balancers',
    );
  }
  const zones = new Set(mappings.map((m) => elb.zoneOf(m.subnetId) ?? m.subnetId));
  if (zones.size < 2) {
    throw elbv2Failure('ValidationError', 'At least two subnets in two different Availability Zones must be specified');
  }
}

/**
 * An Application Load Balancer created without security groups gets the default security group of its VPC.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
 */
export function defaultSecurityGroups(elb: Elbv2State, mappings: readonly SubnetMapping[]): string[] {
  const vpcId = mappings[0] ? elb.ec2?.subnets.get(mappings[0].subnetId)?.vpcId : undefined;
  const group = [...(elb.ec2?.securityGroups.values() ?? [])].find(
    (g) => g.vpcId === vpcId && g.groupName === 'default',
  );
  return group ? [group.groupId] : [];
}
