import type { SecurityGroup } from '../../shared/aws/ec2-port.ts';
import type { ClassicLoadBalancer } from '../../shared/aws/elb-port.ts';
import { ELBV2_PAGE_SIZE, type LoadBalancer, type TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { LazySharedReads } from '../../shared/load-balancers/reads.ts';
import { backendSecurityGroupName } from '../../shared/load-balancers/security-groups.ts';
import type { ServiceDeps } from './deps.ts';
import { loadBalancerName, referenceLoadBalancerName, securityGroupName } from './names.ts';

/** A Service of the batch: `uid` when a hint of its key names it (the relay's and the resync's do). */
export interface BatchService {
  namespace: string;
  name: string;
  uid?: string;
}

/**
 * What the Services of one batch share, read once and only when first needed: the Node list, their
 * instances, the Nodes' security groups, the VPC's zones. Up to ten Services of a batch then cost one
 * DescribeInstances and one DescribeSecurityGroups between them. For a resync's quick look (resync-check.ts):
 * the load balancers by name (one listing), the tags of those the batch's Services are named for (one
 * DescribeTags per 20) and the target groups each forwards to (one listing, when that is cheaper).
 */
export class ServiceBatch extends LazySharedReads {
  private lbByName?: Promise<Map<string, LoadBalancer>>;
  private lbTags?: Promise<TagsById>;
  private classicByName?: Promise<Map<string, ClassicLoadBalancer>>;
  private classicTags?: Promise<TagsById>;
  private groupsByLoadBalancer?: Promise<Map<string, TargetGroup[]> | undefined>;
  private namedGroups?: Promise<{ names: Set<string>; groups: SecurityGroup[] }>;
  private lbcLeaseRead?: Promise<unknown>;

  /** `keys`: the batch's Services (their load balancers' tags and security groups are read together). */
  constructor(
    private readonly deps: ServiceDeps,
    private readonly keys: readonly BatchService[] = [],
  ) {
    super(deps);
  }

  /**
   * The AWS Load Balancer Controller's leader Lease, read once for the batch's Services served its way
   * (functions/service/lbc/lease.ts): `read` runs on first use only.
   */
  lbcLease<T>(read: () => Promise<T>): Promise<T> {
    this.lbcLeaseRead ??= read();
    return this.lbcLeaseRead as Promise<T>;
  }

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
   * The tags of a Classic ELB: read together (DescribeTags takes 20 names) for every Classic ELB the batch's
   * Services may have (named after the Service, or the reference controller's `a<uid>` name when a hint gave
   * the uid), alone for any other. Undefined: no tags answer. Only for a deployment with Classic ELB access.
   */
  async classicLoadBalancerTags(name: string): Promise<Record<string, string> | undefined> {
    const elb = this.deps.elb!;
    this.classicTags ??= this.classicLoadBalancers().then((lbs) => this.tagsOfNamed(lbs, (lb) => lb.name, elb));
    return tagsOf(await this.classicTags, name, elb);
  }

  /**
   * The tags of a load balancer: read together (DescribeTags takes 20 ARNs) for every load balancer named
   * after a Service of the batch, alone for any other (a name annotation). Undefined: no tags answer.
   */
  async loadBalancerTags(arn: string): Promise<Record<string, string> | undefined> {
    const { elbv2 } = this.deps;
    this.lbTags ??= this.loadBalancers().then((lbs) => this.tagsOfNamed(lbs, (lb) => lb.arn, elbv2));
    return tagsOf(await this.lbTags, arn, elbv2);
  }

  /** One DescribeTags (per 20) for the load balancers of `lbs` named after the batch's Services, by `idOf`. */
  private tagsOfNamed<T>(lbs: Map<string, T>, idOf: (lb: T) => string, port: TagsPort): Promise<TagsById> {
    const ids = this.namedAfterServices().flatMap((name) => {
      const lb = lbs.get(name.toLowerCase());
      return lb ? [idOf(lb)] : [];
    });
    return ids.length > 0 ? port.describeTags(ids) : Promise.resolve(new Map());
  }

  /**
   * The target groups a load balancer's listeners forward to (as DescribeTargetGroups by load balancer answers).
   * From one listing of the account's target groups (a DescribeTargetGroups per 400) shared by the batch, when
   * that likely costs fewer calls than one per Service of the batch: guessing two target groups a load balancer,
   * when the account's load balancers' would fill fewer pages than the batch has Services (a full batch of 10:
   * below 1,800 load balancers). Otherwise asked for this load balancer alone.
   */
  async targetGroupsOf(loadBalancerArn: string): Promise<TargetGroup[]> {
    this.groupsByLoadBalancer ??= this.loadBalancers().then(async (lbs) => {
      if (Math.ceil((2 * lbs.size) / ELBV2_PAGE_SIZE) >= this.keys.length) return undefined;
      const byLoadBalancer = new Map<string, TargetGroup[]>();
      for (const group of await this.deps.elbv2.listTargetGroups()) {
        for (const arn of group.loadBalancerArns) {
          const groups = byLoadBalancer.get(arn);
          if (groups) groups.push(group);
          else byLoadBalancer.set(arn, [group]);
        }
      }
      return byLoadBalancer;
    });
    const shared = await this.groupsByLoadBalancer;
    return shared
      ? (shared.get(loadBalancerArn) ?? [])
      : this.deps.elbv2.describeTargetGroupsOfLoadBalancer(loadBalancerArn);
  }

  /**
   * Security groups by name in the VPC, from one read of those the batch's Services' load balancers would have
   * (the managed group of each load balancer named after its Service, and the cluster's backend group).
   * Undefined when a name is not among them (a load balancer named by annotation, or a successor): the caller
   * reads its own. The read is as old as the batch's first use of it: for a pass that only checks (a Node-set
   * change's), not for one that creates groups, which a pass before it in the batch may have made.
   */
  async securityGroupsNamed(names: readonly string[]): Promise<SecurityGroup[] | undefined> {
    this.namedGroups ??= (async () => {
      const { clusterName, vpcId } = this.deps;
      const all = new Set([...this.namedAfterServices().map(securityGroupName), backendSecurityGroupName(clusterName)]);
      return { names: all, groups: await this.deps.ec2.findSecurityGroups({ vpcId, groupNames: [...all] }) };
    })();
    const shared = await this.namedGroups;
    if (!names.every((n) => shared.names.has(n))) return undefined;
    return shared.groups.filter((g) => names.includes(g.groupName));
  }

  /**
   * The names the batch's Services' load balancers likely have: each one's own (unless an annotation names
   * another), and the reference controller's `a<uid>` for those whose uid a hint gave (a migrated Service).
   */
  private namedAfterServices(): string[] {
    const { clusterName } = this.deps;
    return this.keys.flatMap(({ namespace, name, uid }) => {
      const reference = referenceLoadBalancerName(uid);
      const own = loadBalancerName({ clusterName, namespace, name });
      return reference ? [own, reference] : [own];
    });
  }
}

type TagsById = Map<string, Record<string, string>>;
type TagsPort = { describeTags(ids: readonly string[]): Promise<TagsById> };

/** A load balancer's tags from the batch's shared read, or asked for alone when that read did not name it. */
async function tagsOf(shared: TagsById, id: string, port: TagsPort): Promise<Record<string, string> | undefined> {
  return shared.get(id) ?? (await port.describeTags([id])).get(id);
}
