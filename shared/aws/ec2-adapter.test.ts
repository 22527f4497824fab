import {
  CreateRouteCommand,
  DeleteRouteCommand,
  DescribeAvailabilityZonesCommand,
  DescribeInstancesCommand,
  type DescribeInstancesCommandInput,
  type DescribeInstancesCommandOutput,
  DescribeInstanceTypesCommand,
  type DescribeInstanceTypesCommandInput,
  DescribeRouteTablesCommand,
  EC2Client,
  ModifyInstanceAttributeCommand,
  ModifyNetworkInterfaceAttributeCommand,
  ReplaceRouteCommand,
  type Instance as SdkInstance,
} from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import {
  DESCRIBE_ATTEMPTS,
  DNS_NAMES_PER_CALL,
  Ec2Adapter,
  INSTANCE_IDS_PER_CALL,
  INSTANCE_TYPES_PER_CALL,
  MAX_FILTER_VALUES_PER_CALL,
} from './ec2-adapter.ts';
import { type Instance, LIVE_INSTANCE_STATES, type RouteTable } from './ec2-port.ts';
import { AwsServiceError } from './errors.ts';

const client = new EC2Client({ region: 'us-east-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } });
const ec2 = mockClient(client);
const adapter = new Ec2Adapter(client);

/** A 17-digit instance ID from a number, so tests can make thousands of distinct valid IDs. */
function instanceId(n: number): string {
  return `i-${n.toString(16).padStart(17, '0')}`;
}

function sdkInstance(id: string, overrides: Partial<SdkInstance> = {}): SdkInstance {
  return {
    InstanceId: id,
    State: { Name: 'running', Code: 16 },
    InstanceType: 'm5.large',
    Placement: { AvailabilityZone: 'us-east-1a' },
    ...overrides,
  };
}

function page(instances: SdkInstance[], nextToken?: string): DescribeInstancesCommandOutput {
  return { $metadata: {}, Reservations: [{ Instances: instances }], NextToken: nextToken };
}

function describeInputs(): DescribeInstancesCommandInput[] {
  return ec2.commandCalls(DescribeInstancesCommand).map((call) => call.args[0].input);
}

/**
 * Answers DescribeInstances by ID the way EC2 does: the whole call fails when any listed ID is unknown, and the
 * message names every unknown ID; `malformed` IDs fail first with EC2's malformed message.
 */
function fakeEc2(existing: Iterable<string>, malformed: Iterable<string> = []) {
  const known = new Set(existing);
  const bad = new Set(malformed);
  ec2.on(DescribeInstancesCommand).callsFake(async (input: DescribeInstancesCommandInput) => {
    const ids = input.InstanceIds ?? [];
    const badId = ids.find((id) => bad.has(id));
    if (badId) throw new AwsServiceError('InvalidInstanceID.Malformed', `Invalid id: "${badId}"`);
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length === 1) {
      throw new AwsServiceError('InvalidInstanceID.NotFound', `The instance ID '${missing[0]}' does not exist`);
    }
    if (missing.length > 1) {
      throw new AwsServiceError('InvalidInstanceID.NotFound', `The instance IDs '${missing.join(', ')}' do not exist`);
    }
    return page(ids.map((id) => sdkInstance(id)));
  });
}

beforeEach(() => {
  ec2.reset();
});

describe('Ec2Adapter.describeInstances', () => {
  it('makes no call for no IDs', async () => {
    const found = await adapter.describeInstances([]);

    expect(found.size).toBe(0);
    expect(describeInputs()).toEqual([]);
  });

  it('sends each well-formed ID once and never a malformed one, without MaxResults', async () => {
    const good8 = 'i-0123abcd';
    const good17 = 'i-0123456789abcdef0';
    fakeEc2([good8, good17]);

    const found = await adapter.describeInstances([
      good17,
      'node-1',
      good17,
      'i-0123456789ABCDEF0',
      'i-123',
      '',
      good8,
      'i-0123456789abcdef0 ',
    ]);

    expect([...found.keys()].sort()).toEqual([good8, good17].sort());
    expect(describeInputs()).toHaveLength(1);
    const [input] = describeInputs();
    expect(input?.InstanceIds).toEqual([good17, good8]);
    // EC2 refuses MaxResults together with InstanceIds.
    expect(input?.MaxResults).toBeUndefined();
    expect(input?.Filters).toBeUndefined();
  });

  it.each([
    [1, [1]],
    [1000, [1000]],
    [1001, [1000, 1]],
    [2500, [1000, 1000, 500]],
  ])('splits %i IDs into calls of %j', async (count, sizes) => {
    const ids = Array.from({ length: count }, (_, n) => instanceId(n + 1));
    fakeEc2(ids);

    const found = await adapter.describeInstances(ids);

    expect(found.size).toBe(count);
    const inputs = describeInputs();
    expect(inputs.map((input) => input.InstanceIds?.length)).toEqual(sizes);
    expect(inputs.flatMap((input) => input.InstanceIds)).toEqual(ids);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(INSTANCE_IDS_PER_CALL);
  });

  it.each([
    ['one unknown ID', [instanceId(2)]],
    ['several unknown IDs', [instanceId(2), instanceId(4), instanceId(5)]],
  ])('drops %s named by InvalidInstanceID.NotFound and asks again for the rest', async (_, unknown) => {
    const existing = [instanceId(1), instanceId(3)];
    fakeEc2(existing);

    const found = await adapter.describeInstances([...existing, ...unknown]);

    expect([...found.keys()].sort()).toEqual(existing);
    const inputs = describeInputs();
    expect(inputs).toHaveLength(2);
    expect(inputs[1]?.InstanceIds).toEqual(existing);
  });

  it('drops an ID named by InvalidInstanceID.Malformed, then unknown ones, within three attempts', async () => {
    const existing = [instanceId(1), instanceId(2)];
    const malformed = 'i-deadbeef';
    const unknown = instanceId(9);
    fakeEc2(existing, [malformed]);

    const found = await adapter.describeInstances([...existing, malformed, unknown]);

    expect([...found.keys()].sort()).toEqual(existing);
    expect(describeInputs().map((input) => input.InstanceIds)).toEqual([
      [...existing, malformed, unknown],
      [...existing, unknown],
      existing,
    ]);
  });

  it('returns nothing, without a further call, when every ID is unknown', async () => {
    fakeEc2([]);

    const found = await adapter.describeInstances([instanceId(1), instanceId(2)]);

    expect(found.size).toBe(0);
    expect(describeInputs()).toHaveLength(1);
  });

  it('drops only the ID EC2 named, not a shorter ID that is a prefix of it', async () => {
    const long = 'i-0123456789abcdef0';
    const short = 'i-01234567';
    fakeEc2([short]);

    const found = await adapter.describeInstances([long, short]);

    expect([...found.keys()]).toEqual([short]);
    expect(describeInputs().map((input) => input.InstanceIds)).toEqual([[long, short], [short]]);
  });

  it('gives up after three attempts when EC2 keeps naming new unknown IDs', async () => {
    const ids = [instanceId(1), instanceId(2), instanceId(3), instanceId(4)];
    ec2.on(DescribeInstancesCommand).callsFake(async (input: DescribeInstancesCommandInput) => {
      const first = input.InstanceIds?.[0];
      throw new AwsServiceError('InvalidInstanceID.NotFound', `The instance ID '${first}' does not exist`);
    });

    const error = await adapter.describeInstances(ids).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(RetryableError);
    expect((error as Error).message).toMatch(/^describing instances: InvalidInstanceID\.NotFound: /);
    expect(describeInputs()).toHaveLength(DESCRIBE_ATTEMPTS);
  });

  it('does not guess when a NotFound message names none of the IDs sent', async () => {
    ec2.on(DescribeInstancesCommand).rejects(new AwsServiceError('InvalidInstanceID.NotFound', 'something is missing'));

    const error = await adapter.describeInstances([instanceId(1)]).catch((err: unknown) => err);

    // Dropping the ID would tell the caller "this instance does not exist", and its Node could be deleted.
    expect(error).toBeInstanceOf(RetryableError);
    expect(describeInputs()).toHaveLength(1);
  });

  it.each([
    ['UnauthorizedOperation', 403, TerminalError],
    ['RequestLimitExceeded', 503, ThrottledError],
    ['InternalError', 500, RetryableError],
  ])('wraps %s (HTTP %i) as %o, keeping the cause', async (code, status, errorClass) => {
    const cause = new AwsServiceError(code, 'no', status);
    ec2.on(DescribeInstancesCommand).rejects(cause);

    const error = await adapter.describeInstances([instanceId(1)]).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(errorClass);
    expect((error as Error).message).toBe(`describing instances: ${code}: no`);
    expect((error as Error).cause).toBe(cause);
    expect(describeInputs()).toHaveLength(1);
  });

  it('follows NextToken, sending the same IDs with each token', async () => {
    const ids = [instanceId(1), instanceId(2)];
    ec2
      .on(DescribeInstancesCommand)
      .resolvesOnce(page([sdkInstance(ids[0]!)], 'token-1'))
      .resolvesOnce(page([sdkInstance(ids[1]!)]));

    const found = await adapter.describeInstances(ids);

    expect([...found.keys()]).toEqual(ids);
    expect(describeInputs()).toEqual([
      { InstanceIds: ids, NextToken: undefined },
      { InstanceIds: ids, NextToken: 'token-1' },
    ]);
  });

  it('maps an SDK instance to the port model', async () => {
    const id = 'i-0123456789abcdef0';
    ec2.on(DescribeInstancesCommand).resolves(
      page([
        {
          InstanceId: id,
          State: { Name: 'stopped', Code: 80 },
          InstanceType: 'c6i.xlarge',
          Placement: { AvailabilityZone: 'eu-west-1b' },
          VpcId: 'vpc-1',
          SubnetId: 'subnet-1',
          PrivateDnsName: 'ip-10-0-0-5.eu-west-1.compute.internal',
          PrivateIpAddress: '10.0.0.5',
          PublicDnsName: '',
          PublicIpAddress: '',
          SourceDestCheck: false,
          Tags: [
            { Key: 'kubernetes.io/cluster/demo', Value: 'owned' },
            { Key: 'Name', Value: 'worker' },
            { Key: 'empty' },
          ],
          NetworkInterfaces: [
            {
              NetworkInterfaceId: 'eni-2',
              Status: 'in-use',
              SubnetId: 'subnet-2',
              Attachment: { DeviceIndex: 1 },
              PrivateIpAddresses: [
                { PrivateIpAddress: '10.0.1.8', Primary: false },
                { PrivateIpAddress: '10.0.1.7', Primary: true, PrivateDnsName: 'ip-10-0-1-7.internal' },
              ],
              Ipv6Addresses: [{ Ipv6Address: '2001:db8::7' }, {}],
            },
            {
              NetworkInterfaceId: 'eni-1',
              Status: 'in-use',
              Attachment: { DeviceIndex: 0 },
              PrivateIpAddresses: [{ PrivateIpAddress: '10.0.0.5', Primary: true, PrivateDnsName: '' }, {}],
            },
            { Status: 'in-use' },
          ],
        },
      ]),
    );

    const found = await adapter.describeInstances([id]);

    expect(found.get(id)).toEqual({
      instanceId: id,
      state: 'stopped',
      instanceType: 'c6i.xlarge',
      availabilityZone: 'eu-west-1b',
      vpcId: 'vpc-1',
      subnetId: 'subnet-1',
      privateDnsName: 'ip-10-0-0-5.eu-west-1.compute.internal',
      privateIpAddress: '10.0.0.5',
      publicDnsName: undefined,
      publicIpAddress: undefined,
      sourceDestCheck: false,
      tags: { 'kubernetes.io/cluster/demo': 'owned', Name: 'worker', empty: '' },
      networkInterfaces: [
        {
          networkInterfaceId: 'eni-2',
          deviceIndex: 1,
          status: 'in-use',
          subnetId: 'subnet-2',
          privateIpAddresses: [
            { address: '10.0.1.7', primary: true, privateDnsName: 'ip-10-0-1-7.internal' },
            { address: '10.0.1.8', primary: false, privateDnsName: undefined },
          ],
          ipv6Addresses: ['2001:db8::7'],
        },
        {
          networkInterfaceId: 'eni-1',
          deviceIndex: 0,
          status: 'in-use',
          subnetId: undefined,
          privateIpAddresses: [{ address: '10.0.0.5', primary: true, privateDnsName: undefined }],
          ipv6Addresses: [],
        },
      ],
    } satisfies Instance);
  });

  it.each([
    ['pending', 'pending'],
    ['running', 'running'],
    ['shutting-down', 'shutting-down'],
    ['terminated', 'terminated'],
    ['stopping', 'stopping'],
    ['stopped', 'stopped'],
    // An unknown state reads as "exists": nothing is tainted or deleted on a guess.
    ['hibernating', 'pending'],
  ])('maps state %s to %s', async (sdkState, state) => {
    const id = instanceId(1);
    ec2.on(DescribeInstancesCommand).resolves(page([sdkInstance(id, { State: { Name: sdkState as 'running' } })]));

    const found = await adapter.describeInstances([id]);

    expect(found.get(id)?.state).toBe(state);
  });
});

describe('Ec2Adapter.findInstancesByPrivateDnsName', () => {
  const dnsName = (n: number) => `ip-10-0-${Math.floor(n / 250)}-${n % 250}.ec2.internal`;

  it('makes no call for no names', async () => {
    expect(await adapter.findInstancesByPrivateDnsName([])).toEqual([]);
    expect(describeInputs()).toEqual([]);
  });

  it('filters by name and live state, in calls within the 200 filter values EC2 allows', async () => {
    const names = Array.from({ length: 450 }, (_, n) => dnsName(n));
    ec2.on(DescribeInstancesCommand).callsFake(async (input: DescribeInstancesCommandInput) => {
      const values = input.Filters?.find((f) => f.Name === 'private-dns-name')?.Values ?? [];
      return page(values.map((name) => sdkInstance(instanceId(names.indexOf(name) + 1), { PrivateDnsName: name })));
    });

    const found = await adapter.findInstancesByPrivateDnsName([...names, names[0]!, names[449]!]);

    expect(found.map((i) => i.privateDnsName)).toEqual(names);
    const inputs = describeInputs();
    expect(inputs.map((input) => input.Filters?.[0]?.Values?.length)).toEqual([
      DNS_NAMES_PER_CALL,
      DNS_NAMES_PER_CALL,
      450 - 2 * DNS_NAMES_PER_CALL,
    ]);
    for (const [n, input] of inputs.entries()) {
      expect(input).toEqual({
        Filters: [
          { Name: 'private-dns-name', Values: names.slice(n * DNS_NAMES_PER_CALL, (n + 1) * DNS_NAMES_PER_CALL) },
          { Name: 'instance-state-name', Values: ['pending', 'running', 'shutting-down', 'stopping', 'stopped'] },
        ],
        MaxResults: 1000,
        NextToken: undefined,
      });
      const totalValues = (input.Filters ?? []).reduce((sum, f) => sum + (f.Values?.length ?? 0), 0);
      expect(totalValues).toBeLessThanOrEqual(MAX_FILTER_VALUES_PER_CALL);
      expect(input.InstanceIds).toBeUndefined();
    }
    expect(DNS_NAMES_PER_CALL).toBe(MAX_FILTER_VALUES_PER_CALL - LIVE_INSTANCE_STATES.length);
  });

  it('follows NextToken with the same filters', async () => {
    const name = dnsName(1);
    ec2
      .on(DescribeInstancesCommand)
      .resolvesOnce(page([sdkInstance(instanceId(1), { PrivateDnsName: name })], 'next'))
      .resolvesOnce(page([sdkInstance(instanceId(2), { PrivateDnsName: name })]));

    const found = await adapter.findInstancesByPrivateDnsName([name]);

    expect(found.map((i) => i.instanceId)).toEqual([instanceId(1), instanceId(2)]);
    const inputs = describeInputs();
    expect(inputs.map((input) => input.NextToken)).toEqual([undefined, 'next']);
    expect(inputs[1]?.Filters).toEqual(inputs[0]?.Filters);
  });

  it('wraps errors saying what was being done', async () => {
    ec2.on(DescribeInstancesCommand).rejects(new AwsServiceError('FilterLimitExceeded', 'too many'));

    const error = await adapter.findInstancesByPrivateDnsName([dnsName(1)]).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(TerminalError);
    expect((error as Error).message).toBe('finding instances by private DNS name: FilterLimitExceeded: too many');
  });
});

describe('Ec2Adapter.findClusterInstances', () => {
  const tagged = (n: number, key: string, value: string) =>
    sdkInstance(instanceId(n), { Tags: [{ Key: key, Value: value }] });

  it('asks for both cluster tags in one tag-key filter, 1000 a page, every page, in any state', async () => {
    ec2
      .on(DescribeInstancesCommand)
      .resolvesOnce(page([tagged(1, 'kubernetes.io/cluster/prod', 'owned')], 'next'))
      .resolvesOnce(page([tagged(2, 'kubernetes.io/cluster/prod', 'shared'), tagged(3, 'KubernetesCluster', 'prod')]));

    const found = await adapter.findClusterInstances('prod');

    expect(found.map((i) => i.instanceId)).toEqual([instanceId(1), instanceId(2), instanceId(3)]);
    expect(describeInputs()).toEqual([
      { Filters: [{ Name: 'tag-key', Values: ['kubernetes.io/cluster/prod', 'KubernetesCluster'] }], MaxResults: 1000 },
      {
        Filters: [{ Name: 'tag-key', Values: ['kubernetes.io/cluster/prod', 'KubernetesCluster'] }],
        MaxResults: 1000,
        NextToken: 'next',
      },
    ]);
  });

  it("leaves out another cluster's instances that only the legacy tag key matched", async () => {
    ec2
      .on(DescribeInstancesCommand)
      .resolves(page([tagged(1, 'KubernetesCluster', 'other'), tagged(2, 'KubernetesCluster', 'prod')]));

    expect((await adapter.findClusterInstances('prod')).map((i) => i.instanceId)).toEqual([instanceId(2)]);
  });

  it('wraps errors saying what was being done, throttling as retryable', async () => {
    ec2.on(DescribeInstancesCommand).rejects(new AwsServiceError('RequestLimitExceeded', 'slow down'));

    const error = await adapter.findClusterInstances('prod').catch((err: unknown) => err);

    expect(error).toBeInstanceOf(ThrottledError);
    expect((error as Error).message).toBe('finding the instances of cluster prod: RequestLimitExceeded: slow down');
  });
});

describe('Ec2Adapter.describeAvailabilityZones', () => {
  it('asks for the zones of the region and maps them', async () => {
    ec2.on(DescribeAvailabilityZonesCommand).resolves({
      AvailabilityZones: [
        { ZoneName: 'us-east-1a', ZoneId: 'use1-az4', ZoneType: 'availability-zone' },
        { ZoneName: 'us-east-1-bos-1a', ZoneId: 'use1-bos1-az1', ZoneType: 'local-zone' },
        { ZoneName: 'us-east-1z' },
      ],
    });

    const zones = await adapter.describeAvailabilityZones();

    expect(zones).toEqual([
      { zoneName: 'us-east-1a', zoneId: 'use1-az4', zoneType: 'availability-zone' },
      { zoneName: 'us-east-1-bos-1a', zoneId: 'use1-bos1-az1', zoneType: 'local-zone' },
    ]);
    expect(ec2.commandCalls(DescribeAvailabilityZonesCommand).map((call) => call.args[0].input)).toEqual([
      { AllAvailabilityZones: false },
    ]);
  });

  it('wraps errors', async () => {
    ec2.on(DescribeAvailabilityZonesCommand).rejects(new AwsServiceError('RequestLimitExceeded', 'slow down', 503));

    await expect(adapter.describeAvailabilityZones()).rejects.toThrow(ThrottledError);
  });
});

describe('Ec2Adapter.describeInstanceTypes', () => {
  const typeInputs = (): DescribeInstanceTypesCommandInput[] =>
    ec2.commandCalls(DescribeInstanceTypesCommand).map((call) => call.args[0].input);

  it('makes no call for no types', async () => {
    expect(await adapter.describeInstanceTypes([])).toEqual([]);
    expect(typeInputs()).toEqual([]);
  });

  it.each([
    [100, [100]],
    [101, [100, 1]],
    [250, [100, 100, 50]],
  ])('dedupes and splits %i types into calls of %j', async (count, sizes) => {
    const types = Array.from({ length: count }, (_, n) => `x${n}.large`);
    ec2.on(DescribeInstanceTypesCommand).callsFake(async (input: DescribeInstanceTypesCommandInput) => ({
      InstanceTypes: (input.InstanceTypes ?? []).map((type) => ({
        InstanceType: type,
        NetworkInfo: { MaximumNetworkInterfaces: 3, Ipv4AddressesPerInterface: 10, Ipv6AddressesPerInterface: 10 },
      })),
    }));

    const infos = await adapter.describeInstanceTypes([...types, ...types]);

    expect(infos.map((info) => info.instanceType)).toEqual(types);
    expect(typeInputs().map((input) => input.InstanceTypes?.length)).toEqual(sizes);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(INSTANCE_TYPES_PER_CALL);
  });

  it('follows NextToken and maps network limits', async () => {
    ec2
      .on(DescribeInstanceTypesCommand)
      .resolvesOnce({
        InstanceTypes: [
          {
            InstanceType: 'm5.large',
            NetworkInfo: { MaximumNetworkInterfaces: 3, Ipv4AddressesPerInterface: 10, Ipv6AddressesPerInterface: 10 },
          },
        ],
        NextToken: 'more',
      })
      .resolvesOnce({ InstanceTypes: [{ InstanceType: 't3.medium' }] });

    const infos = await adapter.describeInstanceTypes(['m5.large', 't3.medium']);

    expect(infos).toEqual([
      {
        instanceType: 'm5.large',
        maximumNetworkInterfaces: 3,
        ipv4AddressesPerInterface: 10,
        ipv6AddressesPerInterface: 10,
      },
      {
        instanceType: 't3.medium',
        maximumNetworkInterfaces: 0,
        ipv4AddressesPerInterface: 0,
        ipv6AddressesPerInterface: 0,
      },
    ]);
    expect(typeInputs()).toEqual([
      { InstanceTypes: ['m5.large', 't3.medium'], NextToken: undefined },
      { InstanceTypes: ['m5.large', 't3.medium'], NextToken: 'more' },
    ]);
  });

  it('maps the hypervisor and bare metal, which decide prefix delegation (Nitro only)', async () => {
    ec2.on(DescribeInstanceTypesCommand).resolves({
      InstanceTypes: [
        { InstanceType: 'm5.large', Hypervisor: 'nitro', BareMetal: false },
        { InstanceType: 'm4.large', Hypervisor: 'xen', BareMetal: false },
        // EC2 names no hypervisor for a bare-metal type.
        { InstanceType: 'm5.metal', BareMetal: true },
      ],
    });

    const infos = await adapter.describeInstanceTypes(['m5.large', 'm4.large', 'm5.metal']);

    expect(infos.map(({ instanceType, hypervisor, bareMetal }) => ({ instanceType, hypervisor, bareMetal }))).toEqual([
      { instanceType: 'm5.large', hypervisor: 'nitro', bareMetal: false },
      { instanceType: 'm4.large', hypervisor: 'xen', bareMetal: false },
      { instanceType: 'm5.metal', hypervisor: undefined, bareMetal: true },
    ]);
    expect(typeInputs()).toEqual([{ InstanceTypes: ['m5.large', 'm4.large', 'm5.metal'], NextToken: undefined }]);
  });

  it('wraps errors', async () => {
    ec2.on(DescribeInstanceTypesCommand).rejects(new AwsServiceError('InvalidInstanceType', 'no such type'));

    const error = await adapter.describeInstanceTypes(['nope.large']).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(TerminalError);
    expect((error as Error).message).toBe('describing instance types: InvalidInstanceType: no such type');
  });
});

describe('Ec2Adapter route tables', () => {
  const tableInputs = () => ec2.commandCalls(DescribeRouteTablesCommand).map((call) => call.args[0].input);

  it('describes one table by ID and maps every kind of route', async () => {
    ec2.on(DescribeRouteTablesCommand).resolves({
      RouteTables: [
        {
          RouteTableId: 'rtb-1',
          VpcId: 'vpc-1',
          Tags: [{ Key: 'kubernetes.io/cluster/demo', Value: 'owned' }],
          Routes: [
            { DestinationCidrBlock: '10.0.0.0/16', GatewayId: 'local', State: 'active', Origin: 'CreateRouteTable' },
            {
              DestinationCidrBlock: '10.244.1.0/24',
              InstanceId: 'i-1',
              InstanceOwnerId: '111122223333',
              NetworkInterfaceId: 'eni-1',
              State: 'active',
              Origin: 'CreateRoute',
            },
            {
              DestinationIpv6CidrBlock: 'fd00:10:244:1::/64',
              NetworkInterfaceId: 'eni-2',
              State: 'blackhole',
              Origin: 'CreateRoute',
            },
            { DestinationPrefixListId: 'pl-1', GatewayId: 'vpce-1', State: 'active', Origin: 'CreateRoute' },
            {
              DestinationCidrBlock: '172.16.0.0/12',
              TransitGatewayId: 'tgw-1',
              State: 'filtered',
              Origin: 'Advertisement',
            },
            { DestinationCidrBlock: '192.168.0.0/16', GatewayId: 'vgw-1', Origin: 'EnableVgwRoutePropagation' },
            { GatewayId: 'igw-without-destination' },
          ],
        },
      ],
    });

    const table = await adapter.describeRouteTable('rtb-1');

    expect(tableInputs()).toEqual([{ RouteTableIds: ['rtb-1'], NextToken: undefined }]);
    expect(table).toEqual({
      routeTableId: 'rtb-1',
      vpcId: 'vpc-1',
      tags: { 'kubernetes.io/cluster/demo': 'owned' },
      routes: [
        {
          destination: '10.0.0.0/16',
          destinationType: 'ipv4',
          target: { gatewayId: 'local' },
          state: 'active',
          origin: 'CreateRouteTable',
        },
        {
          destination: '10.244.1.0/24',
          destinationType: 'ipv4',
          target: { instanceId: 'i-1', networkInterfaceId: 'eni-1' },
          state: 'active',
          origin: 'CreateRoute',
        },
        {
          destination: 'fd00:10:244:1::/64',
          destinationType: 'ipv6',
          target: { networkInterfaceId: 'eni-2' },
          state: 'blackhole',
          origin: 'CreateRoute',
        },
        {
          destination: 'pl-1',
          destinationType: 'prefix-list',
          target: { gatewayId: 'vpce-1' },
          state: 'active',
          origin: 'CreateRoute',
        },
        // A route-server route: never ours (unknown origin) and never a blackhole to clean up.
        {
          destination: '172.16.0.0/12',
          destinationType: 'ipv4',
          target: { transitGatewayId: 'tgw-1' },
          state: 'active',
          origin: 'unknown',
        },
        {
          destination: '192.168.0.0/16',
          destinationType: 'ipv4',
          target: { gatewayId: 'vgw-1' },
          state: 'active',
          origin: 'EnableVgwRoutePropagation',
        },
      ],
    } satisfies RouteTable);
  });

  it('answers undefined for an unknown table ID instead of failing', async () => {
    ec2
      .on(DescribeRouteTablesCommand)
      .rejects(new AwsServiceError('InvalidRouteTableID.NotFound', "The routeTable ID 'rtb-9' does not exist"));

    expect(await adapter.describeRouteTable('rtb-9')).toBeUndefined();
  });

  it('wraps other errors, saying which table', async () => {
    ec2.on(DescribeRouteTablesCommand).rejects(new AwsServiceError('UnauthorizedOperation', 'denied', 403));

    const error = await adapter.describeRouteTable('rtb-1').catch((err: unknown) => err);

    expect(error).toBeInstanceOf(TerminalError);
    expect((error as Error).message).toBe('describing route table rtb-1: UnauthorizedOperation: denied');
  });

  it.each([
    [{ key: 'kubernetes.io/cluster/demo' }, { Name: 'tag-key', Values: ['kubernetes.io/cluster/demo'] }],
    [
      { key: 'KubernetesCluster', value: 'demo' },
      { Name: 'tag:KubernetesCluster', Values: ['demo'] },
    ],
  ])('finds tables by tag %j with filter %j, following NextToken', async (tag, filter) => {
    ec2
      .on(DescribeRouteTablesCommand)
      .resolvesOnce({ RouteTables: [{ RouteTableId: 'rtb-1' }], NextToken: 'more' })
      .resolvesOnce({ RouteTables: [{ RouteTableId: 'rtb-2' }, {}] });

    const tables = await adapter.findRouteTablesByTag(tag);

    expect(tables.map((t) => t.routeTableId)).toEqual(['rtb-1', 'rtb-2']);
    expect(tableInputs()).toEqual([
      { Filters: [filter], NextToken: undefined },
      { Filters: [filter], NextToken: 'more' },
    ]);
  });
});

describe('Ec2Adapter routes', () => {
  const inputs = <T>(command: T) =>
    ec2.commandCalls(command as typeof CreateRouteCommand).map((call) => call.args[0].input as unknown);

  it.each([
    ['10.244.1.0/24', { instanceId: 'i-1' }, { DestinationCidrBlock: '10.244.1.0/24', InstanceId: 'i-1' }],
    [
      'fd00:10:244:1::/64',
      { networkInterfaceId: 'eni-1' },
      { DestinationIpv6CidrBlock: 'fd00:10:244:1::/64', NetworkInterfaceId: 'eni-1' },
    ],
  ])('creates %s -> %j with the destination field of its family', async (destination, target, fields) => {
    ec2.on(CreateRouteCommand).resolves({ Return: true });

    expect(await adapter.createRoute('rtb-1', destination, target)).toBe('created');
    expect(inputs(CreateRouteCommand)).toEqual([{ RouteTableId: 'rtb-1', ...fields }]);
  });

  it('answers already-exists for RouteAlreadyExists, so the caller re-reads', async () => {
    ec2
      .on(CreateRouteCommand)
      .rejects(new AwsServiceError('RouteAlreadyExists', 'The route identified by 10.244.1.0/24 already exists.'));

    expect(await adapter.createRoute('rtb-1', '10.244.1.0/24', { instanceId: 'i-1' })).toBe('already-exists');
  });

  it.each([
    ['RouteLimitExceeded', 400, TerminalError],
    ['InvalidInstanceID', 400, TerminalError],
    ['RequestLimitExceeded', 503, ThrottledError],
    ['InternalError', 500, RetryableError],
  ])('wraps a %s (HTTP %i) from CreateRoute as %o', async (code, status, errorClass) => {
    ec2.on(CreateRouteCommand).rejects(new AwsServiceError(code, 'no', status));

    const error = await adapter.createRoute('rtb-1', '10.244.1.0/24', { instanceId: 'i-1' }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(errorClass);
    expect((error as Error).message).toBe(`creating route 10.244.1.0/24 in rtb-1: ${code}: no`);
  });

  it('replaces a route, sending the new target', async () => {
    ec2.on(ReplaceRouteCommand).resolves({});

    expect(await adapter.replaceRoute('rtb-1', 'fd00:10:244:1::/64', { networkInterfaceId: 'eni-2' })).toBe('replaced');
    expect(inputs(ReplaceRouteCommand)).toEqual([
      { RouteTableId: 'rtb-1', DestinationIpv6CidrBlock: 'fd00:10:244:1::/64', NetworkInterfaceId: 'eni-2' },
    ]);
  });

  it.each([
    [
      'InvalidParameterValue',
      "There is no route defined for '10.244.1.0/24' in the route table. Use CreateRoute instead.",
    ],
    ['InvalidRoute.NotFound', 'no such route'],
  ])('answers not-found when ReplaceRoute finds no route (%s)', async (code, message) => {
    ec2.on(ReplaceRouteCommand).rejects(new AwsServiceError(code, message));

    expect(await adapter.replaceRoute('rtb-1', '10.244.1.0/24', { instanceId: 'i-1' })).toBe('not-found');
  });

  it('does not mistake another InvalidParameterValue for a missing route', async () => {
    ec2.on(ReplaceRouteCommand).rejects(new AwsServiceError('InvalidParameterValue', 'belong to different networks'));

    await expect(adapter.replaceRoute('rtb-1', '10.244.1.0/24', { instanceId: 'i-1' })).rejects.toThrow(TerminalError);
  });

  it('deletes a route by destination; InvalidRoute.NotFound is not-found', async () => {
    ec2
      .on(DeleteRouteCommand)
      .resolvesOnce({})
      .rejectsOnce(
        new AwsServiceError('InvalidRoute.NotFound', "no route with destination-cidr-block '10.244.2.0/24'"),
      );

    expect(await adapter.deleteRoute('rtb-1', '10.244.1.0/24')).toBe('deleted');
    expect(await adapter.deleteRoute('rtb-1', '10.244.2.0/24')).toBe('not-found');
    expect(inputs(DeleteRouteCommand)).toEqual([
      { RouteTableId: 'rtb-1', DestinationCidrBlock: '10.244.1.0/24' },
      { RouteTableId: 'rtb-1', DestinationCidrBlock: '10.244.2.0/24' },
    ]);
  });

  it('wraps a throttled DeleteRoute', async () => {
    ec2.on(DeleteRouteCommand).rejects(new AwsServiceError('RequestLimitExceeded', 'slow down', 503));
    await expect(adapter.deleteRoute('rtb-1', 'fd00::/64')).rejects.toThrow(ThrottledError);
    expect(inputs(DeleteRouteCommand)).toEqual([{ RouteTableId: 'rtb-1', DestinationIpv6CidrBlock: 'fd00::/64' }]);
  });
});

describe('Ec2Adapter source/destination check', () => {
  it('sets it on an instance with ModifyInstanceAttribute', async () => {
    ec2.on(ModifyInstanceAttributeCommand).resolves({});

    await adapter.modifyInstanceSourceDestCheck('i-1', false);

    expect(ec2.commandCalls(ModifyInstanceAttributeCommand).map((c) => c.args[0].input)).toEqual([
      { InstanceId: 'i-1', SourceDestCheck: { Value: false } },
    ]);
  });

  it('sets it on a network interface with ModifyNetworkInterfaceAttribute', async () => {
    ec2.on(ModifyNetworkInterfaceAttributeCommand).resolves({});

    await adapter.modifyNetworkInterfaceSourceDestCheck('eni-1', false);

    expect(ec2.commandCalls(ModifyNetworkInterfaceAttributeCommand).map((c) => c.args[0].input)).toEqual([
      { NetworkInterfaceId: 'eni-1', SourceDestCheck: { Value: false } },
    ]);
  });

  it('wraps the refusal for a multi-interface instance, naming it', async () => {
    ec2
      .on(ModifyInstanceAttributeCommand)
      .rejects(new AwsServiceError('InvalidInstanceID', "There are multiple interfaces attached to instance 'i-1'."));

    const error = await adapter.modifyInstanceSourceDestCheck('i-1', false).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(TerminalError);
    expect((error as Error).message).toMatch(/^setting source\/destination check of i-1 to false: InvalidInstanceID: /);
  });

  it('maps the per-interface check from DescribeInstances', async () => {
    const id = instanceId(1);
    ec2.on(DescribeInstancesCommand).resolves(
      page([
        sdkInstance(id, {
          SourceDestCheck: true,
          NetworkInterfaces: [{ NetworkInterfaceId: 'eni-1', Status: 'in-use', SourceDestCheck: false }],
        }),
      ]),
    );

    const found = await adapter.describeInstances([id]);

    expect(found.get(id)?.sourceDestCheck).toBe(true);
    expect(found.get(id)?.networkInterfaces[0]?.sourceDestCheck).toBe(false);
  });
});
