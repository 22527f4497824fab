import { type Clock, systemClock } from '../../../clock.ts';
import type { Instance, NetworkInterface, Subnet } from '../../ec2-port.ts';
import { addressesOf, freeAddresses, ipv4ToNumber } from './addresses.ts';
import { NewResourceWindow } from './new-resource-window.ts';
import type { FakeNetworkInterface, InterfaceRecord } from './records.ts';

/**
 * The part of the fake account (Ec2State) that is network interfaces and the addresses they hold: the instances'
 * interfaces and the standalone ones, which subnet addresses are taken, and which new addresses a describe does not
 * show yet. Ec2State builds the rest of the account on it.
 */
export class Ec2InterfaceState {
  readonly instances = new Map<string, Instance>();
  readonly subnets = new Map<string, Subnet>();
  /** Standalone network interfaces (`putNetworkInterface` without attachment); instances hold their own. */
  readonly networkInterfaces = new Map<string, FakeNetworkInterface>();
  /**
   * Eventual consistency after AssignPrivateIpAddresses (off by default): for this long on `clock` a new secondary
   * address or prefix is missing from DescribeNetworkInterfaces and DescribeInstances, although it is assigned (no
   * one else gets it, and it counts against the interface's limit).
   * https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html
   */
  newAddressInvisibleMs = 0;
  /** ... or for this many describes that would have shown it, whichever ends first (0: no limit). */
  newAddressInvisibleCalls = 0;
  /**
   * What AssignPrivateIpAddresses answers in `AssignedPrivateIpAddresses`: `assigned`, EC2's documented answer (the
   * addresses this call assigned), or `every-address`, as the AWS API emulator (moto 5.2.1) answers: every private
   * address of the interface, the primary and earlier ones included (docs/emulator-differences.md,
   * `eni.assign-answer`). DescribeNetworkInterfaces is right either way.
   */
  assignAnswer: 'assigned' | 'every-address' = 'assigned';

  /** Tags and prefixes of instances' interfaces (the port's NetworkInterface has neither). */
  protected readonly interfaceExtras = new Map<string, { ipv4Prefixes: string[]; tags: Record<string, string> }>();
  protected readonly hiddenAddresses = new NewResourceWindow(() => this.clock.now());
  /** Addresses other parties hold (`reserveAddresses`). */
  protected readonly reservedAddresses = new Set<number>();

  /**
   * The clock decides when new addresses show, and (Ec2State) when released holds on security groups end (network
   * interfaces draining).
   */
  constructor(public clock: Clock = systemClock) {}

  /**
   * Other parties (interfaces of other services, addresses kept by hand) take the `count` lowest free addresses of
   * the subnet: a test's way to leave a subnet nearly or entirely full. Answers the addresses taken.
   */
  reserveAddresses(subnetId: string, count: number): string[] {
    const taken = this.freeAddressesOf(subnetId, count);
    for (const address of taken) this.reservedAddresses.add(ipv4ToNumber(address));
    return taken;
  }

  findInterface(networkInterfaceId: string): { instance: Instance; eni: NetworkInterface } | undefined {
    for (const instance of this.instances.values()) {
      const eni = instance.networkInterfaces.find((e) => e.networkInterfaceId === networkInterfaceId);
      if (eni) return { instance, eni };
    }
    return undefined;
  }

  /** Every network interface of the account: those of live instances first, then the standalone ones. */
  interfaceRecords(): InterfaceRecord[] {
    const records: InterfaceRecord[] = [];
    for (const instance of this.instances.values()) {
      if (instance.state === 'terminated') continue;
      for (const eni of instance.networkInterfaces) {
        const subnetId = eni.subnetId ?? instance.subnetId ?? '';
        let extras = this.interfaceExtras.get(eni.networkInterfaceId);
        if (!extras) {
          extras = { ipv4Prefixes: [], tags: {} };
          this.interfaceExtras.set(eni.networkInterfaceId, extras);
        }
        records.push({
          networkInterfaceId: eni.networkInterfaceId,
          subnetId,
          vpcId: this.subnets.get(subnetId)?.vpcId ?? instance.vpcId,
          availabilityZone: this.subnets.get(subnetId)?.availabilityZone ?? instance.availabilityZone,
          status: eni.status,
          instance,
          deviceIndex: eni.deviceIndex,
          privateIpAddresses: eni.privateIpAddresses,
          ipv4Prefixes: extras.ipv4Prefixes,
          tags: extras.tags,
          sourceDestCheck: eni.sourceDestCheck,
          securityGroupIds: eni.securityGroupIds,
        });
      }
    }
    for (const eni of this.networkInterfaces.values()) {
      const subnet = this.subnets.get(eni.subnetId);
      records.push({
        networkInterfaceId: eni.networkInterfaceId,
        subnetId: eni.subnetId,
        vpcId: subnet?.vpcId,
        availabilityZone: subnet?.availabilityZone,
        status: 'available',
        privateIpAddresses: eni.privateIpAddresses,
        ipv4Prefixes: eni.ipv4Prefixes,
        tags: eni.tags,
      });
    }
    return records;
  }

  interfaceRecord(networkInterfaceId: string): InterfaceRecord | undefined {
    return this.interfaceRecords().find((r) => r.networkInterfaceId === networkInterfaceId);
  }

  /** The /28 prefixes delegated to one of an instance's interfaces. */
  prefixesOf(networkInterfaceId: string): string[] {
    return this.interfaceExtras.get(networkInterfaceId)?.ipv4Prefixes ?? [];
  }

  /** The tags of an interface, standalone or an instance's; undefined when the account has no such interface. */
  interfaceTags(networkInterfaceId: string): Record<string, string> | undefined {
    return this.interfaceRecord(networkInterfaceId)?.tags;
  }

  /** Forget a standalone interface, or take an interface off its instance; its addresses go back to the subnet. */
  removeNetworkInterface(networkInterfaceId: string): void {
    this.networkInterfaces.delete(networkInterfaceId);
    this.interfaceExtras.delete(networkInterfaceId);
    for (const instance of this.instances.values()) {
      instance.networkInterfaces = instance.networkInterfaces.filter(
        (e) => e.networkInterfaceId !== networkInterfaceId,
      );
    }
  }

  /** Every address some interface (or another party) holds, prefixes' addresses included, in every subnet. */
  addressesInUse(): Set<number> {
    const used = new Set(this.reservedAddresses);
    for (const record of this.interfaceRecords()) {
      for (const a of record.privateIpAddresses) used.add(ipv4ToNumber(a.address));
      for (const prefix of record.ipv4Prefixes) for (const n of addressesOf(prefix)) used.add(n);
    }
    for (const instance of this.instances.values()) {
      if (instance.state !== 'terminated' && instance.privateIpAddress)
        used.add(ipv4ToNumber(instance.privateIpAddress));
    }
    return used;
  }

  /** The IPv4 block of the subnet; a subnet the fake does not hold is a mistake of the test (put it first). */
  subnetCidr(subnetId: string): string {
    const cidr = this.subnets.get(subnetId)?.cidrBlock;
    if (!cidr) throw new Error(`FakeEc2: no subnet ${subnetId} with an IPv4 block: put it first (makeSubnet)`);
    return cidr;
  }

  /** Newly assigned addresses or prefixes of an interface: hidden for the configured window. */
  startAddressWindow(networkInterfaceId: string, values: readonly string[]): void {
    for (const value of values) {
      this.hiddenAddresses.start(
        `${networkInterfaceId} ${value}`,
        this.newAddressInvisibleMs,
        this.newAddressInvisibleCalls,
      );
    }
  }

  forgetAddresses(networkInterfaceId: string, values: readonly string[]): void {
    for (const value of values) this.hiddenAddresses.forget(`${networkInterfaceId} ${value}`);
  }

  /** The interface's addresses and prefixes as a describe sees them now; counts as one lookup of each hidden one. */
  visibleAddresses(record: Pick<InterfaceRecord, 'networkInterfaceId' | 'privateIpAddresses' | 'ipv4Prefixes'>): {
    privateIpAddresses: InterfaceRecord['privateIpAddresses'];
    ipv4Prefixes: string[];
  } {
    const shown = (value: string) => !this.hiddenAddresses.hides(`${record.networkInterfaceId} ${value}`);
    return {
      privateIpAddresses: record.privateIpAddresses.filter((a) => a.primary || shown(a.address)),
      ipv4Prefixes: record.ipv4Prefixes.filter(shown),
    };
  }

  protected freeAddressesOf(subnetId: string, count: number): string[] {
    const free = freeAddresses(this.subnetCidr(subnetId), this.addressesInUse(), count);
    if (!free) throw new Error(`FakeEc2: fewer than ${count} free addresses left in ${subnetId}`);
    return free;
  }

  /** Empties what this part holds. */
  protected clearInterfaces(): void {
    this.networkInterfaces.clear();
    this.interfaceExtras.clear();
    this.hiddenAddresses.clear();
    this.reservedAddresses.clear();
    this.subnets.clear();
    this.instances.clear();
  }
}
