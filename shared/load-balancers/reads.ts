import type { AvailabilityZone, Ec2LoadBalancerNetworkPort, Instance, SecurityGroup } from '../aws/ec2-port.ts';
import { classifyKubernetesError } from '../k8s/errors.ts';
import type { Node } from '../k8s/types.ts';
import type { SharedReads } from './context.ts';
import { primaryGroups } from './node-rules.ts';
import { instanceIdsOf } from './targets.ts';

/**
 * The reads every load balancer of one batch shares, each made once and only when first needed: the Node list,
 * their instances (one DescribeInstances per 1000), the security groups of their primary interfaces, the VPC's
 * zones. A front end's batch extends it (functions/service/batch.ts) or uses it as it is.
 */
export class LazySharedReads implements SharedReads {
  private nodeList?: Promise<Node[]>;
  private instanceMap?: Promise<Map<string, Instance>>;
  private groups?: Promise<SecurityGroup[]>;
  private zoneList?: Promise<AvailabilityZone[]>;

  constructor(
    private readonly sources: {
      kube: { listNodes(): Promise<Node[]> };
      ec2: Pick<Ec2LoadBalancerNetworkPort, 'describeInstances' | 'findSecurityGroups' | 'describeAvailabilityZones'>;
    },
  ) {}

  nodes(): Promise<Node[]> {
    this.nodeList ??= this.sources.kube.listNodes().catch((err: unknown) => {
      throw classifyKubernetesError('listing nodes', err);
    });
    return this.nodeList;
  }

  /** Every Node's instance (one DescribeInstances per 1000). */
  async instances(): Promise<Map<string, Instance>> {
    this.instanceMap ??= this.nodes().then((nodes) => {
      const ids = instanceIdsOf(nodes.filter((n) => !n.metadata.deletionTimestamp));
      return ids.length > 0 ? this.sources.ec2.describeInstances(ids) : new Map<string, Instance>();
    });
    return this.instanceMap;
  }

  /** The security groups of every Node instance's primary interface. */
  async nodeSecurityGroups(): Promise<SecurityGroup[]> {
    this.groups ??= this.instances().then((instances) => {
      const ids = [...new Set([...instances.values()].flatMap(primaryGroups))];
      return ids.length > 0 ? this.sources.ec2.findSecurityGroups({ groupIds: ids }) : [];
    });
    return this.groups;
  }

  zones(): Promise<AvailabilityZone[]> {
    this.zoneList ??= this.sources.ec2.describeAvailabilityZones();
    return this.zoneList;
  }
}
