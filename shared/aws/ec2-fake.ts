import { type Clock, systemClock } from '../clock.ts';
import { DNS_NAMES_PER_CALL, INSTANCE_IDS_PER_CALL, INSTANCE_TYPES_PER_CALL } from './ec2-adapter.ts';
import {
  type AvailabilityZone,
  type Ec2Port,
  INSTANCE_ID_PATTERN,
  type Instance,
  type InstanceTypeInfo,
  LIVE_INSTANCE_STATES,
  type NetworkInterface,
  type Route,
  type RouteOrigin,
  type RouteState,
  type RouteTable,
  type RouteTableAssociation,
  type RouteTarget,
  type RouteTargetSpec,
  type SecurityGroup,
  type SecurityGroupQuery,
  type SecurityGroupRule,
  type Subnet,
} from './ec2-port.ts';
import { AwsServiceError, toControllerError } from './errors.ts';

export type Ec2Operation =
  | 'DescribeInstances'
  | 'DescribeAvailabilityZones'
  | 'DescribeInstanceTypes'
  | 'ModifyInstanceAttribute'
  | 'ModifyNetworkInterfaceAttribute'
  | 'DescribeRouteTables'
  | 'CreateRoute'
  | 'ReplaceRoute'
  | 'DeleteRoute'
  | 'DescribeSubnets'
  | 'DescribeSecurityGroups'
  | 'CreateSecurityGroup'
  | 'AuthorizeSecurityGroupIngress'
  | 'RevokeSecurityGroupIngress'
  | 'DeleteSecurityGroup'
  | 'CreateTags'
  | 'DeleteTags';

/** Operations that change the account: a reconcile that finds everything in place makes none of them. */
export const EC2_WRITE_OPERATIONS: readonly Ec2Operation[] = [
  'ModifyInstanceAttribute',
  'ModifyNetworkInterfaceAttribute',
  'CreateRoute',
  'ReplaceRoute',
  'DeleteRoute',
  'CreateSecurityGroup',
  'AuthorizeSecurityGroupIngress',
  'RevokeSecurityGroupIngress',
  'DeleteSecurityGroup',
  'CreateTags',
  'DeleteTags',
];

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
 * An in-memory EC2 account with the semantics the controllers depend on: instances with state,
 * ENIs, addresses, DNS names, tags and zones; eventual consistency (a new instance stays invisible
 * for N describe calls; a security group this fake creates can stay unknown for a while, see
 * `newSecurityGroupInvisibleMs`); throttling and queued errors per operation; call counters.
 * It counts calls as the adapter would make them (the adapter's chunk sizes), so tests and benchmarks report realistic API volume.
 */
export class FakeEc2 implements Ec2Port {
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
   * (or naming it as a rule's source), CreateTags / DeleteTags on it answer InvalidGroup.NotFound, as EC2 documents
   * for commands using a just-created group's ID; DeleteSecurityGroup says it is not there ('not-found') and leaves
   * it. A linked FakeElbv2 answers InvalidSecurityGroup for it. CreateSecurityGroup of the same name still answers
   * InvalidGroup.Duplicate ('name-taken'). Groups added with `putSecurityGroup` are never hidden.
   * https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html
   */
  newSecurityGroupInvisibleMs = 0;
  /** ... or for this many lookups of it (each call that would have found it), whichever ends first (0: no limit). */
  newSecurityGroupInvisibleCalls = 0;
  readonly calls = new Map<Ec2Operation, number>();
  /** Artificial latency per call, for the local simulation (0 in tests). */
  latencyMs = 0;
  /**
   * Runs as each call starts, after it is counted: lets a test play another writer acting between a
   * reconciler's read and its write (e.g. someone creating the same route first).
   */
  beforeCall?: (operation: Ec2Operation) => void;

  private readonly invisibleFor = new Map<string, number>();
  private readonly queuedErrors = new Map<Ec2Operation, Error[]>();
  private throttleRemaining = new Map<Ec2Operation, number>();
  private readonly holds = new Map<string, SecurityGroupHold>();
  private readonly hiddenGroups = new NewResourceWindow(() => this.clock.now());
  private idCounter = 0;

  /** The clock decides when released holds on security groups end (network interfaces draining). */
  constructor(public clock: Clock = systemClock) {}

  /** Add or replace an instance. `invisibleForCalls` emulates EC2's eventual consistency. */
  putInstance(instance: Instance, options: { invisibleForCalls?: number } = {}): Instance {
    this.instances.set(instance.instanceId, structuredClone(instance));
    if (options.invisibleForCalls) this.invisibleFor.set(instance.instanceId, options.invisibleForCalls);
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

  /** The next calls of `operation` fail with these errors, in order. */
  queueError(operation: Ec2Operation, ...errors: Error[]): void {
    this.queuedErrors.set(operation, [...(this.queuedErrors.get(operation) ?? []), ...errors]);
  }

  /** The next `times` calls of `operation` answer RequestLimitExceeded. */
  throttle(operation: Ec2Operation, times: number): void {
    this.throttleRemaining.set(operation, times);
  }

  callCount(operation?: Ec2Operation): number {
    if (operation) return this.calls.get(operation) ?? 0;
    return [...this.calls.values()].reduce((a, b) => a + b, 0);
  }

  /** Calls that changed (or tried to change) something. */
  writeCallCount(): number {
    return EC2_WRITE_OPERATIONS.reduce((n, op) => n + this.callCount(op), 0);
  }

  /** Add or replace a route table (see `makeRouteTable`). */
  putRouteTable(table: FakeRouteTable): FakeRouteTable {
    this.routeTables.set(table.routeTableId, structuredClone(table));
    return table;
  }

  /** A table's routes as DescribeRouteTables would show them now (states worked out). */
  routesOf(routeTableId: string): Route[] {
    const table = this.routeTables.get(routeTableId);
    if (!table) throw new Error(`FakeEc2: no route table ${routeTableId}`);
    return this.describeTable(table).routes;
  }

  /** Add or replace a subnet (see `makeSubnet`). */
  putSubnet(subnet: Subnet): Subnet {
    this.subnets.set(subnet.subnetId, structuredClone(subnet));
    return subnet;
  }

  /** Add or replace a security group as another party made it (a node group, a user's group). */
  putSecurityGroup(group: SecurityGroup): SecurityGroup {
    this.securityGroups.set(group.groupId, structuredClone(group));
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

  reset(): void {
    this.subnets.clear();
    this.securityGroups.clear();
    this.hiddenGroups.clear();
    this.holds.clear();
    this.routeTables.clear();
    this.instances.clear();
    this.invisibleFor.clear();
    this.queuedErrors.clear();
    this.throttleRemaining.clear();
    this.calls.clear();
  }

  resetCalls(): void {
    this.calls.clear();
  }

  async describeInstances(instanceIds: readonly string[]): Promise<Map<string, Instance>> {
    const ids = [...new Set(instanceIds)].filter((id) => INSTANCE_ID_PATTERN.test(id));
    const result = new Map<string, Instance>();
    for (let i = 0; i < ids.length; i += INSTANCE_IDS_PER_CALL) {
      await this.call('DescribeInstances');
      for (const id of ids.slice(i, i + INSTANCE_IDS_PER_CALL)) {
        const instance = this.visible(id);
        if (instance) result.set(id, structuredClone(instance));
      }
    }
    return result;
  }

  async findInstancesByPrivateDnsName(names: readonly string[]): Promise<Instance[]> {
    const wanted = [...new Set(names)];
    const found: Instance[] = [];
    for (let i = 0; i < wanted.length; i += DNS_NAMES_PER_CALL) {
      await this.call('DescribeInstances');
      const chunk = new Set(wanted.slice(i, i + DNS_NAMES_PER_CALL));
      for (const instance of this.instances.values()) {
        if (
          instance.privateDnsName &&
          chunk.has(instance.privateDnsName) &&
          LIVE_INSTANCE_STATES.includes(instance.state) &&
          this.visible(instance.instanceId)
        ) {
          found.push(structuredClone(instance));
        }
      }
    }
    return found;
  }

  async describeAvailabilityZones(): Promise<AvailabilityZone[]> {
    await this.call('DescribeAvailabilityZones');
    return structuredClone(this.zones);
  }

  async describeInstanceTypes(instanceTypes: readonly string[]): Promise<InstanceTypeInfo[]> {
    const wanted = [...new Set(instanceTypes)];
    const out: InstanceTypeInfo[] = [];
    for (let i = 0; i < wanted.length; i += INSTANCE_TYPES_PER_CALL) {
      await this.call('DescribeInstanceTypes');
      for (const t of wanted.slice(i, i + INSTANCE_TYPES_PER_CALL)) {
        const info = this.instanceTypes.get(t);
        if (!info)
          throw new AwsServiceError(
            'InvalidInstanceType',
            `The following supplied instance types do not exist: [${t}]`,
          );
        out.push({ ...info });
      }
    }
    return out;
  }

  async describeRouteTable(routeTableId: string): Promise<RouteTable | undefined> {
    await this.call('DescribeRouteTables');
    const table = this.routeTables.get(routeTableId);
    return table ? this.describeTable(table) : undefined;
  }

  async findRouteTablesByTag(tag: { key: string; value?: string }): Promise<RouteTable[]> {
    await this.call('DescribeRouteTables');
    return [...this.routeTables.values()]
      .filter((t) => tag.key in t.tags && (tag.value === undefined || t.tags[tag.key] === tag.value))
      .map((t) => this.describeTable(t));
  }

  async createRoute(
    routeTableId: string,
    destination: string,
    target: RouteTargetSpec,
  ): Promise<'created' | 'already-exists'> {
    await this.call('CreateRoute');
    const doing = `creating route ${destination} in ${routeTableId}`;
    const table = this.tableOrThrow(routeTableId, doing);
    if (table.routes.some((r) => r.destination === destination)) return 'already-exists';
    const resolved = this.resolveTarget(table, target, doing);
    const counted = table.routes.filter((r) => r.origin !== 'EnableVgwRoutePropagation').length;
    if (counted >= this.routeLimit) {
      throw toControllerError(
        doing,
        new AwsServiceError('RouteLimitExceeded', 'The maximum number of routes has been reached.'),
      );
    }
    table.routes.push({ destination, target: resolved, origin: 'CreateRoute' });
    return 'created';
  }

  async replaceRoute(
    routeTableId: string,
    destination: string,
    target: RouteTargetSpec,
  ): Promise<'replaced' | 'not-found'> {
    await this.call('ReplaceRoute');
    const doing = `replacing route ${destination} in ${routeTableId}`;
    const table = this.tableOrThrow(routeTableId, doing);
    const route = table.routes.find((r) => r.destination === destination);
    if (!route) return 'not-found';
    if (route.origin === 'CreateRouteTable') {
      throw toControllerError(doing, new AwsServiceError('InvalidParameterValue', 'cannot replace the local route'));
    }
    route.target = this.resolveTarget(table, target, doing);
    route.state = undefined;
    return 'replaced';
  }

  async deleteRoute(routeTableId: string, destination: string): Promise<'deleted' | 'not-found'> {
    await this.call('DeleteRoute');
    const doing = `deleting route ${destination} from ${routeTableId}`;
    const table = this.tableOrThrow(routeTableId, doing);
    const index = table.routes.findIndex((r) => r.destination === destination);
    if (index < 0) return 'not-found';
    if (table.routes[index]!.origin === 'CreateRouteTable') {
      throw toControllerError(doing, new AwsServiceError('InvalidParameterValue', 'cannot remove local route'));
    }
    table.routes.splice(index, 1);
    return 'deleted';
  }

  async modifyInstanceSourceDestCheck(instanceId: string, enabled: boolean): Promise<void> {
    await this.call('ModifyInstanceAttribute');
    const doing = `setting source/destination check of ${instanceId} to ${enabled}`;
    const instance = this.instances.get(instanceId);
    if (!instance || instance.state === 'terminated') {
      throw toControllerError(
        doing,
        new AwsServiceError('InvalidInstanceID.NotFound', `The instance ID '${instanceId}' does not exist`),
      );
    }
    if (attached(instance).length > 1) throw toControllerError(doing, multipleInterfacesError(instanceId));
    instance.sourceDestCheck = enabled;
    for (const eni of instance.networkInterfaces) if (eni.deviceIndex === 0) eni.sourceDestCheck = enabled;
  }

  async modifyNetworkInterfaceSourceDestCheck(networkInterfaceId: string, enabled: boolean): Promise<void> {
    await this.call('ModifyNetworkInterfaceAttribute');
    const found = this.findInterface(networkInterfaceId);
    if (!found) {
      throw toControllerError(
        `setting source/destination check of ${networkInterfaceId} to ${enabled}`,
        new AwsServiceError(
          'InvalidNetworkInterfaceID.NotFound',
          `The networkInterface ID '${networkInterfaceId}' does not exist`,
        ),
      );
    }
    found.eni.sourceDestCheck = enabled;
    // The instance attribute is the primary interface's.
    if (found.eni.deviceIndex === 0) found.instance.sourceDestCheck = enabled;
  }

  async findRouteTablesByVpc(vpcId: string): Promise<RouteTable[]> {
    await this.call('DescribeRouteTables');
    return [...this.routeTables.values()].filter((t) => t.vpcId === vpcId).map((t) => this.describeTable(t));
  }

  async describeSubnets(query: {
    vpcId?: string;
    subnetIds?: readonly string[];
    names?: readonly string[];
  }): Promise<Subnet[]> {
    if ((query.subnetIds && query.subnetIds.length === 0) || (query.names && query.names.length === 0)) return [];
    await this.call('DescribeSubnets');
    return [...this.subnets.values()]
      .filter(
        (s) =>
          (!query.vpcId || s.vpcId === query.vpcId) &&
          (!query.subnetIds || query.subnetIds.includes(s.subnetId)) &&
          (!query.names || (s.tags.Name !== undefined && query.names.includes(s.tags.Name))),
      )
      .map((s) => structuredClone(s));
  }

  async findSecurityGroups(query: SecurityGroupQuery): Promise<SecurityGroup[]> {
    const empty = [query.groupIds, query.groupNames, query.referencingGroupIds].some((v) => v && v.length === 0);
    if (empty) return [];
    await this.call('DescribeSecurityGroups');
    return [...this.securityGroups.values()]
      .filter(
        (g) =>
          (!query.groupIds || query.groupIds.includes(g.groupId)) &&
          (!query.vpcId || g.vpcId === query.vpcId) &&
          (!query.groupNames || query.groupNames.includes(g.groupName)) &&
          (!query.referencingGroupIds ||
            g.ingress.some((r) => r.sourceGroupId && query.referencingGroupIds!.includes(r.sourceGroupId))) &&
          Object.entries(query.tags ?? {}).every(
            ([key, value]) => key in g.tags && (value === undefined || g.tags[key] === value),
          ) &&
          !this.hiddenGroups.hides(g.groupId),
      )
      .map((g) => structuredClone(g));
  }

  async createSecurityGroup(input: {
    groupName: string;
    description: string;
    vpcId: string;
    tags: Record<string, string>;
  }): Promise<{ groupId: string } | 'name-taken'> {
    await this.call('CreateSecurityGroup');
    const taken = [...this.securityGroups.values()].some(
      (g) => g.vpcId === input.vpcId && g.groupName === input.groupName,
    );
    if (taken) return 'name-taken';
    if (input.groupName.toLowerCase().startsWith('sg-')) {
      throw toControllerError(
        `creating security group ${input.groupName}`,
        new AwsServiceError('InvalidParameterValue', 'Group names may not be in the format sg-*.'),
      );
    }
    const groupId = `sg-${this.nextId()}`;
    this.securityGroups.set(groupId, {
      groupId,
      groupName: input.groupName,
      vpcId: input.vpcId,
      description: input.description,
      tags: { ...input.tags },
      ingress: [],
    });
    this.hiddenGroups.start(groupId, this.newSecurityGroupInvisibleMs, this.newSecurityGroupInvisibleCalls);
    return { groupId };
  }

  async authorizeSecurityGroupIngress(groupId: string, rules: readonly SecurityGroupRule[]): Promise<void> {
    if (rules.length === 0) return;
    await this.call('AuthorizeSecurityGroupIngress');
    const doing = `authorizing ingress on ${groupId}`;
    const group = this.groupOrThrow(groupId, doing);
    for (const rule of rules) {
      if (rule.sourceGroupId && !this.visibleSecurityGroup(rule.sourceGroupId)) {
        throw groupNotFound(rule.sourceGroupId, doing);
      }
    }
    const missing = rules.filter((rule) => !group.ingress.some((r) => sameRule(r, rule)));
    // The adapter retries rule by rule after InvalidPermission.Duplicate: count the calls it would make.
    if (missing.length < rules.length && rules.length > 1) {
      for (let i = 0; i < rules.length; i++) await this.call('AuthorizeSecurityGroupIngress');
    }
    const unique = missing.filter((rule, i) => missing.findIndex((r) => sameRule(r, rule)) === i);
    if (group.ingress.length + unique.length > this.securityGroupRuleLimit) {
      throw toControllerError(
        doing,
        new AwsServiceError(
          'RulesPerSecurityGroupLimitExceeded',
          'The maximum number of rules per security group has been reached.',
        ),
      );
    }
    for (const rule of unique) group.ingress.push(canonicalRule(rule));
  }

  async revokeSecurityGroupIngress(groupId: string, rules: readonly SecurityGroupRule[]): Promise<void> {
    if (rules.length === 0) return;
    await this.call('RevokeSecurityGroupIngress');
    const group = this.groupOrThrow(groupId, `revoking ingress on ${groupId}`);
    group.ingress = group.ingress.filter((r) => !rules.some((rule) => sameRule(r, rule)));
  }

  async deleteSecurityGroup(groupId: string): Promise<'deleted' | 'not-found'> {
    await this.call('DeleteSecurityGroup');
    const doing = `deleting security group ${groupId}`;
    // A group still hidden after its creation answers InvalidGroup.NotFound (the adapter's 'not-found') and stays.
    if (!this.visibleSecurityGroup(groupId)) return 'not-found';
    const now = this.clock.now();
    const heldByInterfaces =
      [...this.holds.values()].some(
        (h) => h.groupIds.includes(groupId) && (h.releaseAt === undefined || now < h.releaseAt),
      ) ||
      [...this.instances.values()].some(
        (i) => i.state !== 'terminated' && i.networkInterfaces.some((e) => e.securityGroupIds?.includes(groupId)),
      );
    if (heldByInterfaces) {
      throw toControllerError(
        doing,
        new AwsServiceError('DependencyViolation', `resource ${groupId} has a dependent object`),
      );
    }
    const referencedBy = [...this.securityGroups.values()].find(
      (g) => g.groupId !== groupId && g.ingress.some((r) => r.sourceGroupId === groupId),
    );
    if (referencedBy) {
      throw toControllerError(
        doing,
        new AwsServiceError(
          'DependencyViolation',
          `resource ${groupId} has a dependent object (referenced by ${referencedBy.groupId})`,
        ),
      );
    }
    this.securityGroups.delete(groupId);
    this.hiddenGroups.forget(groupId);
    for (const [holder, hold] of this.holds) {
      hold.groupIds = hold.groupIds.filter((id) => id !== groupId);
      if (hold.groupIds.length === 0) this.holds.delete(holder);
    }
    return 'deleted';
  }

  async createTags(resourceIds: readonly string[], tags: Readonly<Record<string, string>>): Promise<void> {
    if (resourceIds.length === 0 || Object.keys(tags).length === 0) return;
    await this.call('CreateTags');
    for (const id of resourceIds) Object.assign(this.tagsOf(id, `tagging ${id}`), tags);
  }

  /**
   * DeleteTags with keys only (no values): each key goes whatever its value; keys a resource lacks are not an
   * error. https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteTags.html
   */
  async deleteTags(resourceIds: readonly string[], keys: readonly string[]): Promise<void> {
    if (resourceIds.length === 0 || keys.length === 0) return;
    await this.call('DeleteTags');
    // EC2 checks every ID before removing anything.
    const targets = resourceIds.map((id) => this.tagsOf(id, `removing tags from ${id}`));
    for (const tags of targets) for (const key of keys) delete tags[key];
  }

  /**
   * The live tags of a taggable resource the fake holds, or InvalidID; a security group still hidden after its
   * creation is InvalidGroup.NotFound, the error EC2 documents for a command using a just-created group's ID.
   */
  private tagsOf(id: string, doing: string): Record<string, string> {
    if (this.securityGroups.has(id) && !this.visibleSecurityGroup(id)) throw groupNotFound(id, doing);
    const resource =
      this.securityGroups.get(id) ?? this.subnets.get(id) ?? this.instances.get(id) ?? this.routeTables.get(id);
    if (!resource) throw toControllerError(doing, new AwsServiceError('InvalidID', `The ID '${id}' is not valid`));
    return resource.tags;
  }

  private groupOrThrow(groupId: string, doing: string): SecurityGroup {
    const group = this.visibleSecurityGroup(groupId);
    if (!group) throw groupNotFound(groupId, doing);
    return group;
  }

  private nextId(): string {
    return (++this.idCounter).toString(16).padStart(17, '0');
  }

  private tableOrThrow(routeTableId: string, doing: string): FakeRouteTable {
    const table = this.routeTables.get(routeTableId);
    if (!table) {
      throw toControllerError(
        doing,
        new AwsServiceError('InvalidRouteTableID.NotFound', `The routeTable ID '${routeTableId}' does not exist`),
      );
    }
    return table;
  }

  /** EC2 records both the instance and its interface for a route to either (when the interface is attached). */
  private resolveTarget(table: FakeRouteTable, target: RouteTargetSpec, doing: string): RouteTarget {
    let instance: Instance | undefined;
    let eni: NetworkInterface | undefined;
    if ('instanceId' in target) {
      instance = this.instances.get(target.instanceId);
      if (!instance || instance.state === 'terminated') {
        throw toControllerError(
          doing,
          new AwsServiceError('InvalidInstanceID.NotFound', `The instance ID '${target.instanceId}' does not exist`),
        );
      }
      const enis = attached(instance);
      if (enis.length > 1) throw toControllerError(doing, multipleInterfacesError(instance.instanceId));
      eni = enis[0];
    } else {
      const found = this.findInterface(target.networkInterfaceId);
      if (!found) {
        throw toControllerError(
          doing,
          new AwsServiceError(
            'InvalidNetworkInterfaceID.NotFound',
            `The networkInterface ID '${target.networkInterfaceId}' does not exist`,
          ),
        );
      }
      ({ instance, eni } = found);
    }
    if (table.vpcId && instance.vpcId && table.vpcId !== instance.vpcId) {
      throw toControllerError(
        doing,
        new AwsServiceError(
          'InvalidParameterValue',
          `route table ${table.routeTableId} and network interface ${eni?.networkInterfaceId} belong to different networks`,
        ),
      );
    }
    return { instanceId: instance.instanceId, networkInterfaceId: eni?.networkInterfaceId };
  }

  private findInterface(networkInterfaceId: string): { instance: Instance; eni: NetworkInterface } | undefined {
    for (const instance of this.instances.values()) {
      const eni = instance.networkInterfaces.find((e) => e.networkInterfaceId === networkInterfaceId);
      if (eni) return { instance, eni };
    }
    return undefined;
  }

  private describeTable(table: FakeRouteTable): RouteTable {
    return structuredClone({
      routeTableId: table.routeTableId,
      vpcId: table.vpcId,
      tags: table.tags,
      ...(table.associations ? { associations: table.associations } : {}),
      routes: table.routes.map((route): Route => {
        const state = route.state ?? this.stateOf(route.target);
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
    });
  }

  private stateOf(target: RouteTarget): RouteState {
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

  /** Counts a call, applies latency, throttling and queued errors. */
  protected async call(operation: Ec2Operation): Promise<void> {
    this.calls.set(operation, (this.calls.get(operation) ?? 0) + 1);
    this.beforeCall?.(operation);
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    // Like the adapter, the port answers with controller errors classified from the AWS code.
    const throttled = this.throttleRemaining.get(operation) ?? 0;
    if (throttled > 0) {
      this.throttleRemaining.set(operation, throttled - 1);
      throw toControllerError(operation, new AwsServiceError('RequestLimitExceeded', 'Request limit exceeded.', 503));
    }
    const queued = this.queuedErrors.get(operation);
    if (queued && queued.length > 0) throw toControllerError(operation, queued.shift()!);
  }

  private visible(instanceId: string): Instance | undefined {
    const hiddenFor = this.invisibleFor.get(instanceId) ?? 0;
    if (hiddenFor > 0) {
      this.invisibleFor.set(instanceId, hiddenFor - 1);
      return undefined;
    }
    return this.instances.get(instanceId);
  }
}

/** EC2's identity of a rule: protocol, ports and source. The description does not count. */
export function sameRule(a: SecurityGroupRule, b: SecurityGroupRule): boolean {
  const x = canonicalRule(a);
  const y = canonicalRule(b);
  return (
    x.protocol === y.protocol &&
    x.fromPort === y.fromPort &&
    x.toPort === y.toPort &&
    x.cidrIpv4 === y.cidrIpv4 &&
    x.cidrIpv6 === y.cidrIpv6 &&
    x.sourceGroupId === y.sourceGroupId
  );
}

/** EC2 states all-protocol rules without ports (-1) and drops empty descriptions. */
function canonicalRule(rule: SecurityGroupRule): SecurityGroupRule {
  const out: SecurityGroupRule = {
    protocol: rule.protocol,
    fromPort: rule.protocol === '-1' ? -1 : rule.fromPort,
    toPort: rule.protocol === '-1' ? -1 : rule.toPort,
  };
  if (rule.cidrIpv4) out.cidrIpv4 = rule.cidrIpv4;
  if (rule.cidrIpv6) out.cidrIpv6 = rule.cidrIpv6;
  if (rule.sourceGroupId) out.sourceGroupId = rule.sourceGroupId;
  if (rule.description) out.description = rule.description;
  return out;
}

/** What EC2 answers for a security group ID it does not know (or does not know yet). */
function groupNotFound(groupId: string, doing: string): Error {
  return toControllerError(
    doing,
    new AwsServiceError('InvalidGroup.NotFound', `The security group '${groupId}' does not exist`),
  );
}

function attached(instance: Instance): NetworkInterface[] {
  return instance.networkInterfaces.filter((eni) => eni.status === 'in-use');
}

function multipleInterfacesError(instanceId: string): AwsServiceError {
  return new AwsServiceError(
    'InvalidInstanceID',
    `There are multiple interfaces attached to instance '${instanceId}'. Please specify an interface ID for the operation instead.`,
  );
}

/**
 * A VPC route table as EC2 creates it (the local route), plus a default route to an internet gateway;
 * tagged with the test cluster unless told otherwise.
 */
export function makeRouteTable(
  overrides: Partial<FakeRouteTable> & { clusterName?: string; extraRoutes?: FakeRoute[] } = {},
): FakeRouteTable {
  const { clusterName, extraRoutes = [], ...rest } = overrides;
  const cluster = clusterName ?? 'test-cluster';
  return {
    routeTableId: 'rtb-0123456789abcdef0',
    vpcId: 'vpc-0a1b2c3d',
    tags: cluster ? { [`kubernetes.io/cluster/${cluster}`]: 'owned' } : {},
    routes: [
      { destination: '10.0.0.0/16', target: { gatewayId: 'local' }, origin: 'CreateRouteTable' },
      { destination: '0.0.0.0/0', target: { gatewayId: 'igw-0a1b2c3d' }, origin: 'CreateRoute' },
      ...extraRoutes,
    ],
    ...rest,
  };
}

let counter = 0;

/** A realistic instance for tests: one in-use ENI in the given zone, cluster-tagged unless told otherwise. */
export function makeInstance(overrides: Partial<Instance> & { clusterName?: string; index?: number } = {}): Instance {
  const index = overrides.index ?? ++counter;
  const octet3 = Math.floor(index / 250) % 250;
  const octet4 = (index % 250) + 4;
  const ip = `10.0.${octet3}.${octet4}`;
  const zone = overrides.availabilityZone ?? 'eu-west-1a';
  const region = zone.slice(0, -1);
  const { clusterName, index: _index, ...rest } = overrides;
  const instanceId = rest.instanceId ?? `i-${index.toString(16).padStart(17, '0')}`;
  return {
    instanceId,
    state: 'running',
    instanceType: 'm5.large',
    availabilityZone: zone,
    vpcId: 'vpc-0a1b2c3d',
    subnetId: 'subnet-0a1b2c3d',
    privateDnsName: `ip-${ip.replaceAll('.', '-')}.${region}.compute.internal`,
    privateIpAddress: ip,
    sourceDestCheck: true,
    networkInterfaces: [
      {
        networkInterfaceId: `eni-${index.toString(16).padStart(17, '0')}`,
        deviceIndex: 0,
        status: 'in-use',
        subnetId: 'subnet-0a1b2c3d',
        privateIpAddresses: [{ address: ip, primary: true }],
        ipv6Addresses: [],
      },
    ],
    tags:
      clusterName === undefined
        ? { 'kubernetes.io/cluster/test-cluster': 'owned' }
        : clusterName
          ? { [`kubernetes.io/cluster/${clusterName}`]: 'owned' }
          : {},
    ...rest,
  };
}

/**
 * A subnet of the fake VPC (10.0.<index>.0/24) in the given zone, tagged as told. Whether it is public is
 * decided by the route table it is associated with (see `makeRouteTable` and its `associations`). `ipv6: true`
 * associates 2001:db8:0:<index>::/64 (or pass `ipv6CidrBlocks`), as a dualstack load balancer needs.
 */
export function makeSubnet(
  overrides: Partial<Subnet> & { index: number; zone?: string; ipv6?: boolean } = { index: 1 },
): Subnet {
  const { index, zone, ipv6, ...rest } = overrides;
  const availabilityZone = zone ?? rest.availabilityZone ?? 'eu-west-1a';
  return {
    subnetId: `subnet-${index.toString(16).padStart(17, '0')}`,
    vpcId: 'vpc-0a1b2c3d',
    availabilityZone,
    availabilityZoneId: `euw1-az${availabilityZone.endsWith('a') ? 3 : availabilityZone.endsWith('b') ? 1 : 2}`,
    cidrBlock: `10.0.${index}.0/24`,
    ...(ipv6 ? { ipv6CidrBlocks: [`2001:db8:0:${index.toString(16)}::/64`] } : {}),
    tags: {},
    ...rest,
  };
}
