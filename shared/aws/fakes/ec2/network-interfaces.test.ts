import {
  AssignPrivateIpAddressesCommand,
  DeleteNetworkInterfaceCommand,
  DescribeNetworkInterfacesCommand,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../clock.ts';
import { RetryableError, TerminalError } from '../../../errors.ts';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import type { AssignResult, Instance, Subnet } from '../../ec2-port.ts';
import { awsErrorCode } from '../../errors.ts';
import { FakeEc2, makeInstance, makeNetworkInterface, makeSubnet } from './fake-ec2.ts';

/**
 * FakeEc2's network interfaces, through Ec2Adapter as the IP address manager sees them, and through raw commands
 * where the EC2 error itself is the point: addresses and /28 prefixes drawn from the subnet, the per-interface
 * limit, unassign and delete rules, and eventual consistency after an assignment.
 */

let clock: FakeClock;
let fake: FakeEc2;
let ec2: Ec2Adapter;
let subnet: Subnet;
beforeEach(() => {
  clock = new FakeClock();
  fake = new FakeEc2(clock);
  ec2 = new Ec2Adapter(fake);
  subnet = fake.putSubnet(makeSubnet({ index: 1 }));
});

/** A running instance in `subnet` whose primary interface holds `ip`. */
function putInstanceIn(target: Subnet, ip: string, overrides: Partial<Instance> & { index?: number } = {}) {
  const base = makeInstance({ index: overrides.index ?? 1, ...overrides });
  const instance = makeInstance({
    ...overrides,
    index: overrides.index ?? 1,
    subnetId: target.subnetId,
    vpcId: target.vpcId,
    privateIpAddress: ip,
    networkInterfaces: [
      {
        ...base.networkInterfaces[0]!,
        subnetId: target.subnetId,
        privateIpAddresses: [{ address: ip, primary: true }],
      },
    ],
  });
  fake.putInstance(instance);
  return { instance, eniId: instance.networkInterfaces[0]!.networkInterfaceId };
}

const failure = async (promise: Promise<unknown>): Promise<Error> => {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
};

async function secondaries(eniId: string): Promise<string[]> {
  const [eni] = await ec2.describeNetworkInterfaces({ networkInterfaceIds: [eniId] });
  return (eni?.privateIpAddresses ?? []).filter((a) => !a.primary).map((a) => a.address);
}

async function instanceAddresses(instanceId: string): Promise<string[]> {
  const instance = (await ec2.describeInstances([instanceId])).get(instanceId);
  return (instance?.networkInterfaces[0]?.privateIpAddresses ?? []).map((a) => a.address);
}

function assigned(result: AssignResult): { addresses: string[]; prefixes: string[] } {
  if (typeof result === 'string') throw new Error(`expected an assignment, got ${result}`);
  return result;
}

describe('FakeEc2 network interfaces: describing', () => {
  it("describes an instance's interface and a standalone one, each with its placement and addresses", async () => {
    const { instance, eniId } = putInstanceIn(subnet, '10.0.1.4');
    const standalone = fake.putNetworkInterface(makeNetworkInterface({ index: 1, tags: { owner: 'ipam' } }));

    const found = await ec2.describeNetworkInterfaces({});

    expect(found).toEqual([
      {
        networkInterfaceId: eniId,
        status: 'in-use',
        subnetId: subnet.subnetId,
        vpcId: subnet.vpcId,
        availabilityZone: 'eu-west-1a',
        attachment: { instanceId: instance.instanceId, deviceIndex: 0, status: 'attached' },
        privateIpAddresses: [{ address: '10.0.1.4', primary: true }],
        ipv4Prefixes: [],
        tags: {},
      },
      {
        networkInterfaceId: standalone.networkInterfaceId,
        status: 'available',
        subnetId: subnet.subnetId,
        vpcId: subnet.vpcId,
        availabilityZone: 'eu-west-1a',
        // The first free address of the subnet: .0-.3 are EC2's, .4 is the instance's.
        privateIpAddresses: [{ address: '10.0.1.5', primary: true }],
        ipv4Prefixes: [],
        tags: { owner: 'ipam' },
      },
    ]);
  });

  it('filters by status, VPC, tag value and tag key; unknown IDs are simply absent', async () => {
    putInstanceIn(subnet, '10.0.1.4');
    const other = fake.putSubnet(makeSubnet({ index: 2, vpcId: 'vpc-0000000000000other' }));
    const a = fake.putNetworkInterface(makeNetworkInterface({ index: 1, tags: { owner: 'ipam', node: 'n1' } }));
    const b = fake.putNetworkInterface(makeNetworkInterface({ index: 2, tags: { owner: 'other' } }));
    const c = fake.putNetworkInterface(
      makeNetworkInterface({ index: 3, subnetId: other.subnetId, tags: { node: 'n2' } }),
    );
    const ids = async (query: Parameters<Ec2Adapter['describeNetworkInterfaces']>[0]) =>
      (await ec2.describeNetworkInterfaces(query)).map((e) => e.networkInterfaceId);

    expect(await ids({ status: 'available', vpcId: subnet.vpcId })).toEqual([
      a.networkInterfaceId,
      b.networkInterfaceId,
    ]);
    expect(await ids({ tags: { owner: 'ipam' } })).toEqual([a.networkInterfaceId]);
    expect(await ids({ tags: { node: undefined } })).toEqual([a.networkInterfaceId, c.networkInterfaceId]);
    expect(await ids({ vpcId: other.vpcId })).toEqual([c.networkInterfaceId]);
    expect(await ids({ networkInterfaceIds: [c.networkInterfaceId, 'eni-0000000000000dead'] })).toEqual([
      c.networkInterfaceId,
    ]);
  });

  it('pages by MaxResults (5..1000) and refuses IDs it does not know in NetworkInterfaceIds', async () => {
    for (let i = 1; i <= 7; i++) fake.putNetworkInterface(makeNetworkInterface({ index: i }));

    const first = await fake.send(new DescribeNetworkInterfacesCommand({ MaxResults: 5 }));
    const second = await fake.send(new DescribeNetworkInterfacesCommand({ MaxResults: 5, NextToken: first.NextToken }));

    expect(first.NetworkInterfaces).toHaveLength(5);
    expect(second.NetworkInterfaces).toHaveLength(2);
    expect(second.NextToken).toBeUndefined();
    expect(awsErrorCode(await failure(fake.send(new DescribeNetworkInterfacesCommand({ MaxResults: 4 }))))).toBe(
      'InvalidParameterValue',
    );
    const unknown = await failure(
      fake.send(new DescribeNetworkInterfacesCommand({ NetworkInterfaceIds: ['eni-0000000000000dead'] })),
    );
    expect(awsErrorCode(unknown)).toBe('InvalidNetworkInterfaceID.NotFound');
    const badFilter = await failure(
      fake.send(new DescribeNetworkInterfacesCommand({ Filters: [{ Name: 'owner', Values: ['x'] }] })),
    );
    expect(awsErrorCode(badFilter)).toBe('InvalidParameterValue');
  });

  it('puts an attached interface on its instance: DescribeInstances lists it, DeleteNetworkInterface refuses it', async () => {
    const { instance } = putInstanceIn(subnet, '10.0.1.4');
    const eni = fake.putNetworkInterface(
      makeNetworkInterface({
        index: 1,
        attachment: { instanceId: instance.instanceId, deviceIndex: 1 },
        tags: { owner: 'ipam' },
      }),
    );

    const described = (await ec2.describeInstances([instance.instanceId])).get(instance.instanceId);
    expect(described?.networkInterfaces.map((e) => [e.networkInterfaceId, e.deviceIndex])).toEqual([
      [instance.networkInterfaces[0]!.networkInterfaceId, 0],
      [eni.networkInterfaceId, 1],
    ]);
    expect(await ec2.describeNetworkInterfaces({ tags: { owner: 'ipam' } })).toMatchObject([
      { networkInterfaceId: eni.networkInterfaceId, status: 'in-use', attachment: { deviceIndex: 1 } },
    ]);
    expect(await failure(ec2.deleteNetworkInterface(eni.networkInterfaceId))).toBeInstanceOf(RetryableError);
  });

  it('tags interfaces, an instance’s as well as a standalone one (CreateTags, DeleteTags)', async () => {
    const { eniId } = putInstanceIn(subnet, '10.0.1.4');
    const standalone = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));

    await ec2.createTags([eniId, standalone.networkInterfaceId], { owner: 'ipam', node: 'n1' });
    await ec2.deleteTags([standalone.networkInterfaceId], ['node']);

    const tags = (await ec2.describeNetworkInterfaces({})).map((e) => e.tags);
    expect(tags).toEqual([{ owner: 'ipam', node: 'n1' }, { owner: 'ipam' }]);
    const unknown = await failure(ec2.createTags(['eni-0000000000000dead'], { a: 'b' }));
    expect(awsErrorCode(unknown.cause)).toBe('InvalidNetworkInterfaceID.NotFound');
  });
});

describe('FakeEc2 network interfaces: assigning addresses', () => {
  it('hands out the lowest free addresses of the subnet; both describes show them', async () => {
    const { instance, eniId } = putInstanceIn(subnet, '10.0.1.4');
    fake.putNetworkInterface(makeNetworkInterface({ index: 1 })); // 10.0.1.5

    const result = assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 3 }));

    expect(result).toEqual({ addresses: ['10.0.1.6', '10.0.1.7', '10.0.1.8'], prefixes: [] });
    expect(await secondaries(eniId)).toEqual(['10.0.1.6', '10.0.1.7', '10.0.1.8']);
    expect(await instanceAddresses(instance.instanceId)).toEqual(['10.0.1.4', '10.0.1.6', '10.0.1.7', '10.0.1.8']);
  });

  it('never hands out an address twice, whichever interface asks', async () => {
    const a = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));
    const b = fake.putNetworkInterface(makeNetworkInterface({ index: 2 }));

    const first = assigned(await ec2.assignPrivateIpAddresses(a.networkInterfaceId, { count: 5 }));
    const second = assigned(await ec2.assignPrivateIpAddresses(b.networkInterfaceId, { count: 5 }));

    const all = [a, b].flatMap((e) => e.privateIpAddresses.map((p) => p.address));
    all.push(...first.addresses, ...second.addresses);
    expect(new Set(all).size).toBe(12);
  });

  it('answers subnet-full (InsufficientFreeAddressesInSubnet) when the subnet has no free address left', async () => {
    // A /28 holds 16 addresses; EC2 keeps 5, so 11 are usable: .4 to .14.
    const small = fake.putSubnet(makeSubnet({ index: 2, cidrBlock: '10.0.2.0/28' }));
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1, subnetId: small.subnetId }));

    const all = assigned(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 10 }));

    expect(all.addresses.at(-1)).toBe('10.0.2.14');
    expect(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 1 })).toBe('subnet-full');
    const raw = await failure(
      fake.send(
        new AssignPrivateIpAddressesCommand({
          NetworkInterfaceId: eni.networkInterfaceId,
          SecondaryPrivateIpAddressCount: 1,
        }),
      ),
    );
    expect(awsErrorCode(raw)).toBe('InsufficientFreeAddressesInSubnet');
    expect(await secondaries(eni.networkInterfaceId)).toHaveLength(10);
  });

  it('reserveAddresses leaves a subnet as full as a test needs', async () => {
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1 })); // 10.0.1.4

    expect(fake.reserveAddresses(subnet.subnetId, 249)).toHaveLength(249);

    // 251 usable addresses in a /24 (.4 to .254): the interface's, 249 others', and one left.
    expect(assigned(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 1 })).addresses).toEqual([
      '10.0.1.254',
    ]);
    expect(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 1 })).toBe('subnet-full');
  });

  it('answers interface-full (PrivateIpAddressLimitExceeded) beyond the instance type’s addresses per interface', async () => {
    // t3.medium: 6 IPv4 addresses per interface, the primary included.
    const { eniId } = putInstanceIn(subnet, '10.0.1.4', { instanceType: 't3.medium' });

    expect(await ec2.assignPrivateIpAddresses(eniId, { count: 6 })).toBe('interface-full');
    assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 5 }));
    expect(await ec2.assignPrivateIpAddresses(eniId, { count: 1 })).toBe('interface-full');
    const raw = await failure(
      fake.send(new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, SecondaryPrivateIpAddressCount: 1 })),
    );
    expect(awsErrorCode(raw)).toBe('PrivateIpAddressLimitExceeded');
    expect(await secondaries(eniId)).toHaveLength(5);
  });

  it('refuses requests EC2 refuses, and fields the fake does not model', async () => {
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));
    const send = (input: object) =>
      failure(fake.send(new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eni.networkInterfaceId, ...input })));

    expect(awsErrorCode(await send({ SecondaryPrivateIpAddressCount: 1, Ipv4PrefixCount: 1 }))).toBe(
      'InvalidParameterCombination',
    );
    expect(awsErrorCode(await send({}))).toBe('MissingParameter');
    expect(awsErrorCode(await send({ SecondaryPrivateIpAddressCount: 0 }))).toBe('InvalidParameterValue');
    expect((await send({ PrivateIpAddresses: ['10.0.1.9'] })).message).toContain('does not model');
    const unknown = await failure(
      fake.send(
        new AssignPrivateIpAddressesCommand({
          NetworkInterfaceId: 'eni-0000000000000dead',
          SecondaryPrivateIpAddressCount: 1,
        }),
      ),
    );
    expect(awsErrorCode(unknown)).toBe('InvalidNetworkInterfaceID.NotFound');
  });
});

describe('FakeEc2 network interfaces: an assign answer like the AWS API emulator’s (assignAnswer)', () => {
  it('every-address: the answer lists every private address of the interface; the describe stays right', async () => {
    const { eniId } = putInstanceIn(subnet, '10.0.1.4');
    fake.assignAnswer = 'every-address';

    expect(assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 2 })).addresses).toEqual([
      '10.0.1.4',
      '10.0.1.5',
      '10.0.1.6',
    ]);
    expect(assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 1 })).addresses).toEqual([
      '10.0.1.4',
      '10.0.1.5',
      '10.0.1.6',
      '10.0.1.7',
    ]);
    expect(await secondaries(eniId)).toEqual(['10.0.1.5', '10.0.1.6', '10.0.1.7']);
  });
});

describe('FakeEc2 network interfaces: /28 prefixes', () => {
  it('delegates free /28 blocks aligned on 16, never one holding a reserved or used address', async () => {
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1 })); // 10.0.1.4, in the first block
    fake.reserveAddresses(subnet.subnetId, 13); // .5 to .17: the block at .16 is used

    const result = assigned(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { prefixes: 2 }));

    expect(result).toEqual({ addresses: [], prefixes: ['10.0.1.32/28', '10.0.1.48/28'] });
    const [described] = await ec2.describeNetworkInterfaces({ networkInterfaceIds: [eni.networkInterfaceId] });
    expect(described?.ipv4Prefixes).toEqual(['10.0.1.32/28', '10.0.1.48/28']);
    // The prefixes' addresses are taken: the next secondary address comes after them.
    expect(assigned(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 1 })).addresses).toEqual([
      '10.0.1.18',
    ]);
  });

  it('answers subnet-full (InsufficientCidrBlocks) when no whole free block is left', async () => {
    // A /26: the blocks at .0 (reserved .0-.3) and .48 (broadcast .63) can never be delegated; .16 and .32 can.
    const small = fake.putSubnet(makeSubnet({ index: 3, cidrBlock: '10.0.3.0/26' }));
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1, subnetId: small.subnetId }));

    expect(assigned(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { prefixes: 2 })).prefixes).toEqual([
      '10.0.3.16/28',
      '10.0.3.32/28',
    ]);
    expect(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { prefixes: 1 })).toBe('subnet-full');
    const raw = await failure(
      fake.send(
        new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eni.networkInterfaceId, Ipv4PrefixCount: 1 }),
      ),
    );
    expect(awsErrorCode(raw)).toBe('InsufficientCidrBlocks');
  });

  it('counts each prefix as one of the interface’s addresses', async () => {
    const { eniId } = putInstanceIn(subnet, '10.0.1.4', { instanceType: 't3.medium' });

    assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 3 }));
    assigned(await ec2.assignPrivateIpAddresses(eniId, { prefixes: 2 }));

    expect(await ec2.assignPrivateIpAddresses(eniId, { prefixes: 1 })).toBe('interface-full');
  });
});

describe('FakeEc2 network interfaces: unassigning', () => {
  it('gives addresses and prefixes back to the subnet', async () => {
    const { instance, eniId } = putInstanceIn(subnet, '10.0.1.4');
    const { addresses } = assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 3 }));
    const { prefixes } = assigned(await ec2.assignPrivateIpAddresses(eniId, { prefixes: 1 }));

    await ec2.unassignPrivateIpAddresses(eniId, { addresses: [addresses[0]!], prefixes });

    expect(await secondaries(eniId)).toEqual(addresses.slice(1));
    expect(await instanceAddresses(instance.instanceId)).toEqual(['10.0.1.4', ...addresses.slice(1)]);
    expect((await ec2.describeNetworkInterfaces({}))[0]?.ipv4Prefixes).toEqual([]);
    // The released address is the lowest free one again.
    expect(assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 1 })).addresses).toEqual([addresses[0]]);
  });

  it('refuses, all or nothing, an address the interface does not have; the adapter takes that as released', async () => {
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));
    const id = eni.networkInterfaceId;
    const { addresses } = assigned(await ec2.assignPrivateIpAddresses(id, { count: 2 }));

    const raw = await failure(
      fake.send(
        new UnassignPrivateIpAddressesCommand({
          NetworkInterfaceId: id,
          PrivateIpAddresses: [addresses[0]!, '10.0.1.99'],
        }),
      ),
    );
    expect(awsErrorCode(raw)).toBe('InvalidParameterValue');
    expect(raw.message).toBe(`Some of the specified addresses are not assigned to interface ${id}`);
    expect(await secondaries(id)).toEqual(addresses);

    await ec2.unassignPrivateIpAddresses(id, { addresses: [addresses[0]!, '10.0.1.99'], prefixes: ['10.0.1.32/28'] });

    expect(await secondaries(id)).toEqual([addresses[1]]);
  });

  it('refuses to unassign the primary address', async () => {
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));
    const primary = eni.privateIpAddresses[0]!.address;

    const raw = await failure(
      fake.send(
        new UnassignPrivateIpAddressesCommand({
          NetworkInterfaceId: eni.networkInterfaceId,
          PrivateIpAddresses: [primary],
        }),
      ),
    );

    expect(awsErrorCode(raw)).toBe('InvalidParameterValue');
    expect(raw.message).toContain('primary IP address');
    expect(
      await failure(ec2.unassignPrivateIpAddresses(eni.networkInterfaceId, { addresses: [primary] })),
    ).toBeInstanceOf(TerminalError);
    const [described] = await ec2.describeNetworkInterfaces({ networkInterfaceIds: [eni.networkInterfaceId] });
    expect(described?.privateIpAddresses).toEqual([{ address: primary, primary: true }]);
  });
});

describe('FakeEc2 network interfaces: deleting', () => {
  it('deletes an available interface; its addresses are free again; a second delete is not-found', async () => {
    const eni = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));
    assigned(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 2 }));

    expect(await ec2.deleteNetworkInterface(eni.networkInterfaceId)).toBe('deleted');

    expect(await ec2.describeNetworkInterfaces({})).toEqual([]);
    expect(await ec2.deleteNetworkInterface(eni.networkInterfaceId)).toBe('not-found');
    const next = fake.putNetworkInterface(makeNetworkInterface({ index: 2 }));
    expect(next.privateIpAddresses).toEqual([{ address: '10.0.1.4', primary: true }]);
  });

  it("refuses an instance's interface (InvalidParameterValue), which stays", async () => {
    const { eniId } = putInstanceIn(subnet, '10.0.1.4');

    const raw = await failure(fake.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId })));

    expect(awsErrorCode(raw)).toBe('InvalidParameterValue');
    expect(await failure(ec2.deleteNetworkInterface(eniId))).toBeInstanceOf(RetryableError);
    expect((await ec2.describeNetworkInterfaces({})).map((e) => e.networkInterfaceId)).toEqual([eniId]);
  });

  it('a malformed ID is InvalidNetworkInterfaceId.Malformed', async () => {
    const raw = await failure(fake.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: 'eni-xyz' })));

    expect(awsErrorCode(raw)).toBe('InvalidNetworkInterfaceId.Malformed');
  });

  it("a terminated instance's interface is gone, its addresses free", async () => {
    const { instance, eniId } = putInstanceIn(subnet, '10.0.1.4');
    assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 2 }));

    fake.setState(instance.instanceId, 'terminated');

    expect(await ec2.describeNetworkInterfaces({})).toEqual([]);
    const next = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));
    expect(next.privateIpAddresses[0]?.address).toBe('10.0.1.4');
  });
});

describe('FakeEc2 network interfaces: eventual consistency after an assignment', () => {
  it('is off by default: new addresses show at once', async () => {
    const { eniId } = putInstanceIn(subnet, '10.0.1.4');

    const { addresses } = assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 2 }));

    expect(await secondaries(eniId)).toEqual(addresses);
  });

  it('hides new addresses and prefixes from both describes for newAddressInvisibleMs; they are taken meanwhile', async () => {
    fake.newAddressInvisibleMs = 1000;
    const { instance, eniId } = putInstanceIn(subnet, '10.0.1.4');
    const other = fake.putNetworkInterface(makeNetworkInterface({ index: 1 })); // 10.0.1.5

    const { addresses } = assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 2 }));
    const { prefixes } = assigned(await ec2.assignPrivateIpAddresses(eniId, { prefixes: 1 }));

    expect(addresses).toEqual(['10.0.1.6', '10.0.1.7']);
    expect(await secondaries(eniId)).toEqual([]);
    expect(await instanceAddresses(instance.instanceId)).toEqual(['10.0.1.4']);
    expect((await ec2.describeNetworkInterfaces({ networkInterfaceIds: [eniId] }))[0]?.ipv4Prefixes).toEqual([]);
    expect(assigned(await ec2.assignPrivateIpAddresses(other.networkInterfaceId, { count: 1 })).addresses).toEqual([
      '10.0.1.8',
    ]);

    clock.advance(1000);

    expect(await secondaries(eniId)).toEqual(addresses);
    expect(await instanceAddresses(instance.instanceId)).toEqual(['10.0.1.4', ...addresses]);
    expect((await ec2.describeNetworkInterfaces({ networkInterfaceIds: [eniId] }))[0]?.ipv4Prefixes).toEqual(prefixes);
  });

  it('or for newAddressInvisibleCalls describes', async () => {
    fake.newAddressInvisibleCalls = 2;
    const { eniId } = putInstanceIn(subnet, '10.0.1.4');

    const { addresses } = assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 1 }));

    expect(await secondaries(eniId)).toEqual([]);
    expect(await secondaries(eniId)).toEqual([]);
    expect(await secondaries(eniId)).toEqual(addresses);
  });

  it('only a describe that would have shown a hidden address uses up one of its calls', async () => {
    fake.newAddressInvisibleCalls = 1;
    const { eniId } = putInstanceIn(subnet, '10.0.1.4');
    const other = fake.putNetworkInterface(makeNetworkInterface({ index: 1 }));
    const { addresses } = assigned(await ec2.assignPrivateIpAddresses(eniId, { count: 1 }));

    await ec2.describeNetworkInterfaces({ networkInterfaceIds: [other.networkInterfaceId] });
    await ec2.describeNetworkInterfaces({ status: 'available' });

    expect(await secondaries(eniId)).toEqual([]);
    expect(await secondaries(eniId)).toEqual(addresses);
  });
});
