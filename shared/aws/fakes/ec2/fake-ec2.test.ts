import { CreateRouteCommand, DeleteRouteCommand, ReplaceRouteCommand } from '@aws-sdk/client-ec2';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../../../errors.ts';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import { AwsServiceError, awsErrorCode } from '../../errors.ts';
import { FakeEc2, makeInstance, makeRouteTable } from './fake-ec2.ts';

/** The fake EC2 API behind the real adapter: the port as the reconcilers use it, on EC2's semantics. */
const TABLE = 'rtb-0123456789abcdef0';
let fake: FakeEc2;
let ec2: Ec2Adapter;
beforeEach(() => {
  fake = new FakeEc2();
  ec2 = new Ec2Adapter(fake);
  fake.putRouteTable(makeRouteTable());
});

/** The EC2 error code behind an adapter's controller error. */
const codeOf = (err: unknown) => awsErrorCode((err as Error).cause);
/** The error a call fails with; a call that succeeds fails the test. */
async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
}

describe('FakeEc2 route tables, through Ec2Adapter', () => {
  it('records instance and interface for a route to either, and counts each command sent', async () => {
    const a = fake.putInstance(makeInstance({ index: 1 }));
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
    expect(fake.callCount('CreateRoute')).toBe(2);
    expect(fake.callCount('DescribeRouteTables')).toBe(1);
    expect(fake.writeCallCount()).toBe(2);
  });

  it('turns a route to a terminated instance into a blackhole', async () => {
    const a = fake.putInstance(makeInstance({ index: 1 }));
    await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId });
    fake.setState(a.instanceId, 'terminated');

    const route = (await ec2.describeRouteTable(TABLE))?.routes.find((r) => r.destination === '10.244.1.0/24');
    expect(route?.state).toBe('blackhole');
    expect(route?.target.instanceId).toBeUndefined();
    expect(fake.routesOf(TABLE).find((r) => r.destination === '10.244.1.0/24')).toEqual(route);
  });

  it('finds tables by tag key or exact tag; a well-formed unknown ID is absent', async () => {
    fake.putRouteTable(makeRouteTable({ routeTableId: 'rtb-2', clusterName: '', tags: { KubernetesCluster: 'x' } }));
    expect(
      (await ec2.findRouteTablesByTag({ key: 'kubernetes.io/cluster/test-cluster' })).map((t) => t.routeTableId),
    ).toEqual([TABLE]);
    expect(
      (await ec2.findRouteTablesByTag({ key: 'KubernetesCluster', value: 'x' })).map((t) => t.routeTableId),
    ).toEqual(['rtb-2']);
    expect(await ec2.findRouteTablesByTag({ key: 'KubernetesCluster', value: 'y' })).toEqual([]);
    expect(await ec2.describeRouteTable('rtb-00000000')).toBeUndefined();
  });

  it('a malformed table ID is an error, not an absent table (InvalidRouteTableId.Malformed)', async () => {
    const err = await failure(ec2.describeRouteTable('rtb-unknown'));
    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('InvalidRouteTableId.Malformed');
  });

  it('answers with the outcomes and error codes EC2 gives', async () => {
    const a = fake.putInstance(makeInstance({ index: 1 }));
    await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId });

    expect(await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId })).toBe('already-exists');
    expect(await ec2.replaceRoute(TABLE, '10.244.9.0/24', { instanceId: a.instanceId })).toBe('not-found');
    expect(await ec2.deleteRoute(TABLE, '10.244.9.0/24')).toBe('not-found');
    expect(await ec2.deleteRoute(TABLE, '10.244.1.0/24')).toBe('deleted');

    const unknownTable = await failure(ec2.createRoute('rtb-00000009', '10.244.1.0/24', { instanceId: a.instanceId }));
    expect(unknownTable).toBeInstanceOf(RetryableError);
    expect(codeOf(unknownTable)).toBe('InvalidRouteTableID.NotFound');
    expect(codeOf(await failure(ec2.deleteRoute(TABLE, '10.0.0.0/16')))).toBe('InvalidParameterValue');
    const gone = await failure(ec2.createRoute(TABLE, '10.244.2.0/24', { instanceId: 'i-0000000000000dead' }));
    expect(codeOf(gone)).toBe('InvalidInstanceID.NotFound');
  });

  it('states the missing route as EC2 does: ReplaceRoute InvalidParameterValue, DeleteRoute InvalidRoute.NotFound', async () => {
    const a = fake.putInstance(makeInstance({ index: 1 }));
    const replace = await failure(
      fake.send(
        new ReplaceRouteCommand({ RouteTableId: TABLE, DestinationCidrBlock: '10.9.0.0/24', InstanceId: a.instanceId }),
      ),
    );
    const remove = await failure(
      fake.send(new DeleteRouteCommand({ RouteTableId: TABLE, DestinationIpv6CidrBlock: 'fd00::/64' })),
    );
    expect([replace.name, remove.name]).toEqual(['InvalidParameterValue', 'InvalidRoute.NotFound']);
    expect(replace.message).toMatch(/no route defined for '10\.9\.0\.0\/24'/);
    expect(remove).toBeInstanceOf(AwsServiceError);
  });

  it('takes each address family in its own field only, and exactly one target', async () => {
    const a = fake.putInstance(makeInstance({ index: 1 }));
    const v6InV4 = await failure(
      fake.send(
        new CreateRouteCommand({ RouteTableId: TABLE, DestinationCidrBlock: 'fd00::/64', InstanceId: a.instanceId }),
      ),
    );
    const twoTargets = await failure(
      fake.send(
        new CreateRouteCommand({
          RouteTableId: TABLE,
          DestinationCidrBlock: '10.244.1.0/24',
          InstanceId: a.instanceId,
          NetworkInterfaceId: a.networkInterfaces[0]!.networkInterfaceId,
        }),
      ),
    );
    expect([v6InV4.name, twoTargets.name]).toEqual(['InvalidParameterValue', 'InvalidParameterCombination']);
    expect(fake.routesOf(TABLE)).toHaveLength(2);
  });

  it('refuses instance-wide operations on a multi-interface instance, as EC2 does', async () => {
    const base = makeInstance({ index: 1 });
    const multi = fake.putInstance({
      ...base,
      networkInterfaces: [
        base.networkInterfaces[0]!,
        { ...base.networkInterfaces[0]!, networkInterfaceId: 'eni-2', deviceIndex: 1 },
      ],
    });

    const route = await failure(ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: multi.instanceId }));
    const check = await failure(ec2.modifyInstanceSourceDestCheck(multi.instanceId, false));

    for (const err of [route, check]) {
      expect(err).toBeInstanceOf(TerminalError);
      expect(codeOf(err)).toBe('InvalidInstanceID');
    }
    await ec2.modifyNetworkInterfaceSourceDestCheck(base.networkInterfaces[0]!.networkInterfaceId, false);
    expect(fake.instances.get(multi.instanceId)!.sourceDestCheck).toBe(false);
    expect(fake.instances.get(multi.instanceId)!.networkInterfaces[0]!.sourceDestCheck).toBe(false);
    const unknownEni = await failure(ec2.modifyNetworkInterfaceSourceDestCheck('eni-0000000000000dead', false));
    expect(codeOf(unknownEni)).toBe('InvalidNetworkInterfaceID.NotFound');
  });

  it('refuses a route to an instance in another VPC', async () => {
    const a = fake.putInstance(makeInstance({ index: 1, vpcId: 'vpc-other' }));
    expect(codeOf(await failure(ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId })))).toBe(
      'InvalidParameterValue',
    );
  });

  it('answers RouteLimitExceeded beyond the route limit, not counting propagated routes', async () => {
    fake.routeLimit = 3;
    fake.routeTables.get(TABLE)!.routes.push({
      destination: '192.168.0.0/16',
      target: { gatewayId: 'vgw-1' },
      origin: 'EnableVgwRoutePropagation',
    });
    const a = fake.putInstance(makeInstance({ index: 1 }));
    expect(await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId })).toBe('created');

    const err = await failure(ec2.createRoute(TABLE, '10.244.2.0/24', { instanceId: a.instanceId }));

    expect(err).toBeInstanceOf(TerminalError);
    expect(codeOf(err)).toBe('RouteLimitExceeded');
  });

  it('throttles with RequestLimitExceeded (HTTP 503), which the adapter makes a ThrottledError', async () => {
    fake.throttle('DescribeRouteTables', 1);
    const err = await failure(ec2.describeRouteTable(TABLE));
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err.cause as AwsServiceError).$metadata.httpStatusCode).toBe(503);
    expect(await ec2.describeRouteTable(TABLE)).toBeDefined();
    expect(fake.callCount('DescribeRouteTables')).toBe(2);
  });

  it('lets a test act between a read and a write (beforeCall), and fails queued calls with their errors', async () => {
    const a = fake.putInstance(makeInstance({ index: 1 }));
    fake.beforeCall = (operation) => {
      if (operation === 'DeleteRoute') fake.routeTables.get(TABLE)!.routes.pop();
    };
    fake.routeTables.get(TABLE)!.routes.push({
      destination: '10.244.1.0/24',
      target: { instanceId: a.instanceId },
      origin: 'CreateRoute',
    });
    expect(await ec2.deleteRoute(TABLE, '10.244.1.0/24')).toBe('not-found');

    fake.queueError('CreateRoute', new AwsServiceError('InternalError', 'An internal error has occurred', 500));
    const err = await failure(ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId }));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe(
      'creating route 10.244.1.0/24 in rtb-0123456789abcdef0: InternalError: An internal error has occurred',
    );
    expect(await ec2.createRoute(TABLE, '10.244.1.0/24', { instanceId: a.instanceId })).toBe('created');
  });
});
