import { DNS_NAMES_PER_CALL, INSTANCE_IDS_PER_CALL, INSTANCE_TYPES_PER_CALL } from './ec2-adapter.ts';
import {
  type AvailabilityZone,
  type Ec2Port,
  INSTANCE_ID_PATTERN,
  type Instance,
  type InstanceTypeInfo,
  LIVE_INSTANCE_STATES,
} from './ec2-port.ts';
import { AwsServiceError, toControllerError } from './errors.ts';

export type Ec2Operation =
  | 'DescribeInstances'
  | 'DescribeAvailabilityZones'
  | 'DescribeInstanceTypes'
  | 'ModifyInstanceAttribute';

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
  readonly calls = new Map<Ec2Operation, number>();
  /** Artificial latency per call, for the local simulation (0 in tests). */
  latencyMs = 0;

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

  reset(): void {
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

  /** Counts a call, applies latency, throttling and queued errors. */
  protected async call(operation: Ec2Operation): Promise<void> {
    this.calls.set(operation, (this.calls.get(operation) ?? 0) + 1);
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
