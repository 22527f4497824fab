import type { InstanceState } from '@aws-sdk/client-elastic-load-balancing';
import { classicFailure, type ElbEc2Link, type FakeClassicLoadBalancer } from './model.ts';

/**
 * Where FakeElb's load balancers sit in the network: subnets and zones, security groups, instances, checked
 * against a linked EC2 fake. Without one, every ID is taken as given (and zones are unknown).
 */
export class FakeElbTopology {
  constructor(private readonly ec2?: ElbEc2Link) {}

  zoneOf(subnetId: string): string | undefined {
    return this.ec2?.subnets.get(subnetId)?.availabilityZone;
  }

  /**
   * Subnets of one VPC, one per zone. An internet-facing load balancer needs an internet gateway in its VPC
   * (InvalidSubnet: "The specified VPC has no associated Internet gateway"); checked when the EC2 fake has route
   * tables for that VPC. https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_CreateLoadBalancer.html
   */
  subnetsForCreate(subnets: readonly string[], scheme: string): { subnets: string[]; vpcId: string | undefined } {
    if (subnets.length === 0) {
      throw classicFailure('ValidationError', 'Subnets are required: this account has no EC2-Classic network');
    }
    const unique = [...new Set(subnets)];
    this.checkOneSubnetPerZone(unique);
    const vpcId = this.vpcOf(unique);
    if (scheme === 'internet-facing' && vpcId && this.ec2) {
      const tables = [...this.ec2.routeTables.values()].filter((t) => t.vpcId === vpcId);
      const gateway = tables.some((t) => t.routes.some((r) => r.target.gatewayId?.startsWith('igw-')));
      if (tables.length > 0 && !gateway) {
        throw classicFailure('InvalidSubnet', `The VPC ${vpcId} has no associated Internet gateway`);
      }
    }
    return { subnets: unique, vpcId };
  }

  /**
   * Adds subnets: known, in the load balancer's VPC, in a zone it does not have yet (one subnet per zone).
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_AttachLoadBalancerToSubnets.html
   */
  attach(lb: FakeClassicLoadBalancer, subnets: readonly string[]): string[] {
    const added = [...new Set(subnets)].filter((s) => !lb.subnets.includes(s));
    const next = [...lb.subnets, ...added];
    this.checkOneSubnetPerZone(next);
    const vpcId = this.vpcOf(next);
    if (lb.vpcId && vpcId && vpcId !== lb.vpcId) {
      throw classicFailure('InvalidConfigurationRequest', `The subnets must be in the load balancer's VPC ${lb.vpcId}`);
    }
    return next;
  }

  /** Removes subnets; the last one cannot go. https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_DetachLoadBalancerFromSubnets.html */
  detach(lb: FakeClassicLoadBalancer, subnets: readonly string[]): string[] {
    const next = lb.subnets.filter((s) => !subnets.includes(s));
    if (next.length === 0) {
      throw classicFailure('InvalidConfigurationRequest', `${lb.name} must keep at least one subnet`);
    }
    return next;
  }

  /** Groups EC2 shows (a group it still hides after its creation is as unknown). */
  checkSecurityGroups(groupIds: readonly string[]): void {
    if (!this.ec2) return;
    const unknown = groupIds.filter((id) => !this.ec2?.visibleSecurityGroup(id));
    if (unknown.length > 0) {
      throw classicFailure('InvalidSecurityGroup', `One or more security groups are invalid: ${unknown.join(', ')}`);
    }
  }

  /** The groups asked for, or the VPC's `default` group when none are. */
  securityGroupsForCreate(groupIds: readonly string[], vpcId: string | undefined): string[] {
    if (groupIds.length > 0) {
      this.checkSecurityGroups(groupIds);
      return [...new Set(groupIds)];
    }
    const fallback = [...(this.ec2?.securityGroups.values() ?? [])].find(
      (g) => g.groupName === 'default' && g.vpcId === vpcId,
    );
    return fallback ? [fallback.groupId] : [];
  }

  /**
   * An instance EC2 knows, running, in the load balancer's VPC (InvalidInstance, the SDK's InvalidEndPointException).
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_RegisterInstancesWithLoadBalancer.html
   */
  checkInstance(lb: FakeClassicLoadBalancer, instanceId: string): void {
    if (!/^i-[0-9a-f]+$/.test(instanceId))
      throw classicFailure('InvalidInstance', `'${instanceId}' is not an instance ID`);
    if (!this.ec2) return;
    const instance = this.ec2.instances.get(instanceId);
    if (instance?.state !== 'running') {
      throw classicFailure('InvalidInstance', `The instance ${instanceId} is not in a valid state (running)`);
    }
    if (lb.vpcId && instance.vpcId && instance.vpcId !== lb.vpcId) {
      throw classicFailure('InvalidInstance', `The instance ${instanceId} is not in the VPC ${lb.vpcId}`);
    }
  }

  /**
   * What DescribeInstanceHealth answers: OutOfService while the registration is in progress or the instance is not
   * running, then InService (or what a test set). Asking for one not registered is InvalidInstance.
   * https://docs.aws.amazon.com/elasticloadbalancing/2012-06-01/APIReference/API_InstanceState.html
   */
  instanceState(lb: FakeClassicLoadBalancer, instanceId: string): InstanceState {
    const registered = lb.instances.get(instanceId);
    if (!registered) throw classicFailure('InvalidInstance', `${instanceId} is not registered with ${lb.name}`);
    const out = (ReasonCode: string, Description: string): InstanceState => ({
      InstanceId: instanceId,
      State: 'OutOfService',
      ReasonCode,
      Description,
    });
    const instance = this.ec2?.instances.get(instanceId);
    if (this.ec2 && instance?.state !== 'running') {
      return out('Instance', `Instance is in ${instance?.state ?? 'terminated'} state.`);
    }
    if (registered.forced === 'OutOfService')
      return out(
        'Instance',
        'Instance has failed at least the UnhealthyThreshold number of health checks consecutively.',
      );
    if (!registered.forced && registered.outOfServiceDescribesLeft > 0) {
      registered.outOfServiceDescribesLeft--;
      return out('ELB', 'Instance registration is still in progress.');
    }
    return { InstanceId: instanceId, State: 'InService', ReasonCode: 'N/A', Description: 'N/A' };
  }

  private checkOneSubnetPerZone(subnets: readonly string[]): void {
    if (!this.ec2) return;
    const zones = new Set<string>();
    for (const id of subnets) {
      const subnet = this.ec2.subnets.get(id);
      if (!subnet) throw classicFailure('SubnetNotFound', `The subnet ID '${id}' does not exist`);
      if (zones.has(subnet.availabilityZone)) {
        throw classicFailure(
          'InvalidConfigurationRequest',
          `A load balancer cannot be attached to multiple subnets in the same Availability Zone (${subnet.availabilityZone})`,
        );
      }
      zones.add(subnet.availabilityZone);
    }
  }

  private vpcOf(subnets: readonly string[]): string | undefined {
    const vpcs = new Set(subnets.flatMap((s) => this.ec2?.subnets.get(s)?.vpcId ?? []));
    if (vpcs.size > 1) throw classicFailure('InvalidConfigurationRequest', 'The subnets must all be in one VPC');
    return [...vpcs][0];
  }
}
