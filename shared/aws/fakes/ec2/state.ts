import type {
  AvailabilityZone,
  Instance,
  InstanceTypeInfo,
  Route,
  RouteState,
  RouteTarget,
  SecurityGroup,
  Subnet,
} from '../../ec2-port.ts';
import { Ec2InterfaceState } from './interface-state.ts';
import { NewResourceWindow } from './new-resource-window.ts';
import type { FakeNetworkInterface, FakeRouteTable } from './records.ts';
import { isWellFormedId } from './wire.ts';

// The ELBv2 fake shares the window (shared/aws/fakes/elbv2/state.ts imports it from here).
export { NewResourceWindow } from './new-resource-window.ts';

/** Something that keeps a security group in use (a load balancer's network interfaces), until `releaseAt`. */
interface SecurityGroupHold {
  groupIds: string[];
  releaseAt?: number;
}

/**
 * The account behind the fake EC2 API: what exists, and the few rules about it that several API calls share
 * (what a lookup sees during eventual consistency, what keeps a security group in use, route states). Tests set
 * the account up with the `put*` helpers and read it back through the maps; the API calls live in the modules
 * beside this one.
 */
export class Ec2State extends Ec2InterfaceState {
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
        hypervisor: 'nitro',
        bareMetal: false,
      },
    ],
    [
      't3.medium',
      {
        instanceType: 't3.medium',
        maximumNetworkInterfaces: 3,
        ipv4AddressesPerInterface: 6,
        ipv6AddressesPerInterface: 6,
        hypervisor: 'nitro',
        bareMetal: false,
      },
    ],
  ]);
  readonly routeTables = new Map<string, FakeRouteTable>();
  /**
   * Non-propagated routes a table may hold (the "Routes per route table" quota: 50 unless raised, at most 1000);
   * CreateRoute beyond it answers RouteLimitExceeded.
   */
  routeLimit = 50;
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

  private readonly invisibleFor = new Map<string, number>();
  private readonly invisibleUntil = new Map<string, number>();
  /** The longest a new instance stays unseen, whatever its `invisibleForCalls` (see `putInstance`). */
  newInstanceInvisibleMaxMs = 60_000;
  private readonly holds = new Map<string, SecurityGroupHold>();
  private readonly hiddenGroups = new NewResourceWindow(() => this.clock.now());
  /** Every ID the account has held: well-formed by definition, however a test spelt it (see `isKnownId`). */
  private readonly everHeld = new Set<string>();
  private idCounter = 0;

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
    this.clearInterfaces();
    this.securityGroups.clear();
    this.hiddenGroups.clear();
    this.holds.clear();
    this.routeTables.clear();
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
