import { readFileSync } from 'node:fs';
import {
  DescribeInstancesCommand,
  DescribeRegionsCommand,
  DescribeSecurityGroupsCommand,
  DescribeSubnetsCommand,
} from '@aws-sdk/client-ec2';
import { beforeEach, describe, expect, it } from 'vitest';
import { Ec2Adapter } from '../../ec2-adapter.ts';
import { AwsServiceError } from '../../errors.ts';
import { EC2_OPERATIONS, FakeEc2, makeInstance, makeSubnet } from './fake-ec2.ts';

/** What every call of the fake EC2 API shares: commands, paging, filters, errors. */
let fake: FakeEc2;
beforeEach(() => {
  fake = new FakeEc2();
});

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
}
const putInstances = (count: number) =>
  Array.from({ length: count }, (_, i) => fake.putInstance(makeInstance({ index: 1 + i })));
const byState = { Name: 'instance-state-name', Values: ['running'] };
const idsOf = (page: { Reservations?: { Instances?: { InstanceId?: string }[] }[] }) =>
  (page.Reservations ?? []).flatMap((r) => (r.Instances ?? []).map((i) => i.InstanceId));

describe('commands', () => {
  it('answers exactly the commands Ec2Adapter sends', () => {
    const adapter = readFileSync(new URL('../../ec2-adapter.ts', import.meta.url), 'utf8');
    const sent = new Set([...adapter.matchAll(/new (\w+)Command\(/g)].map((m) => m[1]));
    expect([...EC2_OPERATIONS].sort()).toEqual([...sent].sort());
  });

  it('answers the SDK output shape with its metadata, and counts each command as one call of its operation', async () => {
    const [a] = putInstances(1);
    const output = await fake.send(new DescribeInstancesCommand({ InstanceIds: [a!.instanceId] }));
    expect(output.$metadata.httpStatusCode).toBe(200);
    expect(output.Reservations?.[0]?.Instances?.[0]).toMatchObject({
      InstanceId: a!.instanceId,
      State: { Name: 'running', Code: 16 },
      Placement: { AvailabilityZone: 'eu-west-1a' },
      PublicDnsName: '',
    });
    expect(fake.calls).toEqual(new Map([['DescribeInstances', 1]]));
  });

  it('refuses, as a test failure and not as an EC2 error, a command or a request field it does not model', async () => {
    const unknownCommand = await failure(fake.send(new DescribeRegionsCommand({}) as never));
    const unknownField = await failure(fake.send(new DescribeInstancesCommand({ DryRun: true })));
    for (const err of [unknownCommand, unknownField]) expect(err).not.toBeInstanceOf(AwsServiceError);
    expect(unknownCommand.message).toBe('FakeEc2 does not implement DescribeRegions');
    expect(unknownField.message).toBe('FakeEc2 does not model DescribeInstances with DryRun');
  });

  it('answers from its own copies: changing a request or an answer changes nothing in the account', async () => {
    const [a] = putInstances(1);
    const output = await fake.send(new DescribeInstancesCommand({ InstanceIds: [a!.instanceId] }));
    output.Reservations![0]!.Instances![0]!.Tags!.push({ Key: 'x', Value: 'y' });
    expect(fake.instances.get(a!.instanceId)!.tags).toEqual(a!.tags);
  });

  it('throws errors shaped as the SDK raises them: EC2 code as name, HTTP status, client or server fault', async () => {
    fake.throttle('DescribeInstances', 1);
    fake.queueError('DescribeInstances', new AwsServiceError('InternalError', 'An internal error has occurred', 500));
    const throttled = (await failure(fake.send(new DescribeInstancesCommand({})))) as AwsServiceError;
    const internal = (await failure(fake.send(new DescribeInstancesCommand({})))) as AwsServiceError;
    const unknown = (await failure(
      fake.send(new DescribeInstancesCommand({ InstanceIds: ['i-0000000000000dead'] })),
    )) as AwsServiceError;
    expect([throttled.name, throttled.$metadata.httpStatusCode, throttled.$fault]).toEqual([
      'RequestLimitExceeded',
      503,
      'server',
    ]);
    expect([internal.name, internal.$metadata.httpStatusCode]).toEqual(['InternalError', 500]);
    expect([unknown.name, unknown.$metadata.httpStatusCode, unknown.$fault]).toEqual([
      'InvalidInstanceID.NotFound',
      400,
      'client',
    ]);
    expect(fake.callCount('DescribeInstances')).toBe(3);
  });
});

describe('paging (NextToken, MaxResults)', () => {
  it('pages filtered calls by MaxResults until no NextToken is left; without MaxResults one page holds all', async () => {
    const ids = putInstances(12).map((i) => i.instanceId);
    const pages = [];
    let NextToken: string | undefined;
    do {
      const page = await fake.send(new DescribeInstancesCommand({ Filters: [byState], MaxResults: 5, NextToken }));
      pages.push(idsOf(page));
      NextToken = page.NextToken;
    } while (NextToken);
    expect(pages.map((p) => p.length)).toEqual([5, 5, 2]);
    expect(pages.flat()).toEqual(ids);
    const all = await fake.send(new DescribeInstancesCommand({ Filters: [byState] }));
    expect([idsOf(all).length, all.NextToken]).toEqual([12, undefined]);
  });

  it('refuses MaxResults outside the operation range and tokens it did not issue for this very request', async () => {
    putInstances(6);
    const small = await failure(fake.send(new DescribeInstancesCommand({ Filters: [byState], MaxResults: 4 })));
    const first = await fake.send(new DescribeInstancesCommand({ Filters: [byState], MaxResults: 5 }));
    const otherRequest = await failure(
      fake.send(new DescribeInstancesCommand({ MaxResults: 5, NextToken: first.NextToken })),
    );
    const made = await failure(fake.send(new DescribeInstancesCommand({ Filters: [byState], NextToken: 'abc' })));
    expect([small.name, otherRequest.name, made.name]).toEqual([
      'InvalidParameterValue',
      'InvalidPaginationToken',
      'InvalidPaginationToken',
    ]);
  });

  it('the adapter reads every page: 1001 subnets and 1001 security groups take two calls each', async () => {
    for (let i = 1; i <= 1001; i++) fake.putSubnet(makeSubnet({ index: i }));
    for (let i = 1; i <= 1001; i++) {
      fake.putSecurityGroup({
        groupId: `sg-${i}`,
        groupName: `g${i}`,
        vpcId: 'vpc-0a1b2c3d',
        description: '',
        tags: {},
        ingress: [],
      });
    }
    const ec2 = new Ec2Adapter(fake);
    expect(await ec2.describeSubnets({ vpcId: 'vpc-0a1b2c3d' })).toHaveLength(1001);
    expect(await ec2.findSecurityGroups({ vpcId: 'vpc-0a1b2c3d' })).toHaveLength(1001);
    expect([fake.callCount('DescribeSubnets'), fake.callCount('DescribeSecurityGroups')]).toEqual([2, 2]);
  });
});

describe('filters', () => {
  it('ANDs filters, ORs the values of one, and knows tag:<key>, tag-key, tag-value and wildcards', async () => {
    fake.putSubnet(makeSubnet({ index: 1, tags: { Name: 'public-a', role: 'elb' } }));
    fake.putSubnet(makeSubnet({ index: 2, tags: { Name: 'public-b' } }));
    fake.putSubnet(makeSubnet({ index: 3, vpcId: 'vpc-other', tags: { Name: 'private-a', role: 'elb' } }));
    const ids = async (...Filters: { Name: string; Values: string[] }[]) =>
      ((await fake.send(new DescribeSubnetsCommand({ Filters }))).Subnets ?? []).map((s) => s.CidrBlock);

    expect(await ids({ Name: 'tag:Name', Values: ['public-a', 'private-a'] })).toEqual(['10.0.1.0/24', '10.0.3.0/24']);
    expect(await ids({ Name: 'tag-key', Values: ['role'] }, { Name: 'vpc-id', Values: ['vpc-0a1b2c3d'] })).toEqual([
      '10.0.1.0/24',
    ]);
    expect(await ids({ Name: 'tag-value', Values: ['elb'] })).toEqual(['10.0.1.0/24', '10.0.3.0/24']);
    expect(await ids({ Name: 'tag:Name', Values: ['public-*'] })).toEqual(['10.0.1.0/24', '10.0.2.0/24']);
    expect(await ids({ Name: 'tag:Name', Values: ['public-?'] })).toEqual(['10.0.1.0/24', '10.0.2.0/24']);
    expect(await ids({ Name: 'tag:Name', Values: ['Public-a'] })).toEqual([]);
  });

  it('refuses a filter the operation does not define', async () => {
    const err = await failure(
      fake.send(new DescribeSecurityGroupsCommand({ Filters: [{ Name: 'group', Values: ['x'] }] })),
    );
    expect([err.name, err.message]).toEqual(['InvalidParameterValue', "The filter 'group' is invalid"]);
  });
});
