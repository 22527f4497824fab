import type { AvailabilityZone, Instance, SecurityGroup } from '../../shared/aws/ec2-port.ts';
import type { ClassicLoadBalancer } from '../../shared/aws/elb-port.ts';
import type { LoadBalancer } from '../../shared/aws/elbv2-port.ts';
import { classifyKubernetesError } from '../../shared/k8s/errors.ts';
import type { Node } from '../../shared/k8s/types.ts';
import type { ServiceDeps } from './deps.ts';
import { instanceIdsOf } from './model/targets.ts';
import { loadBalancerName } from './names.ts';

/**
 * What the Services of one batch share, read once and only when first needed: the Node list, their
 * instances, the Nodes' security groups, the VPC's zones. Up to ten Services of a batch then cost one
 * DescribeInstances and one DescribeSecurityGroups between them. For a resync's quick look (resync-check.ts):
 * the load balancers by name (one listing) and the tags of those the batch's Services are named for (one
 * DescribeTags per 20).
 */
export class ServiceBatch {
  private nodeList?: Promise<Node[]>;
  private instanceMap?: Promise<Map<string, Instance>>;
  private groups?: Promise<SecurityGroup[]>;
  private zoneList?: Promise<AvailabilityZone[]>;
  private lbByName?: Promise<Map<string, LoadBalancer>>;
  private lbTags?: Promise<Map<string, Record<string, string>>>;
  private classicByName?: Promise<Map<string, ClassicLoadBalancer>>;

  /** `keys`: the `namespace/name` of the batch's Services (their load balancers' tags are read together). */
  constructor(
    private readonly deps: ServiceDeps,
    private readonly keys: readonly { namespace: string; name: string }[] = [],
  ) {}

  /**
   * Every load balancer of the account and region, by lower-case name: one DescribeLoadBalancers per 400,
   * where asking by name would cost one per Service (the port asks one name at a time).
   */
  loadBalancers(): Promise<Map<string, LoadBalancer>> {
    this.lbByName ??= this.deps.elbv2
      .listLoadBalancers()
      .then((lbs) => new Map(lbs.map((lb) => [lb.name.toLowerCase(), lb])));
    return this.lbByName;
  }

  /** Every Classic ELB, by lower-case name (one DescribeLoadBalancers per 400). */
  classicLoadBalancers(): Promise<Map<string, ClassicLoadBalancer>> {
    const elb = this.deps.elb;
    this.classicByName ??= elb
      ? elb.listLoadBalancers().then((lbs) => new Map(lbs.map((lb) => [lb.name.toLowerCase(), lb])))
      : Promise.resolve(new Map());
    return this.classicByName;
  }

  /**
   * The tags of a load balancer: read together (DescribeTags takes 20 ARNs) for every load balancer named
   * after a Service of the batch, alone for any other (a name annotation). Undefined: no tags answer.
   */
  async loadBalancerTags(arn: string): Promise<Record<string, string> | undefined> {
    this.lbTags ??= this.loadBalancers().then((lbs) => {
      const arns = this.keys
        .map((k) => lbs.get(loadBalancerName({ clusterName: this.deps.clusterName, ...k }).toLowerCase())?.arn)
        .filter((a): a is string => a !== undefined);
      return arns.length > 0 ? this.deps.elbv2.describeTags(arns) : new Map<string, Record<string, string>>();
    });
    const shared = await this.lbTags;
    return shared.get(arn) ?? (await this.deps.elbv2.describeTags([arn])).get(arn);
  }

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
