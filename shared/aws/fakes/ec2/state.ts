import { type Clock, systemClock } from '../../../clock.ts';
import type {
  AvailabilityZone,
  Instance,
  InstanceTypeInfo,
  NetworkInterface,
  Route,
  RouteOrigin,
  RouteState,
  RouteTableAssociation,
  RouteTarget,
  SecurityGroup,
  Subnet,
} from '../../ec2-port.ts';
import { addressesOf, freeAddresses, ipv4ToNumber } from './addresses.ts';
import { isWellFormedId } from './wire.ts';

/**
 * A route as the fake stores it. `state` is normally left out and worked out on every describe from the target
 * (a route to a terminated instance or a vanished interface is a blackhole, as in EC2); set it to pin a state,
 * e.g. a blackhole left by a deleted NAT gateway.
 */
export interface FakeRoute {
  destination: string;
  target: RouteTarget;
  origin: RouteOrigin;
  state?: RouteState;
}

export interface FakeRouteTable {
  routeTableId: string;
  vpcId?: string;
  tags: Record<string, string>;
  routes: FakeRoute[];
  /** Subnet associations and `main` (see RouteTable.associations); left out, the table reports none. */
  associations?: RouteTableAssociation[];
}

/**
 * A network interface as `putNetworkInterface` takes it: one the IP address manager (or anyone) created. Without
 * `attachment` it is a standalone interface, `available`; with one it goes on that instance (which must exist) as
 * an attached interface, listed by DescribeInstances too. Without addresses it gets the first free one of its subnet
 * as its primary address.
 */
export interface FakeNetworkInterface {
  networkInterfaceId: string;
  subnetId: string;
  attachment?: { instanceId: string; deviceIndex: number };
  /** The primary first. */
  privateIpAddresses: { address: string; primary: boolean }[];
  ipv4Prefixes: string[];
  tags: Record<string, string>;
}

/**
 * One network interface as the API calls see it, wherever the fake keeps it (an instance's, or a standalone one).
 * Its arrays and tags are the stored ones: changing them changes the account.
 */
export interface InterfaceRecord {
  networkInterfaceId: string;
  subnetId: string;
  vpcId?: string;
  availabilityZone?: string;
  /** `in-use` while attached, `available` otherwise. */
  status: string;
  /** The instance it is attached to, and where. */
  instance?: Instance;
  deviceIndex?: number;
  privateIpAddresses: { address: string; primary: boolean; privateDnsName?: string }[];
  ipv4Prefixes: string[];
  tags: Record<string, string>;
  sourceDestCheck?: boolean;
  securityGroupIds?: string[];
}

/** Something that keeps a security group in use (a load balancer's network interfaces), until `releaseAt`. */
interface SecurityGroupHold {
  groupIds: string[];
  releaseAt?: number;
}

/**
 * Resources a fake account has just created and the rest of its API does not know yet. EC2 (and ELBv2) are
 * eventually consistent: a command naming a resource created a moment ago may answer that it does not exist.
 * https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html
 * A resource is hidden until `ms` of the fake's clock have passed since its creation, or until `calls` lookups
 * have missed it, whichever comes first; a window of 0 is no limit, and both 0 never hides it.
 */
export class NewResourceWindow {
  private readonly hidden = new Map<string, { until: number; lookupsLeft: number }>();

  constructor(private readonly now: () => number) {}

  start(id: string, ms: number, calls: number): void {
    if (ms <= 0 && calls <= 0) return;
    this.hidden.set(id, {
      until: ms > 0 ? this.now() + ms : Number.POSITIVE_INFINITY,
      lookupsLeft: calls > 0 ? calls : Number.POSITIVE_INFINITY,
    });
  }

  /** Whether a lookup of `id` misses it now; a miss uses up one of its `calls`. */
  hides(id: string): boolean {
    const entry = this.hidden.get(id);
    if (!entry) return false;
    if (this.now() >= entry.until || entry.lookupsLeft <= 0) {
      this.hidden.delete(id);
      return false;
    }
    entry.lookupsLeft--;
    return true;
  }

  forget(id: string): void {
    this.hidden.delete(id);
  }

  clear(): void {
    this.hidden.clear();
  }
}

/**
 * The account behind the fake EC2 API: what exists, and the few rules about it that several API calls share
 * (what a lookup sees during eventual consistency, what keeps a security group in use, route states). Tests set
 * the account up with the `put*` helpers and read it back through the maps; the API calls live in the modules
 * beside this one.
 */
export class Ec2State {
  readonly instances = new Map<string, Instance>();
  readonly zones: AvailabilityZone[] = [
    { zoneName: 'eu-west-1a', zoneId: 'euw1-az3', zoneType: 'availability-zone' },
    { zoneName: 'eu-west-1b', zoneId: 'euw1-az1', zoneType: 'availability-zone' },
    { zoneName: 'eu-west-1c', zoneId: 'euw1-az2', zoneType: 'availability-zone' },
  ];
  readonly instanceTypes = new Map<string, InstanceTypeInfo>([
    [
      'm5.large',
      {
        instanceType: 'm5.large',
        maximumNetworkInterfaces: 3,
        ipv4AddressesPerInterface: 10,
        ipv6AddressesPerInterface: 10,
      },
    ],
    [
      't3.medium',
      {
        instanceType: 't3.medium',
        maximumNetworkInterfaces: 3,
        ipv4AddressesPerInterface: 6,
        ipv6AddressesPerInterface: 6,
      },
    ],
  ]);
  readonly routeTables = new Map<string, FakeRouteTable>();
  /**
   * Non-propagated routes a table may hold (the "Routes per route table" quota: 50 unless raised, at most 1000);
   * CreateRoute beyond it answers RouteLimitExceeded.
   */
  routeLimit = 50;
  readonly subnets = new Map<string, Subnet>();
  readonly securityGroups = new Map<string, SecurityGroup>();
  /** Inbound rules a security group may hold ("Inbound or outbound rules per security group": 60 by default). */
  securityGroupRuleLimit = 60;
  /**
   * Eventual consistency after CreateSecurityGroup (off by default): for this long on `clock` a new group is
   * missing from DescribeSecurityGroups, and AuthorizeSecurityGroupIngress / RevokeSecurityGroupIngress on it
   * (or naming it as a rule's source), CreateTags / DeleteTags and DeleteSecurityGroup on it answer
   * InvalidGroup.NotFound, as EC2 documents for commands using a just-created group's ID; the group stays.
   * A linked FakeElbv2 answers InvalidSecurityGroup for it. CreateSecurityGroup of the same name still answers
   * InvalidGroup.Duplicate. Groups added with `putSecurityGroup` are never hidden.
   * https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html
   */
  newSecurityGroupInvisibleMs = 0;
  /** ... or for this many lookups of it (each call that would have found it), whichever ends first (0: no limit). */
  newSecurityGroupInvisibleCalls = 0;
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

  /** Tags and prefixes of instances' interfaces (the port's NetworkInterface has neither). */
  private readonly interfaceExtras = new Map<string, { ipv4Prefixes: string[]; tags: Record<string, string> }>();
  private readonly hiddenAddresses = new NewResourceWindow(() => this.clock.now());
  /** Addresses other parties hold (`reserveAddresses`). */
  private readonly reservedAddresses = new Set<number>();
  private readonly invisibleFor = new Map<string, number>();
  private readonly invisibleUntil = new Map<string, number>();
  /** The longest a new instance stays unseen, whatever its `invisibleForCalls` (see `putInstance`). */
  newInstanceInvisibleMaxMs = 60_000;
  private readonly holds = new Map<string, SecurityGroupHold>();
  private readonly hiddenGroups = new NewResourceWindow(() => this.clock.now());
  /** Every ID the account has held: well-formed by definition, however a test spelt it (see `isKnownId`). */
  private readonly everHeld = new Set<string>();
  private idCounter = 0;

  /** The clock decides when released holds on security groups end (network interfaces draining). */
  constructor(public clock: Clock = systemClock) {}

  /**
   * Add or replace an instance. `invisibleForCalls` emulates EC2's eventual consistency: that many lookups miss it,
   * within `newInstanceInvisibleMaxMs` of now (EC2 shows a new instance within seconds to a minute, not forever).
   */
  putInstance(instance: Instance, options: { invisibleForCalls?: number } = {}): Instance {
    this.instances.set(instance.instanceId, structuredClone(instance));
    this.everHeld.add(instance.instanceId);
    for (const eni of instance.networkInterfaces) this.everHeld.add(eni.networkInterfaceId);
    if (options.invisibleForCalls) {
      this.invisibleFor.set(instance.instanceId, options.invisibleForCalls);
      this.invisibleUntil.set(instance.instanceId, this.clock.now() + this.newInstanceInvisibleMaxMs);
    }
    return instance;
  }

  setState(instanceId: string, state: Instance['state']): void {
    const instance = this.instances.get(instanceId);
    if (!instance) throw new Error(`FakeEc2: no instance ${instanceId}`);
    instance.state = state;
    if (state === 'terminated') {
      // A terminated instance keeps being described for a while, without its network identity.
      instance.privateDnsName = undefined;
      instance.privateIpAddress = undefined;
      instance.publicDnsName = undefined;
      instance.publicIpAddress = undefined;
      instance.networkInterfaces = [];
    }
    if (state === 'stopped') {
      instance.publicDnsName = undefined;
      instance.publicIpAddress = undefined;
    }
  }

  /** Forget an instance entirely (as EC2 does about an hour after termination). */
  removeInstance(instanceId: string): void {
    this.instances.delete(instanceId);
  }

  /** Add or replace a route table (see `makeRouteTable`). */
  putRouteTable(table: FakeRouteTable): FakeRouteTable {
    this.routeTables.set(table.routeTableId, structuredClone(table));
    this.everHeld.add(table.routeTableId);
    return table;
  }

  /** A table's routes as DescribeRouteTables shows them now (states worked out). */
  routesOf(routeTableId: string): Route[] {
    const table = this.routeTables.get(routeTableId);
    if (!table) throw new Error(`FakeEc2: no route table ${routeTableId}`);
    return this.currentRoutes(table);
  }

  /** Add or replace a subnet (see `makeSubnet`). */
  putSubnet(subnet: Subnet): Subnet {
    this.subnets.set(subnet.subnetId, structuredClone(subnet));
    this.everHeld.add(subnet.subnetId);
    return subnet;
  }

  /**
   * Add or replace a network interface (see `makeNetworkInterface` and `FakeNetworkInterface`): standalone and
   * `available`, or attached to the instance its `attachment` names. Answers it as stored (with its primary address).
   */
  putNetworkInterface(eni: FakeNetworkInterface): FakeNetworkInterface {
    const stored = structuredClone(eni);
    this.removeNetworkInterface(stored.networkInterfaceId);
    if (stored.privateIpAddresses.length === 0) {
      const [address] = this.freeAddressesOf(stored.subnetId, 1);
      stored.privateIpAddresses = [{ address: address!, primary: true }];
    }
    this.everHeld.add(stored.networkInterfaceId);
    if (!stored.attachment) {
      this.networkInterfaces.set(stored.networkInterfaceId, stored);
      return structuredClone(stored);
    }
    const instance = this.instances.get(stored.attachment.instanceId);
    if (!instance)
      throw new Error(`FakeEc2: no instance ${stored.attachment.instanceId} to attach ${eni.networkInterfaceId}`);
    instance.networkInterfaces.push({
      networkInterfaceId: stored.networkInterfaceId,
      deviceIndex: stored.attachment.deviceIndex,
      status: 'in-use',
      subnetId: stored.subnetId,
      privateIpAddresses: stored.privateIpAddresses,
      ipv6Addresses: [],
    });
    instance.networkInterfaces.sort((a, b) => a.deviceIndex - b.deviceIndex);
    this.interfaceExtras.set(stored.networkInterfaceId, { ipv4Prefixes: stored.ipv4Prefixes, tags: stored.tags });
    return structuredClone(stored);
  }

  /**
   * Other parties (interfaces of other services, addresses kept by hand) take the `count` lowest free addresses of
   * the subnet: a test's way to leave a subnet nearly or entirely full. Answers the addresses taken.
   */
  reserveAddresses(subnetId: string, count: number): string[] {
    const taken = this.freeAddressesOf(subnetId, count);
    for (const address of taken) this.reservedAddresses.add(ipv4ToNumber(address));
    return taken;
  }

  /** Add or replace a security group as another party made it (a node group, a user's group). */
  putSecurityGroup(group: SecurityGroup): SecurityGroup {
    this.securityGroups.set(group.groupId, structuredClone(group));
    this.everHeld.add(group.groupId);
    return group;
  }

  /**
   * The group as a call naming it now sees it: undefined while it is unknown or still hidden after its creation
   * (see `newSecurityGroupInvisibleMs`). Counts as a lookup of it.
   */
  visibleSecurityGroup(groupId: string): SecurityGroup | undefined {
    const group = this.securityGroups.get(groupId);
    return group && !this.hiddenGroups.hides(groupId) ? group : undefined;
  }

  /**
   * `holder` (e.g. a load balancer) has network interfaces in these groups: DeleteSecurityGroup answers
   * DependencyViolation until the hold is released and its delay has passed.
   */
  holdSecurityGroups(holder: string, groupIds: readonly string[]): void {
    this.holds.set(holder, { groupIds: [...groupIds] });
  }

  /** The holder's interfaces go away `afterMs` from now (ENIs of a deleted load balancer drain for minutes). */
  releaseSecurityGroups(holder: string, afterMs = 0): void {
    const hold = this.holds.get(holder);
    if (hold) hold.releaseAt = this.clock.now() + afterMs;
  }

  /** Empties the account (the zones and instance types stay). */
  protected clearState(): void {
    this.networkInterfaces.clear();
    this.interfaceExtras.clear();
    this.hiddenAddresses.clear();
    this.reservedAddresses.clear();
    this.subnets.clear();
    this.securityGroups.clear();
    this.hiddenGroups.clear();
    this.holds.clear();
    this.routeTables.clear();
    this.instances.clear();
    this.invisibleFor.clear();
    this.invisibleUntil.clear();
  }

  // ---- the rules API calls share -------------------------------------------------------------------------

  /** The instance as a lookup naming it now sees it; a miss while it is new uses up one of its invisible calls. */
  visibleInstance(instanceId: string): Instance | undefined {
    const hiddenFor = this.invisibleFor.get(instanceId) ?? 0;
    if (hiddenFor > 0 && this.clock.now() < (this.invisibleUntil.get(instanceId) ?? Number.POSITIVE_INFINITY)) {
      this.invisibleFor.set(instanceId, hiddenFor - 1);
      return undefined;
    }
    return this.instances.get(instanceId);
  }

  /** A new group of this account: hidden for the configured window (see `newSecurityGroupInvisibleMs`). */
  addCreatedSecurityGroup(group: SecurityGroup): void {
    this.securityGroups.set(group.groupId, group);
    this.everHeld.add(group.groupId);
    this.hiddenGroups.start(group.groupId, this.newSecurityGroupInvisibleMs, this.newSecurityGroupInvisibleCalls);
  }

  /** Network interfaces use the group: a holder's not yet drained, or a live instance's. */
  securityGroupInUse(groupId: string): boolean {
    const now = this.clock.now();
    const held = [...this.holds.values()].some(
      (h) => h.groupIds.includes(groupId) && (h.releaseAt === undefined || now < h.releaseAt),
    );
    return (
      held ||
      [...this.instances.values()].some(
        (i) => i.state !== 'terminated' && i.networkInterfaces.some((e) => e.securityGroupIds?.includes(groupId)),
      )
    );
  }

  removeSecurityGroup(groupId: string): void {
    this.securityGroups.delete(groupId);
    this.hiddenGroups.forget(groupId);
    for (const [holder, hold] of this.holds) {
      hold.groupIds = hold.groupIds.filter((id) => id !== groupId);
      if (hold.groupIds.length === 0) this.holds.delete(holder);
    }
  }

  /**
   * Whether EC2 would take `id` as a well-formed ID of its type: an ID this account has held always is (tests
   * spell some readably, `sg-0000000000000node`), any other must have the type's format (see `isWellFormedId`).
   */
  isWellFormed(prefix: string, id: string): boolean {
    return this.everHeld.has(id) || isWellFormedId(prefix, id);
  }

  /** The next ID of a resource this account creates: the prefix and 17 hex digits. */
  nextId(prefix: string): string {
    return `${prefix}-${(++this.idCounter).toString(16).padStart(17, '0')}`;
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

  private freeAddressesOf(subnetId: string, count: number): string[] {
    const free = freeAddresses(this.subnetCidr(subnetId), this.addressesInUse(), count);
    if (!free) throw new Error(`FakeEc2: fewer than ${count} free addresses left in ${subnetId}`);
    return free;
  }

  /** The table's routes with their states worked out from the targets now. */
  currentRoutes(table: FakeRouteTable): Route[] {
    return structuredClone(
      table.routes.map((route): Route => {
        const state = route.state ?? this.routeState(route.target);
        // Whether EC2 still names the instance of a blackhole route is not promised anywhere; the fake drops it so
        // that no caller comes to rely on it.
        const { instanceId: _gone, ...detached } = route.target;
        return {
          destination: route.destination,
          destinationType: route.destination.startsWith('pl-')
            ? 'prefix-list'
            : route.destination.includes(':')
              ? 'ipv6'
              : 'ipv4',
          target: state === 'blackhole' ? detached : route.target,
          state,
          origin: route.origin,
        };
      }),
    );
  }

  private routeState(target: RouteTarget): RouteState {
    if (target.instanceId) {
      const instance = this.instances.get(target.instanceId);
      if (!instance || instance.state === 'terminated') return 'blackhole';
      if (
        target.networkInterfaceId &&
        !instance.networkInterfaces.some((e) => e.networkInterfaceId === target.networkInterfaceId)
      ) {
        return 'blackhole';
      }
      return 'active';
    }
    if (target.networkInterfaceId) return this.findInterface(target.networkInterfaceId) ? 'active' : 'blackhole';
    return 'active';
  }
}
