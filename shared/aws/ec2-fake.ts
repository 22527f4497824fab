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
  type RouteTarget,
  type RouteTargetSpec,
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
  | 'DeleteRoute';

/** Operations that change the account: a reconcile that finds everything in place makes none of them. */
export const EC2_WRITE_OPERATIONS: readonly Ec2Operation[] = [
  'ModifyInstanceAttribute',
  'ModifyNetworkInterfaceAttribute',
  'CreateRoute',
  'ReplaceRoute',
  'DeleteRoute',
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
}

/**
 * An in-memory EC2 account with the semantics the controllers depend on: instances with state,
 * ENIs, addresses, DNS names, tags and zones; eventual consistency (a new instance stays invisible
 * for N describe calls); throttling and queued errors per operation; call counters.
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

  reset(): void {
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
