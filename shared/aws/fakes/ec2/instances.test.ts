import { DescribeInstancesCommand, DescribeInstanceTypesCommand } from '@aws-sdk/client-ec2';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../clock.ts';
import { TerminalError } from '../../../errors.ts';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import { Ec2Facts } from '../../ec2-facts.ts';
import { awsErrorCode } from '../../errors.ts';
import { FakeEc2, makeInstance } from './fake-ec2.ts';

/** Instances, zones and instance types: the port through Ec2Adapter, and the wire where EC2's rules matter. */
let fake: FakeEc2;
let ec2: Ec2Adapter;
beforeEach(() => {
  fake = new FakeEc2();
  ec2 = new Ec2Adapter(fake);
});

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
}
const put = (count: number, from = 1) =>
  Array.from({ length: count }, (_, i) => fake.putInstance(makeInstance({ index: from + i })));
const UNKNOWN = 'i-0000000000000dead';
const OTHER_UNKNOWN = 'i-0000000000000beef';

describe('DescribeInstances by ID', () => {
  it('fails the whole call for unknown IDs, naming every one, as EC2 does', async () => {
    const [a] = put(1);
    const one = await failure(fake.send(new DescribeInstancesCommand({ InstanceIds: [a!.instanceId, UNKNOWN] })));
    const two = await failure(fake.send(new DescribeInstancesCommand({ InstanceIds: [UNKNOWN, OTHER_UNKNOWN] })));
    expect([one.name, one.message]).toEqual([
      'InvalidInstanceID.NotFound',
      `The instance ID '${UNKNOWN}' does not exist`,
    ]);
    expect(two.message).toBe(`The instance IDs '${UNKNOWN}, ${OTHER_UNKNOWN}' do not exist`);
    const malformed = await failure(fake.send(new DescribeInstancesCommand({ InstanceIds: [a!.instanceId, 'i-XYZ'] })));
    expect([malformed.name, malformed.message]).toEqual(['InvalidInstanceID.Malformed', 'Invalid id: "i-XYZ"']);
  });

  it('through the adapter, unknown IDs are absent: one more call drops the IDs EC2 named', async () => {
    const [a, b] = put(2);
    const found = await ec2.describeInstances([a!.instanceId, UNKNOWN, b!.instanceId, OTHER_UNKNOWN, 'not-an-id']);
    expect([...found.keys()]).toEqual([a!.instanceId, b!.instanceId]);
    expect(fake.callCount('DescribeInstances')).toBe(2);
    fake.resetCalls();
    expect(await ec2.describeInstances([UNKNOWN])).toEqual(new Map());
    expect(fake.callCount('DescribeInstances')).toBe(1);
  });

  it('takes at most 1000 IDs and no MaxResults with them; the adapter sends 1001 IDs in two calls', async () => {
    const ids = put(1001).map((i) => i.instanceId);
    const tooMany = await failure(fake.send(new DescribeInstancesCommand({ InstanceIds: ids })));
    const withMax = await failure(
      fake.send(new DescribeInstancesCommand({ InstanceIds: ids.slice(0, 5), MaxResults: 5 })),
    );
    expect([tooMany.name, withMax.name]).toEqual(['InvalidParameterValue', 'InvalidParameterCombination']);
    fake.resetCalls();

    expect((await ec2.describeInstances(ids)).size).toBe(1001);
    expect(fake.callCount('DescribeInstances')).toBe(2);
  });

  it('still describes a terminated instance (for a while), without its network identity', async () => {
    const [a] = put(1);
    fake.setState(a!.instanceId, 'terminated');
    const found = (await ec2.describeInstances([a!.instanceId])).get(a!.instanceId);
    expect(found).toMatchObject({ state: 'terminated', networkInterfaces: [] });
    expect(found?.privateDnsName).toBeUndefined();
    fake.removeInstance(a!.instanceId);
    expect(await ec2.describeInstances([a!.instanceId])).toEqual(new Map());
  });

  it('reads back what was put: addresses, interfaces with their groups, state, tags', async () => {
    const base = makeInstance({ index: 7, availabilityZone: 'eu-west-1b' });
    const instance = fake.putInstance({
      ...base,
      publicDnsName: 'ec2-1-2-3-4.eu-west-1.compute.amazonaws.com',
      publicIpAddress: '1.2.3.4',
      networkInterfaces: base.networkInterfaces.map((e) => ({
        ...e,
        privateIpAddresses: [
          { address: '10.0.0.99', primary: false },
          { address: base.privateIpAddress!, primary: true, privateDnsName: base.privateDnsName },
        ],
        ipv6Addresses: ['2001:db8::7'],
        sourceDestCheck: true,
        securityGroupIds: ['sg-0000000000000node'],
      })),
    });
    const read = (await ec2.describeInstances([instance.instanceId])).get(instance.instanceId);
    // The adapter puts the primary address first.
    const eni = instance.networkInterfaces[0]!;
    expect(read).toEqual({
      ...instance,
      networkInterfaces: [{ ...eni, privateIpAddresses: [eni.privateIpAddresses[1], eni.privateIpAddresses[0]] }],
    });
  });
});

describe('DescribeInstances by private DNS name', () => {
  it('finds live instances only: stopped ones included, terminated ones not', async () => {
    const [running, stopped, terminated] = put(3);
    fake.setState(stopped!.instanceId, 'stopped');
    const dns = terminated!.privateDnsName!;
    fake.setState(terminated!.instanceId, 'terminated');
    const found = await ec2.findInstancesByPrivateDnsName([running!.privateDnsName!, stopped!.privateDnsName!, dns]);
    expect(found.map((i) => i.instanceId)).toEqual([running!.instanceId, stopped!.instanceId]);
  });

  it('counts filter values over every filter (at most 200): the adapter sends 195 names per call', async () => {
    const names = put(400).map((i) => i.privateDnsName!);
    const tooMany = await failure(
      fake.send(new DescribeInstancesCommand({ Filters: [{ Name: 'private-dns-name', Values: names.slice(0, 201) }] })),
    );
    expect(tooMany.name).toBe('FilterLimitExceeded');
    fake.resetCalls();

    expect(await ec2.findInstancesByPrivateDnsName(names)).toHaveLength(400);
    expect(fake.callCount('DescribeInstances')).toBe(Math.ceil(400 / 195));
  });
});

describe('eventual consistency of new instances', () => {
  it('an instance put invisibleForCalls is absent from that many lookups, by ID or by name', async () => {
    const instance = fake.putInstance(makeInstance({ index: 1 }), { invisibleForCalls: 2 });
    expect(await ec2.describeInstances([instance.instanceId])).toEqual(new Map());
    expect(await ec2.findInstancesByPrivateDnsName([instance.privateDnsName!])).toEqual([]);
    expect((await ec2.describeInstances([instance.instanceId])).has(instance.instanceId)).toBe(true);
    // By ID, EC2 answered InvalidInstanceID.NotFound: one call, nothing left to ask again.
    expect(fake.callCount('DescribeInstances')).toBe(3);
  });

  it('looking up other instances does not use its window up', async () => {
    const [other] = put(1, 2);
    const hidden = fake.putInstance(makeInstance({ index: 1 }), { invisibleForCalls: 1 });
    await ec2.describeInstances([other!.instanceId]);
    await ec2.findInstancesByPrivateDnsName([other!.privateDnsName!]);
    expect(await ec2.describeInstances([hidden.instanceId])).toEqual(new Map());
  });
});

describe('zones and instance types', () => {
  it('lists the zones with their IDs and types', async () => {
    expect(await ec2.describeAvailabilityZones()).toEqual(fake.zones);
  });

  it('describes known instance types; an unknown one fails the call (InvalidInstanceType, terminal)', async () => {
    expect(await ec2.describeInstanceTypes(['m5.large', 'm5.large'])).toEqual([fake.instanceTypes.get('m5.large')]);
    const err = await failure(ec2.describeInstanceTypes(['m5.large', 'x9.huge']));
    expect(err).toBeInstanceOf(TerminalError);
    expect(awsErrorCode(err.cause)).toBe('InvalidInstanceType');
    expect(err.message).toMatch(/\[x9\.huge\]/);
  });

  it('answers each type’s hypervisor as EC2 does (bare metal: none, BareMetal true)', async () => {
    fake.instanceTypes.set('m4.large', {
      instanceType: 'm4.large',
      maximumNetworkInterfaces: 2,
      ipv4AddressesPerInterface: 10,
      ipv6AddressesPerInterface: 10,
      hypervisor: 'xen',
    });
    fake.instanceTypes.set('m5.metal', {
      instanceType: 'm5.metal',
      maximumNetworkInterfaces: 15,
      ipv4AddressesPerInterface: 50,
      ipv6AddressesPerInterface: 50,
      bareMetal: true,
    });
    const { InstanceTypes } = await fake.send(
      new DescribeInstanceTypesCommand({ InstanceTypes: ['m5.large', 'm4.large', 'm5.metal'] }),
    );
    expect(InstanceTypes?.map((t) => [t.InstanceType, t.Hypervisor, t.BareMetal])).toEqual([
      ['m5.large', 'nitro', false],
      ['m4.large', 'xen', false],
      ['m5.metal', undefined, true],
    ]);
  });

  it('one DescribeAvailabilityZones serves every zone lookup of a container (Ec2Facts)', async () => {
    const facts = new Ec2Facts(ec2, new FakeClock());
    expect(await Promise.all([facts.zoneId('eu-west-1a'), facts.zoneId('eu-west-1c')])).toEqual([
      'euw1-az3',
      'euw1-az2',
    ]);
    expect(fake.callCount('DescribeAvailabilityZones')).toBe(1);
  });
});
