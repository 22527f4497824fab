import type { Clock } from '../clock.ts';
import type { Ec2Port, InstanceTypeInfo } from './ec2-port.ts';

/**
 * Zone name -> zone ID, cached while a Lambda container lives, so a burst of Node initializations costs one
 * DescribeAvailabilityZones in total. An unknown zone triggers one refresh, at most once per `refreshAfterMs`.
 * Apart from Ec2Facts for the node function, which needs no other fact and so no other EC2 command.
 */
export class ZoneIds {
  private zoneIds?: Map<string, string>;
  private zonesLoadedAt = Number.NEGATIVE_INFINITY;
  private zonesLoading?: Promise<Map<string, string>>;

  constructor(
    private readonly ec2: Pick<Ec2Port, 'describeAvailabilityZones'>,
    private readonly clock: Clock,
    private readonly refreshAfterMs = 10 * 60_000,
  ) {}

  async zoneId(zoneName: string): Promise<string | undefined> {
    const known = this.zoneIds?.get(zoneName);
    if (known) return known;
    if (this.zoneIds && this.clock.now() - this.zonesLoadedAt < this.refreshAfterMs) return undefined;
    return (await this.loadZones()).get(zoneName);
  }

  private loadZones(): Promise<Map<string, string>> {
    // Concurrent reconciles of one batch share a single DescribeAvailabilityZones.
    this.zonesLoading ??= this.ec2
      .describeAvailabilityZones()
      .then((zones) => {
        this.zoneIds = new Map(zones.map((z) => [z.zoneName, z.zoneId]));
        this.zonesLoadedAt = this.clock.now();
        return this.zoneIds;
      })
      .finally(() => {
        this.zonesLoading = undefined;
      });
    return this.zonesLoading;
  }
}

/**
 * Facts that do not change while a Lambda container lives (zone IDs, instance type limits, subnet CIDR blocks),
 * cached: each is asked of EC2 once per container.
 */
export class Ec2Facts {
  private readonly zones: ZoneIds;
  private readonly types = new Map<string, InstanceTypeInfo>();
  private readonly typesLoading = new Map<string, Promise<void>>();
  private readonly subnetCidrs = new Map<string, string>();

  constructor(
    private readonly ec2: Pick<Ec2Port, 'describeAvailabilityZones' | 'describeInstanceTypes' | 'describeSubnets'>,
    clock: Clock,
    refreshAfterMs?: number,
  ) {
    this.zones = new ZoneIds(ec2, clock, refreshAfterMs);
  }

  zoneId(zoneName: string): Promise<string | undefined> {
    return this.zones.zoneId(zoneName);
  }

  async instanceTypes(types: readonly string[]): Promise<Map<string, InstanceTypeInfo>> {
    const missing = [...new Set(types)].filter((t) => !this.types.has(t) && !this.typesLoading.has(t));
    if (missing.length > 0) {
      // Concurrent reconciles of one batch asking for the same type share one DescribeInstanceTypes.
      const loading = this.ec2.describeInstanceTypes(missing).then((infos) => {
        for (const info of infos) this.types.set(info.instanceType, info);
      });
      for (const t of missing) this.typesLoading.set(t, loading);
      void loading
        .finally(() => {
          for (const t of missing) this.typesLoading.delete(t);
        })
        .catch(() => {});
    }
    await Promise.all([...new Set(types)].map((t) => this.typesLoading.get(t)));
    return new Map(types.flatMap((t) => (this.types.has(t) ? [[t, this.types.get(t)!] as const] : [])));
  }

  /** A subnet's IPv4 CIDR block (a subnet keeps its primary block for life); undefined when EC2 does not show it. */
  async subnetCidr(subnetId: string): Promise<string | undefined> {
    if (!this.subnetCidrs.has(subnetId)) {
      for (const subnet of await this.ec2.describeSubnets({ subnetIds: [subnetId] })) {
        if (subnet.cidrBlock) this.subnetCidrs.set(subnet.subnetId, subnet.cidrBlock);
      }
    }
    return this.subnetCidrs.get(subnetId);
  }
}
