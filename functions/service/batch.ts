import type { AvailabilityZone, Instance, SecurityGroup } from '../../shared/aws/ec2-port.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import type { Node } from '../../shared/k8s/types.ts';
import type { ServiceDeps } from './deps.ts';
import { instanceIdsOf } from './model/targets.ts';

/**
 * What the Services of one batch share, read once and only when first needed: the Node list, their
 * instances, the Nodes' security groups, the VPC's zones. Up to ten Services of a batch then cost one
 * DescribeInstances and one DescribeSecurityGroups between them.
 */
export class ServiceBatch {
  private nodeList?: Promise<Node[]>;
  private instanceMap?: Promise<Map<string, Instance>>;
  private groups?: Promise<SecurityGroup[]>;
  private zoneList?: Promise<AvailabilityZone[]>;

  constructor(private readonly deps: ServiceDeps) {}

  nodes(): Promise<Node[]> {
    this.nodeList ??= this.deps.kube.listNodes().catch((err: unknown) => {
      throw classifyKubernetesError('listing nodes', err);
    });
    return this.nodeList;
  }

  /** Every Node's instance (one DescribeInstances per 1000). */
  async instances(): Promise<Map<string, Instance>> {
    this.instanceMap ??= this.nodes().then((nodes) => {
      const ids = instanceIdsOf(nodes.filter((n) => !n.metadata.deletionTimestamp));
      return ids.length > 0 ? this.deps.ec2.describeInstances(ids) : new Map<string, Instance>();
    });
    return this.instanceMap;
  }

  /** The security groups of every Node instance's primary interface. */
  async nodeSecurityGroups(): Promise<SecurityGroup[]> {
    this.groups ??= this.instances().then((instances) => {
      const ids = [...new Set([...instances.values()].flatMap(primaryGroups))];
      return ids.length > 0 ? this.deps.ec2.findSecurityGroups({ groupIds: ids }) : [];
    });
    return this.groups;
  }

  zones(): Promise<AvailabilityZone[]> {
    this.zoneList ??= this.deps.ec2.describeAvailabilityZones();
    return this.zoneList;
  }
}

export function primaryGroups(instance: Instance): string[] {
  const primary = instance.networkInterfaces.find((e) => e.deviceIndex === 0) ?? instance.networkInterfaces[0];
  return primary?.securityGroupIds ?? [];
}
