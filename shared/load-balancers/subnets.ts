import type { AvailabilityZone, RouteTable, Subnet } from '../aws/ec2-port.ts';
import type { LoadBalancer, SubnetMapping } from '../aws/elbv2-port.ts';
import { clusterTagKey } from '../aws/ownership.ts';
import { cidrContains, tryParseCidr } from '../net/cidr.ts';
import { type LoadBalancerContext, MODEL_SETTING_NAMES, type SettingNames, type SettingProblem } from './context.ts';
import type { Elbv2LoadBalancerModel } from './model.ts';

/** A subnet is public when its route table (explicit association, else the VPC's main table) routes to an internet gateway. */
export function isPublicSubnet(subnetId: string, routeTables: readonly RouteTable[]): boolean {
  const table =
    routeTables.find((t) => t.associations?.some((a) => a.subnetId === subnetId)) ??
    routeTables.find((t) => t.associations?.some((a) => a.main));
  return (table?.routes ?? []).some((r) => r.state === 'active' && r.target.gatewayId?.startsWith('igw-'));
}

export type SubnetChoice = { ok: true; subnets: Subnet[] } | { ok: false; problem: SettingProblem };

/**
 * The load balancer's subnets. Named by the user (IDs or Name tags): exactly those. Else discovered:
 * subnets of the VPC tagged for this cluster or for no cluster, not in Local or Wavelength Zones, public
 * ones only for an internet-facing load balancer; one per zone, preferring the role tag
 * (`kubernetes.io/role/elb` or `kubernetes.io/role/internal-elb`), then our cluster tag, then the lowest ID.
 */
export function chooseSubnets(input: {
  scheme: 'internet-facing' | 'internal';
  clusterName: string;
  subnets: readonly Subnet[];
  routeTables: readonly RouteTable[];
  zones: readonly AvailabilityZone[];
  requested?: readonly string[];
  /** A dual-stack load balancer: every subnet needs an IPv6 CIDR block. */
  dualstack?: boolean;
  /** How the user names the settings a problem points at. */
  settings?: Pick<SettingNames, 'subnets' | 'ipAddressType'>;
}): SubnetChoice {
  const settings = input.settings ?? MODEL_SETTING_NAMES;
  const hasIpv6 = (s: Subnet) => (s.ipv6CidrBlocks ?? []).length > 0;
  if (input.requested) {
    const chosen: Subnet[] = [];
    for (const ref of input.requested) {
      const matches = input.subnets.filter((s) => s.subnetId === ref || s.tags.Name === ref);
      if (matches.length !== 1) {
        return {
          ok: false,
          problem: {
            annotation: settings.subnets,
            message:
              matches.length === 0 ? `no subnet "${ref}" in the VPC` : `${matches.length} subnets are named "${ref}"`,
          },
        };
      }
      if (input.dualstack && !hasIpv6(matches[0]!)) {
        return {
          ok: false,
          problem: {
            annotation: settings.subnets,
            message: `subnet "${ref}" has no IPv6 CIDR block, which a dualstack load balancer (${settings.ipAddressType}) needs`,
          },
        };
      }
      if (!chosen.includes(matches[0]!)) chosen.push(matches[0]!);
    }
    const zones = new Set(chosen.map((s) => s.availabilityZone));
    if (zones.size < chosen.length) {
      return {
        ok: false,
        problem: { annotation: settings.subnets, message: 'names two subnets in one availability zone' },
      };
    }
    return { ok: true, subnets: chosen };
  }

  const ours = clusterTagKey(input.clusterName);
  const roleTag = input.scheme === 'internal' ? 'kubernetes.io/role/internal-elb' : 'kubernetes.io/role/elb';
  const zoneType = new Map(input.zones.map((z) => [z.zoneName, z.zoneType ?? 'availability-zone']));
  const hasRole = (s: Subnet) => roleTag in s.tags && s.tags[roleTag] !== '0' && s.tags[roleTag] !== 'false';
  const byZone = new Map<string, Subnet>();
  for (const subnet of [...input.subnets].sort((a, b) => (a.subnetId < b.subnetId ? -1 : 1))) {
    const clusterTags = Object.keys(subnet.tags).filter((k) => k.startsWith('kubernetes.io/cluster/'));
    if (clusterTags.length > 0 && !clusterTags.includes(ours)) continue;
    const type = zoneType.get(subnet.availabilityZone) ?? 'availability-zone';
    if (type === 'local-zone' || type === 'wavelength-zone') continue;
    if (input.dualstack && !hasIpv6(subnet)) continue;
    if (input.scheme === 'internet-facing' && !isPublicSubnet(subnet.subnetId, input.routeTables)) continue;
    const existing = byZone.get(subnet.availabilityZone);
    if (!existing) {
      byZone.set(subnet.availabilityZone, subnet);
      continue;
    }
    // Sorted by ID, so an equal rank keeps the lower ID already chosen.
    if (hasRole(existing) !== hasRole(subnet)) {
      if (hasRole(subnet)) byZone.set(subnet.availabilityZone, subnet);
      continue;
    }
    const existingOurs = ours in existing.tags;
    const subnetOurs = ours in subnet.tags;
    if (existingOurs !== subnetOurs && subnetOurs) byZone.set(subnet.availabilityZone, subnet);
  }
  const chosen = [...byZone.values()].sort((a, b) => (a.availabilityZone < b.availabilityZone ? -1 : 1));
  if (chosen.length === 0) {
    const what = `${input.scheme === 'internal' ? 'internal' : 'public (routed to an internet gateway)'}${input.dualstack ? ' IPv6-enabled' : ''}`;
    return {
      ok: false,
      problem: {
        annotation: settings.subnets,
        message: `no ${what} subnet found for an ${input.scheme} load balancer: tag subnets ${roleTag}=1 and ${ours}=shared, or list them in this annotation`,
      },
    };
  }
  return { ok: true, subnets: chosen };
}

/** Subnets with their Elastic IPs (in the order given) or private addresses (each inside its subnet). */
export function subnetMappings(
  subnets: readonly Subnet[],
  spec: Pick<Elbv2LoadBalancerModel, 'eipAllocations' | 'privateIpv4Addresses'>,
  settings: Pick<SettingNames, 'eipAllocations' | 'privateIpv4Addresses'> = MODEL_SETTING_NAMES,
): { ok: true; mappings: SubnetMapping[] } | { ok: false; problem: SettingProblem } {
  if (spec.eipAllocations && spec.eipAllocations.length !== subnets.length) {
    return {
      ok: false,
      problem: {
        annotation: settings.eipAllocations,
        message: `lists ${spec.eipAllocations.length} allocations for ${subnets.length} subnets: one per subnet`,
      },
    };
  }
  const mappings: SubnetMapping[] = [];
  for (const [index, subnet] of subnets.entries()) {
    const mapping: SubnetMapping = { subnetId: subnet.subnetId };
    if (spec.eipAllocations) mapping.allocationId = spec.eipAllocations[index]!;
    if (spec.privateIpv4Addresses) {
      const block = tryParseCidr(subnet.cidrBlock);
      const inside = spec.privateIpv4Addresses.filter((ip) => {
        const address = tryParseCidr(`${ip}/32`);
        return block && address && cidrContains(block, address);
      });
      if (inside.length !== 1) {
        return {
          ok: false,
          problem: {
            annotation: settings.privateIpv4Addresses,
            message: `needs exactly one address inside subnet ${subnet.subnetId} (${subnet.cidrBlock ?? 'unknown CIDR'}), found ${inside.length}`,
          },
        };
      }
      mapping.privateIPv4Address = inside[0]!;
    }
    mappings.push(mapping);
  }
  if (spec.privateIpv4Addresses && spec.privateIpv4Addresses.length !== subnets.length) {
    return {
      ok: false,
      problem: {
        annotation: settings.privateIpv4Addresses,
        message: `lists ${spec.privateIpv4Addresses.length} addresses for ${subnets.length} subnets: one per subnet`,
      },
    };
  }
  return { ok: true, mappings };
}

export type SubnetPlan =
  | { action: 'none' }
  /** Zones added or removed, every remaining zone as it is: one SetSubnets. */
  | { action: 'set'; mappings: SubnetMapping[] }
  /**
   * Some zones keep their place but change subnet or address, which AWS does only by removing the zone and
   * adding it again later: first SetSubnets without them (`mappings`), then a later pass adds them back.
   */
  | { action: 'remove-first'; mappings: SubnetMapping[]; zones: string[] }
  /** Every zone changes: nothing could stay while they are removed, so the load balancer is made again. */
  | { action: 'replace'; zones: string[] };

type CurrentSubnet = SubnetMapping & { zoneName?: string };

/**
 * How to move a load balancer from its current subnets to the wanted ones. A zone stays as it is when its
 * subnet is the same and each address the Service names (Elastic IP, private IPv4) is the one in use;
 * addresses the Service does not name are whatever AWS assigned and are kept. Zones are the subnets' zones
 * (`zoneOf`, from DescribeSubnets) so that a subnet moving within a zone is seen as a change of that zone.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/network/availability-zones.html
 */
export function planSubnets(
  current: readonly CurrentSubnet[],
  wanted: readonly SubnetMapping[],
  zoneOf: (subnetId: string) => string | undefined,
): SubnetPlan {
  const zone = (m: CurrentSubnet) => m.zoneName ?? zoneOf(m.subnetId) ?? m.subnetId;
  const currentByZone = new Map(current.map((m) => [zone(m), m]));
  const wantedByZone = new Map(wanted.map((m) => [zoneOf(m.subnetId) ?? m.subnetId, m]));
  const keep = (have: CurrentSubnet, want: SubnetMapping) =>
    have.subnetId === want.subnetId &&
    (want.allocationId === undefined || have.allocationId === want.allocationId) &&
    (want.privateIPv4Address === undefined || have.privateIPv4Address === want.privateIPv4Address);
  // A staying zone is sent as it is (AWS wants the existing configuration of every zone that remains).
  const asIs = (m: CurrentSubnet): SubnetMapping => {
    const { zoneName: _zone, ...mapping } = m;
    return mapping;
  };
  const changed: string[] = [];
  const next: SubnetMapping[] = [];
  for (const [name, want] of wantedByZone) {
    const have = currentByZone.get(name);
    if (!have) next.push(want);
    else if (keep(have, want)) next.push(asIs(have));
    else changed.push(name);
  }
  const removed = [...currentByZone.keys()].filter((name) => !wantedByZone.has(name));
  if (changed.length === 0) {
    return removed.length === 0 && next.length === current.length
      ? { action: 'none' }
      : { action: 'set', mappings: next };
  }
  changed.sort();
  if (next.length === 0) return { action: 'replace', zones: changed };
  return { action: 'remove-first', mappings: next, zones: changed };
}

/** Subnets the user named or discovery found (or `requested`), with their Elastic IPs or private addresses. */
export async function wantedSubnets(
  spec: Pick<
    Elbv2LoadBalancerModel,
    'scheme' | 'requestedSubnets' | 'ipAddressType' | 'eipAllocations' | 'privateIpv4Addresses'
  >,
  ctx: LoadBalancerContext,
  requested: readonly string[] | undefined = spec.requestedSubnets,
  known?: readonly Subnet[],
): Promise<SubnetMapping[]> {
  const subnets = known ?? (await ctx.ec2.describeSubnets({ vpcId: ctx.vpcId }));
  const discovering = !requested;
  const choice = chooseSubnets({
    scheme: spec.scheme,
    clusterName: ctx.clusterName,
    subnets,
    routeTables: discovering && spec.scheme === 'internet-facing' ? await ctx.ec2.findRouteTablesByVpc(ctx.vpcId) : [],
    zones: discovering ? await ctx.reads.zones() : [],
    requested,
    dualstack: spec.ipAddressType === 'dualstack',
    settings: ctx.settings,
  });
  if (!choice.ok) throw ctx.userError(`${choice.problem.annotation}: ${choice.problem.message}`);
  const mapped = subnetMappings(choice.subnets, spec, ctx.settings);
  if (!mapped.ok) throw ctx.userError(`${mapped.problem.annotation}: ${mapped.problem.message}`);
  return mapped.mappings;
}

/**
 * What the load balancer's subnets need. Subnets are chosen once; afterwards only the user's settings move
 * them: the subnets they name, or the Elastic IPs / private IPv4 addresses on the subnets in use
 * (in zone order, as at creation). Discovery is not re-run, so tagging a new subnet does not move a live
 * load balancer. Addresses already in use cost no DescribeSubnets.
 */
export async function planLoadBalancerSubnets(
  lb: LoadBalancer,
  spec: Pick<
    Elbv2LoadBalancerModel,
    'scheme' | 'requestedSubnets' | 'ipAddressType' | 'eipAllocations' | 'privateIpv4Addresses'
  >,
  ctx: LoadBalancerContext,
): Promise<SubnetPlan> {
  if (!spec.requestedSubnets && !spec.eipAllocations && !spec.privateIpv4Addresses) return { action: 'none' };
  const inZoneOrder = [...lb.subnets].sort((a, b) => ((a.zoneName ?? '') < (b.zoneName ?? '') ? -1 : 1));
  if (!spec.requestedSubnets) {
    const sameEips =
      !spec.eipAllocations ||
      (spec.eipAllocations.length === inZoneOrder.length &&
        spec.eipAllocations.every((id, i) => inZoneOrder[i]!.allocationId === id));
    const inUse = new Set(inZoneOrder.map((m) => m.privateIPv4Address));
    const samePrivate =
      !spec.privateIpv4Addresses ||
      (spec.privateIpv4Addresses.length === inZoneOrder.length &&
        spec.privateIpv4Addresses.every((ip) => inUse.has(ip)));
    if (sameEips && samePrivate) return { action: 'none' };
  }
  const subnets = await ctx.ec2.describeSubnets({ vpcId: ctx.vpcId });
  const zoneOf = (id: string) => subnets.find((s) => s.subnetId === id)?.availabilityZone;
  const requested = spec.requestedSubnets ?? inZoneOrder.map((m) => m.subnetId);
  const wanted = await wantedSubnets(spec, ctx, requested, subnets);
  return planSubnets(lb.subnets, wanted, zoneOf);
}
