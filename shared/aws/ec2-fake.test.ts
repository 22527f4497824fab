import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { FakeEc2, makeInstance, makeRouteTable } from './ec2-fake.ts';
import { awsErrorCode } from './errors.ts';

const TABLE = 'rtb-0123456789abcdef0';
let ec2: FakeEc2;
beforeEach(() => {
  ec2 = new FakeEc2();
  ec2.putRouteTable(makeRouteTable());
});

const codeOf = (err: unknown) => awsErrorCode((err as Error).cause);

describe('FakeEc2 route tables', () => {
  it('records instance and interface for a route to either, and counts calls per operation', async () => {
    const a = ec2.putInstance(makeInstance({ index: 1 }));
    const eni = a.networkInterfaces[0]!.networkInterfaceId;

    expect(await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId })).toBe('created');
    expect(await ec2.createRoute(TABLE, 'fd00::/64', { networkInterfaceId: eni })).toBe('created');

    const table = await ec2.describeRouteTable(TABLE);
    expect(table?.routes.slice(2)).toEqual([
      {
        destination: '10.244.1.0/24',
        destinationType: 'ipv4',
        target: { instanceId: a.instanceId, networkInterfaceId: eni },
        state: 'active',
        origin: 'CreateRoute',
      },
      {
        destination: 'fd00::/64',
        destinationType: 'ipv6',
        target: { instanceId: a.instanceId, networkInterfaceId: eni },
        state: 'active',
        origin: 'CreateRoute',
      },
    ]);
    expect(ec2.callCount('CreateRoute')).toBe(2);
    expect(ec2.callCount('DescribeRouteTables')).toBe(1);
    expect(ec2.writeCallCount()).toBe(2);
  });

  it('turns a route to a terminated instance into a blackhole', async () => {
    const a = ec2.putInstance(makeInstance({ index: 1 }));
    await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId });
    ec2.setState(a.instanceId, 'terminated');

    const route = ec2.routesOf(TABLE).find((r) => r.destination === '10.244.1.0/24');
    expect(route?.state).toBe('blackhole');
    expect(route?.target.instanceId).toBeUndefined();
  });

  it('finds tables by tag key or exact tag', async () => {
    ec2.putRouteTable(makeRouteTable({ routeTableId: 'rtb-2', clusterName: '', tags: { KubernetesCluster: 'x' } }));
    expect(
      (await ec2.findRouteTablesByTag({ key: 'kubernetes.io/cluster/test-cluster' })).map((t) => t.routeTableId),
    ).toEqual([TABLE]);
    expect(await ec2.findRouteTablesByTag({ key: 'KubernetesCluster', value: 'y' })).toEqual([]);
    expect(await ec2.describeRouteTable('rtb-unknown')).toBeUndefined();
  });

  it('answers with the outcomes and error codes EC2 gives', async () => {
    const a = ec2.putInstance(makeInstance({ index: 1 }));
    await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId });

    expect(await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId })).toBe('already-exists');
    expect(await ec2.replaceRoute(TABLE, '10.244.9.0/24', { instanceId: a.instanceId })).toBe('not-found');
    expect(await ec2.deleteRoute(TABLE, '10.244.9.0/24')).toBe('not-found');
    expect(await ec2.deleteRoute(TABLE, '10.244.1.0/24')).toBe('deleted');

    const unknownTable = await ec2.createRoute('rtb-9', '10.244.1.0/24', { instanceId: a.instanceId }).catch((e) => e);
    expect(unknownTable).toBeInstanceOf(RetryableError);
    expect(codeOf(unknownTable)).toBe('InvalidRouteTableID.NotFound');

    const local = await ec2.deleteRoute(TABLE, '10.0.0.0/16').catch((e) => e);
    expect(codeOf(local)).toBe('InvalidParameterValue');

    const gone = await ec2.createRoute(TABLE, '10.244.2.0/24', { instanceId: 'i-0000000000000dead' }).catch((e) => e);
    expect(codeOf(gone)).toBe('InvalidInstanceID.NotFound');
  });

  it('refuses instance-wide operations on a multi-interface instance, as EC2 does', async () => {
    const base = makeInstance({ index: 1 });
    const multi = ec2.putInstance({
      ...base,
      networkInterfaces: [
        base.networkInterfaces[0]!,
        { ...base.networkInterfaces[0]!, networkInterfaceId: 'eni-2', deviceIndex: 1 },
      ],
    });

    const route = await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: multi.instanceId }).catch((e) => e);
    const check = await ec2.modifyInstanceSourceDestCheck(multi.instanceId, false).catch((e) => e);

    for (const err of [route, check]) {
      expect(err).toBeInstanceOf(TerminalError);
      expect(codeOf(err)).toBe('InvalidInstanceID');
    }
    await ec2.modifyNetworkInterfaceSourceDestCheck(base.networkInterfaces[0]!.networkInterfaceId, false);
    expect(ec2.instances.get(multi.instanceId)!.sourceDestCheck).toBe(false);
    expect(ec2.instances.get(multi.instanceId)!.networkInterfaces[0]!.sourceDestCheck).toBe(false);
  });

  it('refuses a route to an instance in another VPC', async () => {
    const a = ec2.putInstance(makeInstance({ index: 1, vpcId: 'vpc-other' }));
    const err = await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId }).catch((e) => e);
    expect(codeOf(err)).toBe('InvalidParameterValue');
  });

  it('answers RouteLimitExceeded beyond the route limit, not counting propagated routes', async () => {
    ec2.routeLimit = 3;
    ec2.routeTables.get(TABLE)!.routes.push({
      destination: '192.168.0.0/16',
      target: { gatewayId: 'vgw-1' },
      origin: 'EnableVgwRoutePropagation',
    });
    const a = ec2.putInstance(makeInstance({ index: 1 }));
    expect(await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId })).toBe('created');

    const err = await ec2.createRoute(TABLE, '10.244.2.0/24', { instanceId: a.instanceId }).catch((e) => e);

    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('RouteLimitExceeded');
  });

  it('throttles route operations through the usual mechanism', async () => {
    ec2.throttle('DescribeRouteTables', 1);
    await expect(ec2.describeRouteTable(TABLE)).rejects.toThrow(ThrottledError);
    expect(await ec2.describeRouteTable(TABLE)).toBeDefined();
    expect(ec2.callCount('DescribeRouteTables')).toBe(2);
  });
});
