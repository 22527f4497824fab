import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import {
  CreateLoadBalancerCommand,
  CreateTargetGroupCommand,
  DescribeLoadBalancersCommand,
  DescribeSSLPoliciesCommand,
  DescribeTagsCommand,
  DescribeTargetGroupsCommand,
  ElasticLoadBalancingV2Client,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { HttpResponse } from '@smithy/protocol-http';
import { beforeEach, describe, expect, it } from 'vitest';
import { ThrottledError } from '../../../errors.ts';
import { elbv2ErrorCode } from '../../elbv2-adapter.ts';
import { AwsServiceError } from '../../errors.ts';
import { ELBV2_OPERATIONS } from './fake-elbv2.ts';
import { codeOf, elbv2World, failure, lbInput, SUBNET_A, SUBNET_B, tgInput } from './testing.ts';
import { elbv2Failure } from './wire.ts';

/** What every call of the fake ELBv2 API shares: commands, SDK shapes and errors, Marker paging, per-call limits. */
let w: ReturnType<typeof elbv2World>;
beforeEach(() => {
  w = elbv2World();
});

const networkLb = (name: string) =>
  new CreateLoadBalancerCommand({
    Name: name,
    Type: 'network',
    Scheme: 'internet-facing',
    SubnetMappings: [{ SubnetId: SUBNET_A.subnetId }, { SubnetId: SUBNET_B.subnetId }],
    SecurityGroups: ['sg-lb'],
  });
const putLoadBalancers = (count: number) =>
  Array.from({ length: count }, (_, i) => w.fake.putLoadBalancer(lbInput({ name: `lb-${i}` })));

describe('commands', () => {
  it('answers exactly the commands Elbv2Adapter sends', () => {
    const adapter = readFileSync(new URL('../../elbv2-adapter.ts', import.meta.url), 'utf8');
    const sent = new Set([...adapter.matchAll(/new (\w+)Command\(/g)].map((m) => m[1]));
    expect([...ELBV2_OPERATIONS].sort()).toEqual([...sent].sort());
  });

  it('answers the SDK output shape with its metadata, and counts each command as one call of its operation', async () => {
    const created = await w.fake.send(networkLb('web'));
    const described = await w.fake.send(new DescribeLoadBalancersCommand({ Names: ['web'] }));
    expect(created.$metadata.httpStatusCode).toBe(200);
    expect(described.LoadBalancers).toEqual([
      expect.objectContaining({
        LoadBalancerArn: created.LoadBalancers?.[0]?.LoadBalancerArn,
        LoadBalancerName: 'web',
        Type: 'network',
        State: { Code: 'provisioning' },
        IpAddressType: 'ipv4',
        AvailabilityZones: [
          { ZoneName: 'eu-west-1a', SubnetId: SUBNET_A.subnetId, LoadBalancerAddresses: [] },
          { ZoneName: 'eu-west-1b', SubnetId: SUBNET_B.subnetId, LoadBalancerAddresses: [] },
        ],
        CreatedTime: expect.any(Date),
      }),
    ]);
    expect(w.fake.calls).toEqual(
      new Map([
        ['CreateLoadBalancer', 1],
        ['DescribeLoadBalancers', 1],
      ]),
    );
  });

  it('refuses, as a test failure and not as an ELBv2 error, a command, a field or a kind of resource it does not model', async () => {
    const unknownCommand = await failure(w.fake.send(new DescribeSSLPoliciesCommand({}) as never));
    const unknownField = await failure(
      w.fake.send(new DescribeTargetGroupsCommand({ Names: ['x'], Include: [] } as never)),
    );
    const application = await failure(
      w.fake.send(new CreateLoadBalancerCommand({ Name: 'gwlb', Type: 'gateway', Subnets: ['s'] })),
    );
    for (const err of [unknownCommand, unknownField, application]) expect(err).not.toHaveProperty('$metadata');
    expect(unknownCommand.message).toBe('FakeElbv2 does not implement DescribeSSLPolicies');
    expect(unknownField.message).toBe('FakeElbv2 does not model DescribeTargetGroups with Include');
    expect(application.message).toBe('FakeElbv2 does not model load balancers of type gateway');
  });

  it('answers from its own copies: changing a request or an answer changes nothing in the account', async () => {
    const command = networkLb('web');
    const created = await w.fake.send(command);
    created.LoadBalancers?.[0]?.SecurityGroups?.push('sg-other');
    command.input.SecurityGroups?.push('sg-other');
    expect(w.fake.loadBalancerNamed('web')?.securityGroups).toEqual(['sg-lb']);
  });
});

/** An ELBv2 error answer as AWS sends it, parsed by the real SDK client. */
async function sdkParsed(code: string, message: string, status = 400): Promise<Error> {
  const body = `<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">
  <Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error>
  <RequestId>r-1</RequestId>
</ErrorResponse>`;
  const client = new ElasticLoadBalancingV2Client({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
    maxAttempts: 1,
    requestHandler: {
      handle: async () => ({
        response: new HttpResponse({
          statusCode: status,
          headers: { 'content-type': 'text/xml' },
          body: Readable.from([Buffer.from(body)]),
        }),
      }),
    },
  });
  return failure(client.send(new DescribeLoadBalancersCommand({ Names: ['web'] })));
}

const shape = (err: Error) => {
  const e = err as Error & { Code?: string; Type?: string; $fault?: string; $metadata?: { httpStatusCode?: number } };
  return {
    class: e.constructor.name,
    name: e.name,
    Code: e.Code,
    Type: e.Type,
    $fault: e.$fault,
    message: e.message,
    status: e.$metadata?.httpStatusCode,
    wireCode: elbv2ErrorCode(e),
  };
};

describe('errors, as the SDK raises them', () => {
  it.each([
    ['a modeled error', 'LoadBalancerNotFound', 'LoadBalancerNotFoundException'],
    ['a modeled error whose class is named otherwise', 'ALPNPolicyNotFound', 'ALPNPolicyNotSupportedException'],
    ['an error the model does not list', 'ValidationError', 'ValidationError'],
    ['throttling', 'Throttling', 'Throttling'],
  ])(
    '%s: the same class, name, Code, Type, fault, message and HTTP status as the SDK parsing the answer',
    async (_, code, name) => {
      const sdk = shape(await sdkParsed(code, 'it went wrong'));
      expect(shape(elbv2Failure(code, 'it went wrong'))).toEqual(sdk);
      expect(sdk).toMatchObject({ name, Code: code, wireCode: code, status: 400, $fault: 'client' });
    },
  );

  it('throttles with Throttling (HTTP 400), which the adapter turns into a ThrottledError', async () => {
    w.fake.throttle('DescribeLoadBalancers', 2);
    const raw = await failure(w.fake.send(new DescribeLoadBalancersCommand({})));
    const throttled = await failure(w.elb.findLoadBalancer('web'));
    expect(shape(raw)).toEqual(shape(elbv2Failure('Throttling', 'Rate exceeded')));
    expect(throttled).toBeInstanceOf(ThrottledError);
    expect(codeOf(throttled)).toBe('Throttling');
    expect(await w.elb.findLoadBalancer('web')).toBeUndefined();
  });

  it('plays queued errors in order, counting each call', async () => {
    w.fake.queueError('DescribeLoadBalancers', new AwsServiceError('InternalFailure', 'oops', 500));
    expect(codeOf(await failure(w.elb.listLoadBalancers()))).toBe('InternalFailure');
    expect(await w.elb.listLoadBalancers()).toEqual([]);
    expect(w.fake.callCount('DescribeLoadBalancers')).toBe(2);
  });
});

describe('paging (Marker, PageSize)', () => {
  it('pages by PageSize (400 at most and when not given) until no NextMarker is left', async () => {
    const names = putLoadBalancers(450).map((lb) => lb.name);
    const first = await w.fake.send(new DescribeLoadBalancersCommand({ PageSize: 400 }));
    const second = await w.fake.send(new DescribeLoadBalancersCommand({ PageSize: 400, Marker: first.NextMarker }));
    const unsized = await w.fake.send(new DescribeLoadBalancersCommand({}));
    expect([first.LoadBalancers?.length, second.LoadBalancers?.length, second.NextMarker]).toEqual([
      400,
      50,
      undefined,
    ]);
    expect([...(first.LoadBalancers ?? []), ...(second.LoadBalancers ?? [])].map((lb) => lb.LoadBalancerName)).toEqual(
      names,
    );
    expect(unsized.LoadBalancers).toHaveLength(400);
    expect(unsized.NextMarker).toBeDefined();
  });

  it('the adapter reads every page: 450 load balancers take two calls', async () => {
    putLoadBalancers(450);
    expect(await w.elb.listLoadBalancers()).toHaveLength(450);
    expect(w.fake.callCount('DescribeLoadBalancers')).toBe(2);
  });

  it('refuses a PageSize outside 1-400 and a Marker not issued for this very request (ValidationError)', async () => {
    putLoadBalancers(3);
    const first = await w.fake.send(new DescribeLoadBalancersCommand({ PageSize: 2 }));
    const errors = [
      await failure(w.fake.send(new DescribeLoadBalancersCommand({ PageSize: 0 }))),
      await failure(w.fake.send(new DescribeLoadBalancersCommand({ PageSize: 401 }))),
      await failure(w.fake.send(new DescribeTargetGroupsCommand({ PageSize: 2, Marker: first.NextMarker }))),
      await failure(w.fake.send(new DescribeLoadBalancersCommand({ PageSize: 2, Marker: 'made-up' }))),
    ];
    expect(errors.map((e) => e.name)).toEqual(Array(4).fill('ValidationError'));
  });
});

describe('lookups by name fail the whole call when one name is unknown', () => {
  it('DescribeLoadBalancers by names: LoadBalancerNotFound naming the unknown ones; the adapter finds none', async () => {
    await w.lb();
    const err = await failure(w.fake.send(new DescribeLoadBalancersCommand({ Names: ['web', 'nope'] })));
    expect([elbv2ErrorCode(err), err.message]).toEqual(['LoadBalancerNotFound', "Load balancers '[nope]' not found"]);
    w.fake.resetCalls();
    expect(await w.elb.findLoadBalancer('nope')).toBeUndefined();
    expect(w.fake.callCount('DescribeLoadBalancers')).toBe(1);
  });

  it('DescribeTargetGroups by names: TargetGroupNotFound for the call; the adapter then asks name by name', async () => {
    for (const name of ['one', 'three']) await w.group({ name });
    const err = await failure(w.fake.send(new DescribeTargetGroupsCommand({ Names: ['one', 'two'] })));
    expect(elbv2ErrorCode(err)).toBe('TargetGroupNotFound');
    w.fake.resetCalls();
    expect((await w.elb.findTargetGroups(['one', 'two', 'three'])).map((g) => g.name)).toEqual(['one', 'three']);
    expect(w.fake.callCount('DescribeTargetGroups')).toBe(1 + 3);
  });

  it('takes 20 names a call (ValidationError beyond); the adapter asks 20 at a time', async () => {
    const names = Array.from({ length: 45 }, (_, i) => `tg-${i}`);
    for (const name of names) await w.group({ name });
    const err = await failure(w.fake.send(new DescribeTargetGroupsCommand({ Names: names.slice(0, 21) })));
    expect([err.name, err.message]).toEqual([
      'ValidationError',
      "You cannot describe more than '20' target groups at a time",
    ]);
    w.fake.resetCalls();
    expect(await w.elb.findTargetGroups(names)).toHaveLength(45);
    expect(w.fake.callCount('DescribeTargetGroups')).toBe(3);
  });
});

describe('DescribeTags', () => {
  it('takes 20 ARNs a call (ValidationError beyond); the adapter asks 20 at a time', async () => {
    const arns = putLoadBalancers(45).map((lb) => lb.arn);
    const err = await failure(w.fake.send(new DescribeTagsCommand({ ResourceArns: arns.slice(0, 21) })));
    expect(err.name).toBe('ValidationError');
    w.fake.resetCalls();
    expect((await w.elb.describeTags(arns)).size).toBe(45);
    expect(w.fake.callCount('DescribeTags')).toBe(3);
  });

  it.each([
    ['a load balancer', 'LoadBalancerNotFound', 'loadbalancer/net/gone/0123456789abcdef'],
    ['a target group', 'TargetGroupNotFound', 'targetgroup/gone/0123456789abcdef'],
    ['a listener', 'ListenerNotFound', 'listener/net/gone/0123456789abcdef/0123456789abcdef'],
  ])('one unknown ARN of %s fails the call with %s; the adapter then asks ARN by ARN', async (_, code, resource) => {
    const { lb, group } = await w.lbWithGroup();
    const gone = `arn:aws:elasticloadbalancing:eu-west-1:111122223333:${resource}`;
    const err = await failure(w.fake.send(new DescribeTagsCommand({ ResourceArns: [lb.arn, gone] })));
    expect(elbv2ErrorCode(err)).toBe(code);
    w.fake.resetCalls();
    const tags = await w.elb.describeTags([lb.arn, gone, group.arn]);
    expect([...tags.keys()]).toEqual([lb.arn, group.arn]);
    expect(w.fake.callCount('DescribeTags')).toBe(1 + 3);
  });
});

describe('idempotent creates, on the wire', () => {
  it('CreateLoadBalancer and CreateTargetGroup with the same settings answer the existing resource', async () => {
    const lb = await w.fake.send(networkLb('web'));
    const again = await w.fake.send(networkLb('web'));
    const group = new CreateTargetGroupCommand({
      Name: 'web-80',
      Protocol: 'TCP',
      Port: 30080,
      VpcId: tgInput().vpcId,
      TargetType: 'instance',
    });
    const tg = await w.fake.send(group);
    const tgAgain = await w.fake.send(group);
    expect(again.LoadBalancers?.[0]?.LoadBalancerArn).toBe(lb.LoadBalancers?.[0]?.LoadBalancerArn);
    expect(tgAgain.TargetGroups?.[0]?.TargetGroupArn).toBe(tg.TargetGroups?.[0]?.TargetGroupArn);
    expect([w.fake.loadBalancers.size, w.fake.targetGroups.size]).toEqual([1, 1]);
  });

  it('a target group created without a health check gets the API defaults for a Network Load Balancer', async () => {
    const created = await w.fake.send(
      new CreateTargetGroupCommand({ Name: 'bare', Protocol: 'TCP', Port: 30080, VpcId: tgInput().vpcId }),
    );
    expect(created.TargetGroups?.[0]).toMatchObject({
      TargetType: 'instance',
      HealthCheckProtocol: 'TCP',
      HealthCheckPort: 'traffic-port',
      HealthCheckIntervalSeconds: 30,
      HealthCheckTimeoutSeconds: 10,
      HealthyThresholdCount: 5,
      UnhealthyThresholdCount: 2,
    });
  });
});
