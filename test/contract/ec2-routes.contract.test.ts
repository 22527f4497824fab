import { expect } from 'vitest';
import type { Ec2Seed } from './backends.ts';
import { ec2Backends } from './backends.ts';
import { describeContract } from './contract.ts';

/** Ec2Port route tables and routes, on the adapter over the emulator and on the fake. */

const CLUSTER_KEY = 'kubernetes.io/cluster/contract';

/** A VPC, a subnet, a cluster-tagged route table and two running instances (route targets). */
async function routed(seed: Ec2Seed, options: { ipv6?: boolean } = {}) {
  const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16', ...(options.ipv6 ? { ipv6: true } : {}) });
  const { subnetId } = await seed.subnet({ vpcId, cidr: '10.0.1.0/24', zone: 'eu-west-1a' });
  const routeTableId = await seed.routeTable({ vpcId, tags: { [CLUSTER_KEY]: 'owned' } });
  const [first, second] = await seed.instances({ subnetId, count: 2 });
  return { vpcId, subnetId, routeTableId, first: first!, second: second! };
}

describeContract('Ec2Port: route tables and routes', ec2Backends(), (backend, test) => {
  test('finds route tables by tag key (any value) or by key and value', async () => {
    const { ec2, seed } = backend();
    const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16' });
    const owned = await seed.routeTable({ vpcId, tags: { [CLUSTER_KEY]: 'owned' } });
    const shared = await seed.routeTable({ vpcId, tags: { [CLUSTER_KEY]: 'shared' } });
    await seed.routeTable({ vpcId, tags: { other: 'owned' } });

    const anyValue = await ec2.findRouteTablesByTag({ key: CLUSTER_KEY });
    const ownedOnly = await ec2.findRouteTablesByTag({ key: CLUSTER_KEY, value: 'owned' });

    expect(anyValue.map((t) => t.routeTableId).sort()).toEqual([owned, shared].sort());
    expect(ownedOnly.map((t) => t.routeTableId)).toEqual([owned]);
    expect(ownedOnly[0]).toMatchObject({ vpcId, tags: { [CLUSTER_KEY]: 'owned' } });
    expect(await ec2.findRouteTablesByTag({ key: CLUSTER_KEY, value: 'nobody' })).toEqual([]);
  });

  test("lists every route table of a VPC, the main one marked, with the VPC's local route", async () => {
    const { ec2, seed } = backend();
    const { vpcId } = await seed.vpc({ cidr: '10.0.0.0/16' });
    const { vpcId: otherVpcId } = await seed.vpc({ cidr: '10.9.0.0/16' });
    const created = await seed.routeTable({ vpcId });
    await seed.routeTable({ vpcId: otherVpcId });

    const tables = await ec2.findRouteTablesByVpc(vpcId);

    // CreateVpc made the main table; CreateRouteTable the other one.
    expect(tables).toHaveLength(2);
    expect(tables.every((t) => t.vpcId === vpcId)).toBe(true);
    const main = tables.find((t) => t.associations?.some((a) => a.main));
    expect(main).toBeDefined();
    expect(main!.routeTableId).not.toBe(created);
    for (const table of tables) {
      expect(table.routes).toContainEqual({
        destination: '10.0.0.0/16',
        destinationType: 'ipv4',
        target: { gatewayId: 'local' },
        state: 'active',
        origin: 'CreateRouteTable',
      });
    }
  });

  test('describes one route table by ID; an unknown ID is absent, not an error', async () => {
    const { ec2, seed } = backend();
    const { routeTableId } = await routed(seed);

    expect((await ec2.describeRouteTable(routeTableId))?.routeTableId).toBe(routeTableId);
    expect(await ec2.describeRouteTable('rtb-0123456789abcdef0')).toBeUndefined();
  });

  test('creates a route to an instance', async () => {
    const { ec2, seed } = backend();
    const { routeTableId, first } = await routed(seed);

    expect(await ec2.createRoute(routeTableId, '100.64.1.0/24', { instanceId: first.instanceId })).toBe('created');

    const route = (await ec2.describeRouteTable(routeTableId))?.routes.find((r) => r.destination === '100.64.1.0/24');
    expect(route).toMatchObject({
      destination: '100.64.1.0/24',
      destinationType: 'ipv4',
      state: 'active',
      origin: 'CreateRoute',
    });
    // Whether EC2 also names the instance's interface is not documented, so only the instance is asserted.
    expect(route?.target.instanceId).toBe(first.instanceId);
  });

  test('creates a route to a network interface', async () => {
    const { ec2, seed } = backend();
    const { routeTableId, first } = await routed(seed);

    await ec2.createRoute(routeTableId, '100.64.2.0/24', { networkInterfaceId: first.networkInterfaceId });

    const route = (await ec2.describeRouteTable(routeTableId))?.routes.find((r) => r.destination === '100.64.2.0/24');
    expect(route?.target.networkInterfaceId).toBe(first.networkInterfaceId);
    expect(route?.state).toBe('active');
  });

  test('answers already-exists for a destination the table routes already, whatever the target', async () => {
    const { ec2, seed } = backend();
    const { routeTableId, first, second } = await routed(seed);
    await ec2.createRoute(routeTableId, '100.64.1.0/24', { instanceId: first.instanceId });

    expect(await ec2.createRoute(routeTableId, '100.64.1.0/24', { instanceId: first.instanceId })).toBe(
      'already-exists',
    );
    expect(await ec2.createRoute(routeTableId, '100.64.1.0/24', { instanceId: second.instanceId })).toBe(
      'already-exists',
    );
    const routes = (await ec2.describeRouteTable(routeTableId))?.routes.filter(
      (r) => r.destination === '100.64.1.0/24',
    );
    expect(routes?.map((r) => r.target.instanceId)).toEqual([first.instanceId]);
  });

  test('creates an IPv6 route, read back as an IPv6 destination', async () => {
    const { ec2, seed } = backend();
    const { routeTableId, first } = await routed(seed, { ipv6: true });

    await ec2.createRoute(routeTableId, '2001:db8:1234::/64', { instanceId: first.instanceId });

    const route = (await ec2.describeRouteTable(routeTableId))?.routes.find(
      (r) => r.destination === '2001:db8:1234::/64',
    );
    expect(route).toMatchObject({ destinationType: 'ipv6', state: 'active', origin: 'CreateRoute' });
    expect(route?.target.instanceId).toBe(first.instanceId);
  });

  test('replaces the target of an existing route; a missing route is not-found', async () => {
    const { ec2, seed } = backend();
    const { routeTableId, first, second } = await routed(seed);
    await ec2.createRoute(routeTableId, '100.64.1.0/24', { instanceId: first.instanceId });

    expect(await ec2.replaceRoute(routeTableId, '100.64.1.0/24', { instanceId: second.instanceId })).toBe('replaced');
    expect(await ec2.replaceRoute(routeTableId, '100.64.9.0/24', { instanceId: second.instanceId })).toBe('not-found');

    const routes = (await ec2.describeRouteTable(routeTableId))?.routes ?? [];
    expect(routes.find((r) => r.destination === '100.64.1.0/24')?.target.instanceId).toBe(second.instanceId);
    expect(routes.some((r) => r.destination === '100.64.9.0/24')).toBe(false);
  });

  test('deletes a route; deleting it again is not-found', async () => {
    const { ec2, seed } = backend();
    const { routeTableId, first } = await routed(seed);
    await ec2.createRoute(routeTableId, '100.64.1.0/24', { instanceId: first.instanceId });

    expect(await ec2.deleteRoute(routeTableId, '100.64.1.0/24')).toBe('deleted');
    expect(await ec2.deleteRoute(routeTableId, '100.64.1.0/24')).toBe('not-found');
    expect((await ec2.describeRouteTable(routeTableId))?.routes.map((r) => r.destination)).toEqual(['10.0.0.0/16']);
  });

  test('fails a route write to a table EC2 does not know', async () => {
    const { ec2, seed } = backend();
    const { first } = await routed(seed);

    await expect(
      ec2.createRoute('rtb-0123456789abcdef0', '100.64.1.0/24', { instanceId: first.instanceId }),
    ).rejects.toThrow(/InvalidRouteTableID\.NotFound/);
  });

  test.differs('ec2.route-blackhole', 'shows a route to a terminated instance as a blackhole', async () => {
    const { ec2, seed } = backend();
    const { routeTableId, first } = await routed(seed);
    await ec2.createRoute(routeTableId, '100.64.1.0/24', { instanceId: first.instanceId });

    await seed.terminate([first.instanceId]);

    const route = (await ec2.describeRouteTable(routeTableId))?.routes.find((r) => r.destination === '100.64.1.0/24');
    expect(route?.state).toBe('blackhole');
  });
});
