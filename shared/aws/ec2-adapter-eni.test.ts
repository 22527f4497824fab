import {
  AssignPrivateIpAddressesCommand,
  DeleteNetworkInterfaceCommand,
  DescribeNetworkInterfacesCommand,
  type DescribeNetworkInterfacesCommandInput,
  EC2Client,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { Ec2Adapter, MAX_FILTER_VALUES_PER_CALL } from './ec2-adapter.ts';
import { AwsServiceError } from './errors.ts';

/** The exact requests Ec2Adapter's network-interface methods send, and how it reads EC2's answers and errors. */

const client = new EC2Client({ region: 'us-east-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } });
const ec2 = mockClient(client);
const adapter = new Ec2Adapter(client);

const ENI = 'eni-0123456789abcdef0';

function eniId(n: number): string {
  return `eni-${n.toString(16).padStart(17, '0')}`;
}

function describeInputs(): DescribeNetworkInterfacesCommandInput[] {
  return ec2.commandCalls(DescribeNetworkInterfacesCommand).map((call) => call.args[0].input);
}

const errorOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );

beforeEach(() => {
  ec2.reset();
});

describe('Ec2Adapter.describeNetworkInterfaces', () => {
  it('reads an interface: addresses with the primary first, prefixes, attachment, tags, placement', async () => {
    ec2.on(DescribeNetworkInterfacesCommand).resolves({
      NetworkInterfaces: [
        {
          NetworkInterfaceId: ENI,
          Status: 'in-use',
          SubnetId: 'subnet-1',
          VpcId: 'vpc-1',
          AvailabilityZone: 'eu-west-1a',
          Attachment: { InstanceId: 'i-1', DeviceIndex: 1, Status: 'attached' },
          PrivateIpAddresses: [
            { PrivateIpAddress: '10.0.1.9', Primary: false },
            { PrivateIpAddress: '10.0.1.5', Primary: true },
            { PrivateIpAddress: '10.0.1.7', Primary: false },
          ],
          Ipv4Prefixes: [{ Ipv4Prefix: '10.0.1.32/28' }, {}],
          TagSet: [{ Key: 'owner', Value: 'ipam' }],
        },
        { NetworkInterfaceId: eniId(2), Status: 'available', SubnetId: 'subnet-1', VpcId: '' },
        { Status: 'available' },
      ],
    });

    const found = await adapter.describeNetworkInterfaces({});

    expect(found).toEqual([
      {
        networkInterfaceId: ENI,
        status: 'in-use',
        subnetId: 'subnet-1',
        vpcId: 'vpc-1',
        availabilityZone: 'eu-west-1a',
        attachment: { instanceId: 'i-1', deviceIndex: 1, status: 'attached' },
        privateIpAddresses: [
          { address: '10.0.1.5', primary: true },
          { address: '10.0.1.9', primary: false },
          { address: '10.0.1.7', primary: false },
        ],
        ipv4Prefixes: ['10.0.1.32/28'],
        tags: { owner: 'ipam' },
      },
      {
        networkInterfaceId: eniId(2),
        status: 'available',
        subnetId: 'subnet-1',
        vpcId: undefined,
        availabilityZone: undefined,
        privateIpAddresses: [],
        ipv4Prefixes: [],
        tags: {},
      },
    ]);
  });

  it('filters by VPC, status and tags (tag:<key>, or tag-key for any value), paged by NextToken', async () => {
    ec2
      .on(DescribeNetworkInterfacesCommand)
      .resolvesOnce({ NetworkInterfaces: [{ NetworkInterfaceId: eniId(1) }], NextToken: 'page-2' })
      .resolvesOnce({ NetworkInterfaces: [{ NetworkInterfaceId: eniId(2) }] });

    const found = await adapter.describeNetworkInterfaces({
      vpcId: 'vpc-1',
      status: 'available',
      tags: { 'cluster.k8s.amazonaws.com/name': 'prod', 'node.k8s.amazonaws.com/instance_id': undefined },
    });

    expect(found.map((e) => e.networkInterfaceId)).toEqual([eniId(1), eniId(2)]);
    const filters = [
      { Name: 'vpc-id', Values: ['vpc-1'] },
      { Name: 'status', Values: ['available'] },
      { Name: 'tag:cluster.k8s.amazonaws.com/name', Values: ['prod'] },
      { Name: 'tag-key', Values: ['node.k8s.amazonaws.com/instance_id'] },
    ];
    expect(describeInputs()).toEqual([
      { Filters: filters, MaxResults: 1000, NextToken: undefined },
      { Filters: filters, MaxResults: 1000, NextToken: 'page-2' },
    ]);
  });

  it('asks for IDs by the network-interface-id filter, never NetworkInterfaceIds (an unknown one fails that call)', async () => {
    ec2.on(DescribeNetworkInterfacesCommand).resolves({ NetworkInterfaces: [{ NetworkInterfaceId: ENI }] });

    const found = await adapter.describeNetworkInterfaces({ networkInterfaceIds: [ENI, eniId(9), ENI] });

    expect(found.map((e) => e.networkInterfaceId)).toEqual([ENI]);
    expect(describeInputs()).toEqual([
      {
        Filters: [{ Name: 'network-interface-id', Values: [ENI, eniId(9)] }],
        MaxResults: 1000,
        NextToken: undefined,
      },
    ]);
  });

  it('makes no call for an empty list of IDs', async () => {
    expect(await adapter.describeNetworkInterfaces({ networkInterfaceIds: [], vpcId: 'vpc-1' })).toEqual([]);
    expect(describeInputs()).toEqual([]);
  });

  it('splits IDs so that no call has more than 200 filter values, the other filters counted', async () => {
    ec2.on(DescribeNetworkInterfacesCommand).callsFake(async (input: DescribeNetworkInterfacesCommandInput) => ({
      NetworkInterfaces: (input.Filters?.[0]?.Values ?? []).map((NetworkInterfaceId) => ({ NetworkInterfaceId })),
    }));
    const ids = Array.from({ length: 400 }, (_, i) => eniId(i + 1));

    const found = await adapter.describeNetworkInterfaces({
      networkInterfaceIds: ids,
      vpcId: 'vpc-1',
      status: 'in-use',
    });

    expect(found.map((e) => e.networkInterfaceId)).toEqual(ids);
    const inputs = describeInputs();
    expect(inputs.map((i) => i.Filters?.[0]?.Values?.length)).toEqual([198, 198, 4]);
    for (const input of inputs) {
      expect((input.Filters ?? []).reduce((n, f) => n + (f.Values?.length ?? 0), 0)).toBeLessThanOrEqual(
        MAX_FILTER_VALUES_PER_CALL,
      );
      expect(input.Filters?.slice(1)).toEqual([
        { Name: 'vpc-id', Values: ['vpc-1'] },
        { Name: 'status', Values: ['in-use'] },
      ]);
    }
  });

  it.each([
    ['RequestLimitExceeded', ThrottledError],
    ['InternalError', RetryableError],
    ['InvalidParameterValue', TerminalError],
  ])('%s is a %o', async (code, errorClass) => {
    ec2
      .on(DescribeNetworkInterfacesCommand)
      .rejects(new AwsServiceError(code, 'no', code === 'InternalError' ? 500 : 400));

    const error = await errorOf(adapter.describeNetworkInterfaces({}));

    expect(error).toBeInstanceOf(errorClass);
    expect((error as Error).message).toContain('describing network interfaces');
  });
});

describe('Ec2Adapter.findNetworkInterfacesByPrivateIp', () => {
  it('filters by addresses.private-ip-address, 200 values a call, every page, and reads the security groups', async () => {
    const addresses = Array.from({ length: 201 }, (_, i) => `10.0.${Math.floor(i / 250)}.${i % 250}`);
    ec2
      .on(DescribeNetworkInterfacesCommand)
      .resolvesOnce({
        NetworkInterfaces: [
          {
            NetworkInterfaceId: ENI,
            Status: 'in-use',
            SubnetId: 'subnet-1',
            PrivateIpAddresses: [{ PrivateIpAddress: '10.0.0.1', Primary: true }],
            Groups: [{ GroupId: 'sg-1' }, { GroupName: 'no id' }],
          },
        ],
        NextToken: 'more',
      })
      .resolves({ NetworkInterfaces: [{ NetworkInterfaceId: eniId(2), Status: 'in-use', SubnetId: 'subnet-1' }] });
    const found = await adapter.findNetworkInterfacesByPrivateIp([...addresses, '10.0.0.1']);
    expect(found.map((e) => [e.networkInterfaceId, e.securityGroupIds])).toEqual([
      [ENI, ['sg-1']],
      [eniId(2), undefined],
    ]);
    expect(describeInputs()).toEqual([
      {
        Filters: [{ Name: 'addresses.private-ip-address', Values: addresses.slice(0, 200) }],
        MaxResults: 1000,
        NextToken: undefined,
      },
      {
        Filters: [{ Name: 'addresses.private-ip-address', Values: addresses.slice(0, 200) }],
        MaxResults: 1000,
        NextToken: 'more',
      },
      {
        Filters: [{ Name: 'addresses.private-ip-address', Values: addresses.slice(200) }],
        MaxResults: 1000,
        NextToken: undefined,
      },
    ]);
  });

  it('makes no call for no addresses, and keeps the error code', async () => {
    expect(await adapter.findNetworkInterfacesByPrivateIp([])).toEqual([]);
    expect(describeInputs()).toEqual([]);
    ec2.on(DescribeNetworkInterfacesCommand).rejects(new AwsServiceError('UnauthorizedOperation', 'no'));
    expect(await errorOf(adapter.findNetworkInterfacesByPrivateIp(['10.0.0.1']))).toBeInstanceOf(TerminalError);
  });
});

describe('Ec2Adapter.assignPrivateIpAddresses', () => {
  it('asks for a number of secondary addresses and answers those assigned', async () => {
    ec2.on(AssignPrivateIpAddressesCommand).resolves({
      NetworkInterfaceId: ENI,
      AssignedPrivateIpAddresses: [{ PrivateIpAddress: '10.0.1.8' }, { PrivateIpAddress: '10.0.1.9' }, {}],
    });

    expect(await adapter.assignPrivateIpAddresses(ENI, { count: 2 })).toEqual({
      addresses: ['10.0.1.8', '10.0.1.9'],
      prefixes: [],
    });
    expect(ec2.commandCalls(AssignPrivateIpAddressesCommand).map((c) => c.args[0].input)).toEqual([
      { NetworkInterfaceId: ENI, SecondaryPrivateIpAddressCount: 2 },
    ]);
  });

  it('asks for a number of /28 prefixes and answers those delegated', async () => {
    ec2.on(AssignPrivateIpAddressesCommand).resolves({
      NetworkInterfaceId: ENI,
      AssignedIpv4Prefixes: [{ Ipv4Prefix: '10.0.1.16/28' }],
    });

    expect(await adapter.assignPrivateIpAddresses(ENI, { prefixes: 1 })).toEqual({
      addresses: [],
      prefixes: ['10.0.1.16/28'],
    });
    expect(ec2.commandCalls(AssignPrivateIpAddressesCommand).map((c) => c.args[0].input)).toEqual([
      { NetworkInterfaceId: ENI, Ipv4PrefixCount: 1 },
    ]);
  });

  it.each([
    ['InsufficientFreeAddressesInSubnet', 'subnet-full'],
    ['InsufficientCidrBlocks', 'subnet-full'],
    ['PrivateIpAddressLimitExceeded', 'interface-full'],
  ])('%s is %s', async (code, result) => {
    ec2.on(AssignPrivateIpAddressesCommand).rejects(new AwsServiceError(code, 'no room'));

    expect(await adapter.assignPrivateIpAddresses(ENI, { count: 1 })).toBe(result);
  });

  it.each([
    ['RequestLimitExceeded', ThrottledError],
    ['InvalidNetworkInterfaceID.NotFound', RetryableError],
    ['InvalidParameterValue', TerminalError],
  ])('%s is a %o naming the interface', async (code, errorClass) => {
    ec2.on(AssignPrivateIpAddressesCommand).rejects(new AwsServiceError(code, 'no'));

    const error = await errorOf(adapter.assignPrivateIpAddresses(ENI, { prefixes: 2 }));

    expect(error).toBeInstanceOf(errorClass);
    expect((error as Error).message).toContain(ENI);
  });
});

describe('Ec2Adapter.unassignPrivateIpAddresses', () => {
  const inputs = () => ec2.commandCalls(UnassignPrivateIpAddressesCommand).map((c) => c.args[0].input);

  it('releases addresses and prefixes in one call, each once', async () => {
    ec2.on(UnassignPrivateIpAddressesCommand).resolves({});

    await adapter.unassignPrivateIpAddresses(ENI, {
      addresses: ['10.0.1.8', '10.0.1.9', '10.0.1.8'],
      prefixes: ['10.0.1.32/28'],
    });

    expect(inputs()).toEqual([
      { NetworkInterfaceId: ENI, PrivateIpAddresses: ['10.0.1.8', '10.0.1.9'], Ipv4Prefixes: ['10.0.1.32/28'] },
    ]);
  });

  it('sends only the kind given, and nothing for nothing', async () => {
    ec2.on(UnassignPrivateIpAddressesCommand).resolves({});

    await adapter.unassignPrivateIpAddresses(ENI, { prefixes: ['10.0.1.32/28'] });
    await adapter.unassignPrivateIpAddresses(ENI, { addresses: [], prefixes: [] });

    expect(inputs()).toEqual([{ NetworkInterfaceId: ENI, Ipv4Prefixes: ['10.0.1.32/28'] }]);
  });

  it('an address the interface no longer has is released already', async () => {
    ec2
      .on(UnassignPrivateIpAddressesCommand)
      .rejects(
        new AwsServiceError(
          'InvalidParameterValue',
          `Some of the specified addresses are not assigned to interface ${ENI}`,
        ),
      );

    await expect(adapter.unassignPrivateIpAddresses(ENI, { addresses: ['10.0.1.8'] })).resolves.toBeUndefined();
    expect(inputs()).toHaveLength(1);
  });

  it('when one of several is gone, releases the others one by one', async () => {
    const notAssigned = new AwsServiceError(
      'InvalidParameterValue',
      `Some of the specified addresses are not assigned to interface ${ENI}`,
    );
    ec2
      .on(UnassignPrivateIpAddressesCommand)
      .rejectsOnce(notAssigned)
      .resolvesOnce({})
      .rejectsOnce(notAssigned)
      .resolvesOnce({});

    await adapter.unassignPrivateIpAddresses(ENI, { addresses: ['10.0.1.8', '10.0.1.9'], prefixes: ['10.0.1.32/28'] });

    expect(inputs()).toEqual([
      { NetworkInterfaceId: ENI, PrivateIpAddresses: ['10.0.1.8', '10.0.1.9'], Ipv4Prefixes: ['10.0.1.32/28'] },
      { NetworkInterfaceId: ENI, PrivateIpAddresses: ['10.0.1.8'] },
      { NetworkInterfaceId: ENI, PrivateIpAddresses: ['10.0.1.9'] },
      { NetworkInterfaceId: ENI, Ipv4Prefixes: ['10.0.1.32/28'] },
    ]);
  });

  it.each([
    ['InvalidParameterValue', 'The primary IP address of an interface cannot be unassigned.', TerminalError],
    ['InvalidNetworkInterfaceID.NotFound', `The networkInterface ID '${ENI}' does not exist`, RetryableError],
    ['RequestLimitExceeded', 'Request limit exceeded.', ThrottledError],
  ])('%s (%s) is an error', async (code, message, errorClass) => {
    ec2.on(UnassignPrivateIpAddressesCommand).rejects(new AwsServiceError(code, message));

    const error = await errorOf(adapter.unassignPrivateIpAddresses(ENI, { addresses: ['10.0.1.5', '10.0.1.8'] }));

    expect(error).toBeInstanceOf(errorClass);
    expect(inputs()).toHaveLength(1);
  });
});

describe('Ec2Adapter.deleteNetworkInterface', () => {
  it('deletes by ID', async () => {
    ec2.on(DeleteNetworkInterfaceCommand).resolves({});

    expect(await adapter.deleteNetworkInterface(ENI)).toBe('deleted');
    expect(ec2.commandCalls(DeleteNetworkInterfaceCommand).map((c) => c.args[0].input)).toEqual([
      { NetworkInterfaceId: ENI },
    ]);
  });

  it('an interface that is gone is not-found', async () => {
    ec2
      .on(DeleteNetworkInterfaceCommand)
      .rejects(
        new AwsServiceError('InvalidNetworkInterfaceID.NotFound', `The networkInterface ID '${ENI}' does not exist`),
      );

    expect(await adapter.deleteNetworkInterface(ENI)).toBe('not-found');
  });

  it('an attached interface (InvalidParameterValue, in use) is retryable: it clears once detached', async () => {
    ec2
      .on(DeleteNetworkInterfaceCommand)
      .rejects(new AwsServiceError('InvalidParameterValue', `Network interface '${ENI}' is currently in use.`));

    const error = await errorOf(adapter.deleteNetworkInterface(ENI));

    expect(error).toBeInstanceOf(RetryableError);
    expect(error).not.toBeInstanceOf(ThrottledError);
    expect((error as Error).message).toContain(`deleting network interface ${ENI}`);
  });

  it.each([
    ['RequestLimitExceeded', ThrottledError],
    ['InvalidNetworkInterfaceId.Malformed', TerminalError],
    ['UnauthorizedOperation', TerminalError],
  ])('%s is a %o', async (code, errorClass) => {
    ec2.on(DeleteNetworkInterfaceCommand).rejects(new AwsServiceError(code, 'no'));

    expect(await errorOf(adapter.deleteNetworkInterface(ENI))).toBeInstanceOf(errorClass);
  });
});
