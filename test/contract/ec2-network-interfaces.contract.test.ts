import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RetryableError } from '../../shared/errors.ts';
import { type Ec2Seed, ec2Backends } from './backends.ts';
import { describeContract } from './contract.ts';
import { differenceRow, hasTest } from './difference-rows.ts';

/**
 * The Ec2Port network-interface calls the IP address manager relies on (describe, assign secondary addresses and
 * /28 prefixes, unassign, delete), run on Ec2Adapter over the AWS API emulator and over FakeEc2. What moto 5.2.1
 * does not do (prefixes, subnet and per-interface limits, refusing to delete an attached interface, answering only
 * the new addresses) is a row of docs/emulator-differences.md keyed `eni.…`, and its test is expected to fail there
 * (`it.fails`; CONTRACT_SHOW_DIFFERENCES=1 runs it as a plain test). The fake's own rules beyond these (address
 * order, reserved addresses, eventual consistency) are tested in shared/aws/fakes/ec2/network-interfaces.test.ts.
 */
const EMULATOR_DIFFERS = {
  assignAnswer: 'eni.assign-answer',
  prefixes: 'eni.prefixes',
  subnetFull: 'eni.subnet-full',
  interfaceLimit: 'eni.interface-limit',
  deleteAttached: 'eni.delete-attached',
} as const;

const OWNER = { 'serverless-ccm/ipam': 'owned' };

/** A VPC with one /24 subnet in zone a. */
async function network(seed: Ec2Seed, cidr = '10.0.1.0/24') {
  const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16' });
  const { subnetId } = await seed.subnet({ vpcId, cidr, zone: 'eu-west-1a' });
  return { vpcId, subnetId };
}

function inSubnet(address: string, prefix = '10.0.1.'): boolean {
  return address.startsWith(prefix);
}

describeContract('Ec2Port: network interfaces', ec2Backends(), (backend, _test, kind) => {
  const differs = (key: string, name: string, fn: () => Promise<void>) => {
    const expectFailure = kind === 'emulator' && !process.env.CONTRACT_SHOW_DIFFERENCES;
    (expectFailure ? it.fails : it)(kind === 'emulator' ? `${name} [emulator differs: ${key}]` : name, fn, 30_000);
  };
  const addressesOf = async (networkInterfaceId: string) => {
    const [eni] = await backend().ec2.describeNetworkInterfaces({ networkInterfaceIds: [networkInterfaceId] });
    if (!eni) throw new Error(`no interface ${networkInterfaceId}`);
    return {
      primary: eni.privateIpAddresses.filter((a) => a.primary).map((a) => a.address),
      secondary: eni.privateIpAddresses.filter((a) => !a.primary).map((a) => a.address),
      prefixes: eni.ipv4Prefixes,
    };
  };

  it("describes an instance's interface: in use, attached at index 0, with its primary address", async () => {
    const { ec2, seed } = backend();
    const { vpcId, subnetId } = await network(seed);
    const [instance] = await seed.instances({ subnetId, count: 1 });

    const found = await ec2.describeNetworkInterfaces({ networkInterfaceIds: [instance!.networkInterfaceId] });

    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      networkInterfaceId: instance!.networkInterfaceId,
      status: 'in-use',
      subnetId,
      vpcId,
      availabilityZone: 'eu-west-1a',
      attachment: { instanceId: instance!.instanceId, deviceIndex: 0 },
      privateIpAddresses: [{ address: instance!.privateIpAddress, primary: true }],
      ipv4Prefixes: [],
    });
  });

  it('describes a standalone interface as available, unattached, with its tags', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const eni = await seed.networkInterface({ subnetId, tags: OWNER });

    const [found] = await ec2.describeNetworkInterfaces({ networkInterfaceIds: [eni.networkInterfaceId] });

    expect(found).toMatchObject({
      networkInterfaceId: eni.networkInterfaceId,
      status: 'available',
      subnetId,
      privateIpAddresses: [{ address: eni.privateIpAddress, primary: true }],
      tags: OWNER,
    });
    expect(found?.attachment).toBeUndefined();
  });

  it('filters by status, VPC and tags; IDs it does not know are simply absent', async () => {
    const { ec2, seed } = backend();
    const { vpcId, subnetId } = await network(seed);
    const other = await network(seed, '10.0.2.0/24');
    const [instance] = await seed.instances({ subnetId, count: 1 });
    const ours = await seed.networkInterface({ subnetId, tags: { ...OWNER, node: 'n1' } });
    const theirs = await seed.networkInterface({ subnetId, tags: { node: 'n2' } });
    const elsewhere = await seed.networkInterface({ subnetId: other.subnetId, tags: OWNER });
    const ids = async (query: Parameters<typeof ec2.describeNetworkInterfaces>[0]) =>
      (await ec2.describeNetworkInterfaces(query)).map((e) => e.networkInterfaceId).sort();

    expect(await ids({ vpcId, status: 'available' })).toEqual(
      [ours.networkInterfaceId, theirs.networkInterfaceId].sort(),
    );
    expect(await ids({ vpcId, status: 'in-use' })).toEqual([instance!.networkInterfaceId]);
    expect(await ids({ tags: OWNER })).toEqual([ours.networkInterfaceId, elsewhere.networkInterfaceId].sort());
    expect(await ids({ vpcId, tags: { node: undefined } })).toEqual(
      [ours.networkInterfaceId, theirs.networkInterfaceId].sort(),
    );
    expect(await ids({ networkInterfaceIds: [ours.networkInterfaceId, 'eni-0123456789abcdef0'] })).toEqual([
      ours.networkInterfaceId,
    ]);
    expect(await ids({ networkInterfaceIds: ['eni-0123456789abcdef0'] })).toEqual([]);
  });

  it('assigned secondary addresses are described on the interface and on its instance', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const [instance] = await seed.instances({ subnetId, count: 1 });
    const eniId = instance!.networkInterfaceId;

    const result = await ec2.assignPrivateIpAddresses(eniId, { count: 3 });

    expect(result).toMatchObject({ prefixes: [] });
    const { primary, secondary } = await addressesOf(eniId);
    expect(primary).toEqual([instance!.privateIpAddress]);
    expect(secondary).toHaveLength(3);
    expect(secondary.every((a) => inSubnet(a))).toBe(true);
    const described = (await ec2.describeInstances([instance!.instanceId])).get(instance!.instanceId);
    expect(described?.networkInterfaces[0]?.privateIpAddresses.map((a) => a.address)).toEqual([
      instance!.privateIpAddress,
      ...secondary,
    ]);
  });

  differs(
    EMULATOR_DIFFERS.assignAnswer,
    'AssignPrivateIpAddresses answers only the addresses it assigned',
    async () => {
      const { ec2, seed } = backend();
      const { subnetId } = await network(seed);
      const eni = await seed.networkInterface({ subnetId });

      const result = await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 2 });

      const { secondary } = await addressesOf(eni.networkInterfaceId);
      expect(result).toEqual({ addresses: secondary, prefixes: [] });
    },
  );

  differs(EMULATOR_DIFFERS.prefixes, 'delegates /28 prefixes of the subnet and describes them', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const eni = await seed.networkInterface({ subnetId });

    const result = await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { prefixes: 2 });

    if (typeof result === 'string') throw new Error(`no prefixes: ${result}`);
    expect(result.prefixes).toHaveLength(2);
    for (const prefix of result.prefixes) {
      expect(prefix).toMatch(/^10\.0\.1\.\d+\/28$/);
      expect(Number(prefix.split('.')[3]!.split('/')[0]) % 16).toBe(0);
    }
    expect((await addressesOf(eni.networkInterfaceId)).prefixes.sort()).toEqual([...result.prefixes].sort());

    await ec2.unassignPrivateIpAddresses(eni.networkInterfaceId, { prefixes: result.prefixes });

    expect((await addressesOf(eni.networkInterfaceId)).prefixes).toEqual([]);
  });

  it('unassigned addresses are gone; releasing one the interface no longer has is no error', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const eni = await seed.networkInterface({ subnetId });
    const id = eni.networkInterfaceId;
    await ec2.assignPrivateIpAddresses(id, { count: 3 });
    const assigned = (await addressesOf(id)).secondary;
    // Three distinct addresses in EC2; the emulator may pick one twice in a call (docs/emulator-differences.md,
    // `eni.subnet-full`), and then both copies go together.
    const [first, second, third] = [...new Set(assigned), undefined, undefined];
    const without = (...gone: (string | undefined)[]) => assigned.filter((a) => !gone.includes(a));

    await ec2.unassignPrivateIpAddresses(id, { addresses: [first!] });
    expect((await addressesOf(id)).secondary).toEqual(without(first));

    await ec2.unassignPrivateIpAddresses(id, { addresses: [first!] });
    await ec2.unassignPrivateIpAddresses(id, { addresses: [first!, ...(second ? [second] : [])] });

    expect(await addressesOf(id)).toEqual({
      primary: [eni.privateIpAddress],
      secondary: without(first, second),
      prefixes: [],
    });
    if (new Set(assigned).size === 3) expect(without(first, second)).toEqual([third]);
  });

  it('deletes an available interface; then it is not-found and no longer described', async () => {
    const { ec2, seed } = backend();
    const { subnetId } = await network(seed);
    const eni = await seed.networkInterface({ subnetId, tags: OWNER });

    expect(await ec2.deleteNetworkInterface(eni.networkInterfaceId)).toBe('deleted');

    expect(await ec2.describeNetworkInterfaces({ tags: OWNER })).toEqual([]);
    expect(await ec2.deleteNetworkInterface(eni.networkInterfaceId)).toBe('not-found');
    expect(await ec2.deleteNetworkInterface('eni-0123456789abcdef0')).toBe('not-found');
  });

  differs(
    EMULATOR_DIFFERS.deleteAttached,
    'refuses to delete an attached interface, as a retryable error; the interface stays',
    async () => {
      const { ec2, seed } = backend();
      const { subnetId } = await network(seed);
      const [instance] = await seed.instances({ subnetId, count: 1 });

      const error = await ec2.deleteNetworkInterface(instance!.networkInterfaceId).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(RetryableError);
      expect(await addressesOf(instance!.networkInterfaceId)).toMatchObject({ primary: [instance!.privateIpAddress] });
    },
  );

  differs(EMULATOR_DIFFERS.subnetFull, 'a subnet with no free address left is subnet-full', async () => {
    const { ec2, seed } = backend();
    // A /28: 16 addresses, of which EC2 keeps 5; the interface's primary and 10 secondaries fill it.
    const { subnetId } = await network(seed, '10.0.1.0/28');
    const eni = await seed.networkInterface({ subnetId });

    expect(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 10 })).not.toBeTypeOf('string');

    expect(await ec2.assignPrivateIpAddresses(eni.networkInterfaceId, { count: 1 })).toBe('subnet-full');
  });

  differs(
    EMULATOR_DIFFERS.interfaceLimit,
    "beyond the instance type's addresses per interface is interface-full",
    async () => {
      const { ec2, seed } = backend();
      const { subnetId } = await network(seed);
      // m5.large: 10 IPv4 addresses per interface, the primary included.
      const [instance] = await seed.instances({ subnetId, count: 1 });
      const eniId = instance!.networkInterfaceId;

      expect(await ec2.assignPrivateIpAddresses(eniId, { count: 9 })).not.toBeTypeOf('string');

      expect(await ec2.assignPrivateIpAddresses(eniId, { count: 1 })).toBe('interface-full');
      expect((await addressesOf(eniId)).secondary).toHaveLength(9);
    },
  );
});

describe('the rows of the differences table (docs) for this suite', () => {
  const source = readFileSync(import.meta.filename, 'utf8');
  it.each(Object.values(EMULATOR_DIFFERS))('%s has its row, naming tests of this file', (key) => {
    const row = differenceRow(key);
    expect(row?.file).toBe('ec2-network-interfaces.contract.test.ts');
    expect(row!.tests.length).toBeGreaterThan(0);
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});
