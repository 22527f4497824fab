import { expect } from 'vitest';
import type { Ec2Seed } from './backends.ts';
import { ec2Backends } from './backends.ts';
import { describeContract } from './contract.ts';

/**
 * Ec2Port behaviour shared by the adapter on the emulator and the fake: instances, zones, instance types,
 * source/destination check, subnets and tags. Routes and security groups have their own files.
 */

const CLUSTER_TAG = { 'kubernetes.io/cluster/contract': 'owned' };

/** A VPC with one subnet in zone a: where every instance of these tests runs. */
async function network(seed: Ec2Seed) {
  const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16' });
  const { subnetId } = await seed.subnet({ vpcId, cidr: '10.0.1.0/24', zone: 'eu-west-1a' });
  return { vpcId, subnetId };
}

describeContract('Ec2Port: instances, zones, subnets, tags', ec2Backends(), (backend, test) => {
  test('describes instances by ID with their network identity and tags', async () => {
    const { ec2, seed } = backend();
    const { vpcId, subnetId } = await network(seed);
    const [one] = await seed.instances({ subnetId, count: 1, tags: CLUSTER_TAG });

    const found = await ec2.describeInstances([one!.instanceId]);

    const instance = found.get(one!.instanceId);
    expect(instance).toMatchObject({
      instanceId: one!.instanceId,
      state: 'running',
      instanceType: 'm5.large',
      availabilityZone: 'eu-west-1a',
      vpcId,
      subnetId,
      privateDnsName: one!.privateDnsName,
      privateIpAddress: one!.privateIpAddress,
      tags: CLUSTER_TAG,
    });
    expect(instance!.privateIpAddress).toMatch(/^10\.0\.1\.\d+$/);
    // The primary interface carries the primary address; the Node's addresses are built from it.
    expect(instance!.networkInterfaces).toHaveLength(1);
    expect(instance!.networkInterfaces[0]).toMatchObject({
      networkInterfaceId: one!.networkInterfaceId,
      deviceIndex: 0,
      status: 'in-use',
      subnetId,
    });
    expect(instance!.networkInterfaces[0]!.privateIpAddresses[0]).toMatchObject({
      address: one!.privateIpAddress,
      primary: true,
    });
  });

  test('leaves unknown and malformed instance IDs out of the answer instead of failing the others', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const seeded = await seed.instances({ subnetId, count: 2 });
    const known = seeded.map((i) => i.instanceId);

    const found = await ec2.describeInstances([
      ...known,
      'i-0123456789abcdef0',
      'i-0badc0de',
      'not-an-instance',
      'i-XYZ',
    ]);

    expect([...found.keys()].sort()).toEqual([...known].sort());
    expect(await ec2.describeInstances(['i-0123456789abcdef0', 'i-0badc0de'])).toEqual(new Map());
    expect(await ec2.describeInstances([])).toEqual(new Map());
  });

  test('finds every instance of a list longer than one DescribeInstances call takes (1000 IDs)', async () => {
    const { ec2, seed } = backend();
    const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16' });
    // A /20: room for 1001 instances (a /24 holds 251).
    const { subnetId } = await seed.subnet({ vpcId, cidr: '10.0.16.0/20', zone: 'eu-west-1b' });
    const seeded = await seed.instances({ subnetId, count: 1001, tags: CLUSTER_TAG });
    const ids = seeded.map((i) => i.instanceId);

    const found = await ec2.describeInstances([...ids, 'i-0123456789abcdef0']);

    expect(found.size).toBe(1001);
    expect([...found.values()].every((i) => i.tags['kubernetes.io/cluster/contract'] === 'owned')).toBe(true);
  }, 120_000);

  test('finds live instances by private DNS name, stopped ones included, terminated ones not', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const [running, stopped, terminated] = await seed.instances({ subnetId, count: 3, tags: CLUSTER_TAG });
    await seed.stop([stopped!.instanceId]);
    await seed.terminate([terminated!.instanceId]);

    const found = await ec2.findInstancesByPrivateDnsName([
      running!.privateDnsName,
      stopped!.privateDnsName,
      terminated!.privateDnsName,
      'ip-10-9-9-9.eu-west-1.compute.internal',
    ]);

    expect(found.map((i) => i.instanceId).sort()).toEqual([running!.instanceId, stopped!.instanceId].sort());
    expect(found.find((i) => i.instanceId === stopped!.instanceId)?.state).toBe('stopped');
    expect(await ec2.findInstancesByPrivateDnsName(['ip-10-9-9-9.eu-west-1.compute.internal'])).toEqual([]);
  });

  test('still describes a terminated instance by ID, as terminated', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const [one] = await seed.instances({ subnetId, count: 1 });
    await seed.terminate([one!.instanceId]);

    const found = await ec2.describeInstances([one!.instanceId]);

    expect(found.get(one!.instanceId)?.state).toBe('terminated');
  });

  test('turns the source/destination check off per instance', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const [one] = await seed.instances({ subnetId, count: 1 });
    expect((await ec2.describeInstances([one!.instanceId])).get(one!.instanceId)?.sourceDestCheck).toBe(true);

    await ec2.modifyInstanceSourceDestCheck(one!.instanceId, false);

    expect((await ec2.describeInstances([one!.instanceId])).get(one!.instanceId)?.sourceDestCheck).toBe(false);
  });

  test('turns the source/destination check off per network interface', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const [one] = await seed.instances({ subnetId, count: 1 });

    await ec2.modifyNetworkInterfaceSourceDestCheck(one!.networkInterfaceId, false);

    // The check is an attribute of each interface: an instance with several is changed interface by interface.
    const eni = (await ec2.describeInstances([one!.instanceId]))
      .get(one!.instanceId)
      ?.networkInterfaces.find((e) => e.networkInterfaceId === one!.networkInterfaceId);
    expect(eni?.sourceDestCheck).toBe(false);
  });

  test('lists the availability zones of the region with their zone IDs', async () => {
    const { ec2 } = backend();

    const zones = await ec2.describeAvailabilityZones();

    const names = zones.map((z) => z.zoneName);
    expect(names).toEqual(expect.arrayContaining(['eu-west-1a', 'eu-west-1b', 'eu-west-1c']));
    expect(new Set(zones.map((z) => z.zoneId)).size).toBe(zones.length);
    for (const zone of zones) {
      expect(zone.zoneName).toMatch(/^eu-west-1[a-z]$/);
      // Zone IDs name the physical zone (the same in every account), zone names are per account.
      expect(zone.zoneId).toMatch(/^euw1-az\d+$/);
    }
    expect(zones.find((z) => z.zoneName === 'eu-west-1a')?.zoneType).toBe('availability-zone');
  });

  test('describes instance types with their network limits', async () => {
    const { ec2 } = backend();

    const [m5] = await ec2.describeInstanceTypes(['m5.large']);

    // m5.large: 3 network interfaces, 10 IPv4 and 10 IPv6 addresses per interface; Nitro (prefix delegation).
    expect(m5).toEqual({
      instanceType: 'm5.large',
      maximumNetworkInterfaces: 3,
      ipv4AddressesPerInterface: 10,
      ipv6AddressesPerInterface: 10,
      hypervisor: 'nitro',
      bareMetal: false,
    });
  });

  test('describes the subnets of a VPC with zone, zone ID, CIDR and tags, and no other VPC', async () => {
    const { ec2, seed } = backend();
    const { vpcId } = await seed.vpc({ cidr: '10.1.0.0/16' });
    const { vpcId: otherVpcId } = await seed.vpc({ cidr: '10.2.0.0/16' });
    const a = await seed.subnet({ vpcId, cidr: '10.1.1.0/24', zone: 'eu-west-1a', tags: { Name: 'public-a' } });
    const b = await seed.subnet({ vpcId, cidr: '10.1.2.0/24', zone: 'eu-west-1b' });
    await seed.subnet({ vpcId: otherVpcId, cidr: '10.2.1.0/24', zone: 'eu-west-1a' });
    const zoneIds = new Map((await ec2.describeAvailabilityZones()).map((z) => [z.zoneName, z.zoneId]));

    const subnets = await ec2.describeSubnets({ vpcId });

    expect(subnets.map((s) => s.subnetId).sort()).toEqual([a.subnetId, b.subnetId].sort());
    expect(subnets.find((s) => s.subnetId === a.subnetId)).toEqual({
      subnetId: a.subnetId,
      vpcId,
      availabilityZone: 'eu-west-1a',
      availabilityZoneId: zoneIds.get('eu-west-1a'),
      cidrBlock: '10.1.1.0/24',
      tags: { Name: 'public-a' },
    });
  });

  test('finds subnets by ID and by Name tag; unknown ones are simply absent', async () => {
    const { ec2, seed } = backend();
    const { vpcId } = await seed.vpc({ cidr: '10.1.0.0/16' });
    const a = await seed.subnet({ vpcId, cidr: '10.1.1.0/24', zone: 'eu-west-1a', tags: { Name: 'nodes-a' } });
    const b = await seed.subnet({ vpcId, cidr: '10.1.2.0/24', zone: 'eu-west-1b', tags: { Name: 'nodes-b' } });

    const byId = await ec2.describeSubnets({ subnetIds: [a.subnetId, 'subnet-0123456789abcdef0'] });
    const byName = await ec2.describeSubnets({ names: ['nodes-b', 'no-such-subnet'] });

    expect(byId.map((s) => s.subnetId)).toEqual([a.subnetId]);
    expect(byName.map((s) => s.subnetId)).toEqual([b.subnetId]);
    expect(await ec2.describeSubnets({ vpcId, subnetIds: [] })).toEqual([]);
    expect(await ec2.describeSubnets({ vpcId, names: [] })).toEqual([]);
  });

  test.differs(
    'ec2.subnet-ipv6-state',
    "states a subnet's associated IPv6 CIDR block, and none for an IPv4-only subnet",
    async () => {
      const { ec2, seed } = backend();
      const { vpcId } = await seed.vpc({ cidr: '10.3.0.0/16', ipv6: true });
      const dual = await seed.subnet({ vpcId, cidr: '10.3.1.0/24', zone: 'eu-west-1a', ipv6Index: 1 });
      const v4 = await seed.subnet({ vpcId, cidr: '10.3.2.0/24', zone: 'eu-west-1b' });

      const subnets = await ec2.describeSubnets({ vpcId });

      expect(dual.ipv6CidrBlock).toMatch(/::\/64$/);
      expect(subnets.find((s) => s.subnetId === dual.subnetId)?.ipv6CidrBlocks).toEqual([dual.ipv6CidrBlock]);
      expect(subnets.find((s) => s.subnetId === v4.subnetId)?.ipv6CidrBlocks).toBeUndefined();
    },
  );

  test('adds and overwrites tags on several resources at once, and removes keys whatever their value', async () => {
    const { ec2, seed } = backend();
    const { vpcId } = await seed.vpc({ cidr: '10.4.0.0/16' });
    const a = await seed.subnet({ vpcId, cidr: '10.4.1.0/24', zone: 'eu-west-1a', tags: { Name: 'a', team: 'x' } });
    const b = await seed.subnet({ vpcId, cidr: '10.4.2.0/24', zone: 'eu-west-1b' });
    const ids = [a.subnetId, b.subnetId];

    await ec2.createTags(ids, { 'kubernetes.io/role/elb': '1', team: 'y' });
    const tagged = await ec2.describeSubnets({ subnetIds: ids });
    expect(tagged.find((s) => s.subnetId === a.subnetId)?.tags).toEqual({
      Name: 'a',
      team: 'y',
      'kubernetes.io/role/elb': '1',
    });
    expect(tagged.find((s) => s.subnetId === b.subnetId)?.tags).toEqual({ team: 'y', 'kubernetes.io/role/elb': '1' });

    // Keys only: each goes whatever its value; a key a resource lacks is not an error.
    await ec2.deleteTags(ids, ['team', 'kubernetes.io/role/elb', 'never-set']);
    const untagged = await ec2.describeSubnets({ subnetIds: ids });
    expect(untagged.find((s) => s.subnetId === a.subnetId)?.tags).toEqual({ Name: 'a' });
    expect(untagged.find((s) => s.subnetId === b.subnetId)?.tags).toEqual({});
  });
});
