import type { Ec2Facts } from '../../shared/aws/ec2-facts.ts';
import type { InstanceTypeInfo, NetworkInterfaceDetail } from '../../shared/aws/ec2-port.ts';
import type { IpamEc2 } from './deps.ts';
import type { PoolRecord } from './record.ts';

/**
 * What EC2 says about a Node's pool, read only when the journal cannot be trusted alone (none yet, a resync, a
 * retried pass, or older than VERIFY_AFTER_SECONDS): the primary interface's secondary addresses and prefixes, how
 * many the instance type allows, and the subnet's prefix length. Instance types and subnet blocks never change, so
 * each container asks EC2 once per type and subnet (`Ec2Facts`).
 */

/** How long the journal's copy of the interface is trusted without a look at EC2. */
export const VERIFY_AFTER_SECONDS = 600;
/** How long an address EC2 gave us may stay unseen in DescribeNetworkInterfaces before it is forgotten. */
export const FRESH_SECONDS = 300;
/** How long a released unit still shown by DescribeNetworkInterfaces is waited for before it is released again. */
export const RELEASE_AGAIN_SECONDS = 60;

export interface ObservedInterface {
  eni: string;
  /** Addresses or prefixes besides the primary address: IPv4 addresses per interface - 1. */
  slots: number;
  /**
   * The instance type is Nitro (or bare metal, built on Nitro too): only those take /28 prefixes. The reference
   * (pkg/utils IsNitroInstance) asks the same of its instance-type table; here DescribeInstanceTypes says it.
   */
  nitro: boolean;
  instanceType: string;
  /** The interface's primary address (the Node's): never a Pod's, whatever an assign answer lists. */
  primary?: string;
  prefixLength: number;
  addresses: string[];
  prefixes: string[];
}

/**
 * `gone`: the instance is shutting down or terminated, its network interfaces (and the addresses on them) go with
 * it, and nothing will show again: not a wait for EC2 to catch up.
 */
export type Observation = { ok: true; observed: ObservedInterface } | { ok: false; problem: string; gone?: true };

export async function observeInterface(ec2: IpamEc2, facts: Ec2Facts, instanceId: string): Promise<Observation> {
  return (await observeInterfaces(ec2, facts, [instanceId])).get(instanceId)!;
}

/**
 * `observeInterface` for many instances at once (the Nodes of a batch): one DescribeInstances and one
 * DescribeNetworkInterfaces for all of them, however many (the adapter splits them into calls EC2 accepts).
 */
export async function observeInterfaces(
  ec2: IpamEc2,
  facts: Ec2Facts,
  instanceIds: readonly string[],
): Promise<Map<string, Observation>> {
  const found = await ec2.describeInstances(instanceIds);
  const primaries = new Map<string, string>();
  const observations = new Map<string, Observation>();
  for (const id of instanceIds) {
    const instance = found.get(id);
    const primary = instance?.networkInterfaces.find((e) => e.deviceIndex === 0);
    if (!instance) observations.set(id, { ok: false, problem: `EC2 does not show instance ${id}` });
    else if (instance.state === 'shutting-down' || instance.state === 'terminated') {
      observations.set(id, { ok: false, problem: `instance ${id} is ${instance.state}`, gone: true });
    } else if (!primary)
      observations.set(id, { ok: false, problem: `instance ${id} has no primary network interface` });
    else primaries.set(id, primary.networkInterfaceId);
  }
  if (primaries.size === 0) return observations;
  const [interfaces, types] = await Promise.all([
    ec2.describeNetworkInterfaces({ networkInterfaceIds: [...primaries.values()] }),
    facts.instanceTypes([...primaries.keys()].map((id) => found.get(id)!.instanceType)),
  ]);
  const byId = new Map(interfaces.map((eni) => [eni.networkInterfaceId, eni]));
  for (const [id, eniId] of primaries) {
    const type = found.get(id)!.instanceType;
    observations.set(id, await observation(facts, byId.get(eniId), eniId, type, types.get(type)));
  }
  return observations;
}

async function observation(
  facts: Ec2Facts,
  eni: NetworkInterfaceDetail | undefined,
  eniId: string,
  typeName: string,
  type: InstanceTypeInfo | undefined,
): Promise<Observation> {
  if (!eni) return { ok: false, problem: `EC2 does not show network interface ${eniId}` };
  if (!type) return { ok: false, problem: `EC2 does not know instance type ${typeName}` };
  const slots = Math.max(0, type.ipv4AddressesPerInterface - 1);
  const prefixLength = Number((await facts.subnetCidr(eni.subnetId))?.split('/')[1]);
  if (!Number.isInteger(prefixLength)) return { ok: false, problem: `EC2 does not show subnet ${eni.subnetId}` };
  const nitro = type.bareMetal === true || type.hypervisor === 'nitro';
  return {
    ok: true,
    observed: { eni: eni.networkInterfaceId, slots, nitro, instanceType: typeName, prefixLength, ...units(eni) },
  };
}

/** The pool's units as EC2 describes them: the secondary addresses (`Primary: false`) and the /28 prefixes. */
export function units(eni: NetworkInterfaceDetail): { primary?: string; addresses: string[]; prefixes: string[] } {
  const primary = eni.privateIpAddresses.find((a) => a.primary)?.address;
  return {
    ...(primary ? { primary } : {}),
    addresses: eni.privateIpAddresses.filter((a) => !a.primary && a.address !== primary).map((a) => a.address),
    prefixes: [...eni.ipv4Prefixes],
  };
}

/**
 * The pool from what EC2 shows and the journal: units EC2 gave us that it does not show yet still count (for
 * FRESH_SECONDS); units being released are not part of it, and those still shown after RELEASE_AGAIN_SECONDS are
 * released again (`again`). Returns the journal with the interface facts and this look's time.
 */
export function mergeObserved(
  record: PoolRecord,
  observed: ObservedInterface,
  now: number,
): {
  record: PoolRecord;
  pool: { addresses: string[]; prefixes: string[] };
  again: { addresses: string[]; prefixes: string[] };
} {
  const shown = new Set([...observed.addresses, ...observed.prefixes]);
  const fresh: Record<string, number> = {};
  for (const [unit, since] of Object.entries(record.fresh)) {
    if (!shown.has(unit) && since + FRESH_SECONDS > now) fresh[unit] = since;
  }
  const releasing: Record<string, number> = {};
  const again = { addresses: [] as string[], prefixes: [] as string[] };
  for (const [unit, since] of Object.entries(record.releasing)) {
    if (!shown.has(unit)) continue;
    const repeat = since + RELEASE_AGAIN_SECONDS <= now;
    releasing[unit] = repeat ? now : since;
    if (repeat) (unit.includes('/') ? again.prefixes : again.addresses).push(unit);
  }
  const keep = (unit: string) => releasing[unit] === undefined;
  // What EC2 gave and a describe does not show yet still counts, but never the interface's primary address.
  const unseen = Object.keys(fresh).filter((unit) => unit !== observed.primary);
  const pool = {
    addresses: [...observed.addresses.filter(keep), ...unseen.filter((u) => !u.includes('/'))],
    prefixes: [...observed.prefixes.filter(keep), ...unseen.filter((u) => u.includes('/'))],
  };
  return {
    record: {
      ...record,
      eni: observed.eni,
      slots: observed.slots,
      nitro: observed.nitro,
      primary: observed.primary,
      prefixLength: observed.prefixLength,
      verifiedAt: now,
      fresh,
      releasing,
    },
    pool,
    again,
  };
}
