import {
  AccessPointNotFoundException,
  CreateLoadBalancerPolicyCommand,
  DeleteLoadBalancerPolicyCommand,
  DescribeInstanceHealthCommand,
  DescribeLoadBalancerAttributesCommand,
  DescribeLoadBalancerPoliciesCommand,
  DescribeTagsCommand,
  DuplicateAccessPointNameException,
  DuplicatePolicyNameException,
  ElasticLoadBalancingClient,
  InvalidConfigurationRequestException,
  InvalidEndPointException,
  ModifyLoadBalancerAttributesCommand,
  RegisterInstancesWithLoadBalancerCommand,
  TooManyAccessPointsException,
} from '@aws-sdk/client-elastic-load-balancing';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { ElbAdapter } from './elb-adapter.ts';
import { CLASSIC_ATTRIBUTE_DEFAULTS } from './elb-defaults.ts';
import { classicErrorCode } from './elb-errors.ts';
import { AwsServiceError } from './errors.ts';

const client = new ElasticLoadBalancingClient({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
});
const elb = mockClient(client);
const adapter = new ElbAdapter(client);

/** An error as the SDK throws it for the query protocol: its modelled class name, the wire code in `Code`. */
function sdkError(name: string, code: string, status = 400): Error {
  return Object.assign(new AwsServiceError(name, code, status), { Code: code });
}
const notFound = () => sdkError('AccessPointNotFoundException', 'LoadBalancerNotFound');
const meta = { $metadata: {} };
const inputs = <T>(command: T) =>
  elb.commandCalls(command as Parameters<typeof elb.commandCalls>[0]).map((c) => c.args[0].input);

beforeEach(() => {
  elb.reset();
});

describe('ElbAdapter attributes', () => {
  it('reads the four attributes, with the API defaults for any left out', async () => {
    elb
      .on(DescribeLoadBalancerAttributesCommand)
      .resolvesOnce({
        LoadBalancerAttributes: {
          CrossZoneLoadBalancing: { Enabled: true },
          ConnectionSettings: { IdleTimeout: 120 },
          ConnectionDraining: { Enabled: true, Timeout: 30 },
          AccessLog: { Enabled: true, S3BucketName: 'logs', S3BucketPrefix: 'web', EmitInterval: 5 },
        },
      })
      .resolvesOnce({ LoadBalancerAttributes: {} });
    expect(await adapter.describeAttributes('web')).toEqual({
      crossZone: true,
      idleTimeoutSeconds: 120,
      connectionDraining: { enabled: true, timeoutSeconds: 30 },
      accessLog: { enabled: true, s3BucketName: 'logs', s3BucketPrefix: 'web', emitIntervalMinutes: 5 },
    });
    expect(await adapter.describeAttributes('web')).toEqual(CLASSIC_ATTRIBUTE_DEFAULTS);
    expect(inputs(DescribeLoadBalancerAttributesCommand)).toEqual([
      { LoadBalancerName: 'web' },
      { LoadBalancerName: 'web' },
    ]);
  });

  it('writes all four; a disabled access log is Enabled false alone', async () => {
    elb.on(ModifyLoadBalancerAttributesCommand).resolves({});
    await adapter.modifyAttributes('web', {
      crossZone: true,
      idleTimeoutSeconds: 300,
      connectionDraining: { enabled: true, timeoutSeconds: 60 },
      accessLog: { enabled: false, s3BucketName: 'stale' },
    });
    await adapter.modifyAttributes('web', {
      ...CLASSIC_ATTRIBUTE_DEFAULTS,
      accessLog: { enabled: true, s3BucketName: 'logs', emitIntervalMinutes: 60 },
    });
    expect(inputs(ModifyLoadBalancerAttributesCommand)).toEqual([
      {
        LoadBalancerName: 'web',
        LoadBalancerAttributes: {
          CrossZoneLoadBalancing: { Enabled: true },
          ConnectionSettings: { IdleTimeout: 300 },
          ConnectionDraining: { Enabled: true, Timeout: 60 },
          AccessLog: { Enabled: false },
        },
      },
      {
        LoadBalancerName: 'web',
        LoadBalancerAttributes: {
          CrossZoneLoadBalancing: { Enabled: false },
          ConnectionSettings: { IdleTimeout: 60 },
          ConnectionDraining: { Enabled: false, Timeout: 300 },
          AccessLog: { Enabled: true, S3BucketName: 'logs', EmitInterval: 60 },
        },
      },
    ]);
  });
});

describe('ElbAdapter tags, policies and instance health', () => {
  it('asks for tags 20 names a call; a call failing on one deleted load balancer is asked name by name', async () => {
    const names = Array.from({ length: 45 }, (_, i) => `lb-${i}`);
    const tagged = (chunk: string[]) => ({
      TagDescriptions: chunk.map((LoadBalancerName) => ({
        LoadBalancerName,
        Tags: [{ Key: 'k', Value: LoadBalancerName }],
      })),
    });
    elb.on(DescribeTagsCommand).callsFake((input: { LoadBalancerNames: string[] }) => {
      if (input.LoadBalancerNames.includes('lb-21')) throw notFound();
      return tagged(input.LoadBalancerNames);
    });
    const tags = await adapter.describeTags([...names, 'lb-0']);
    expect(tags.size).toBe(44);
    expect(tags.get('lb-7')).toEqual({ k: 'lb-7' });
    expect(tags.has('lb-21')).toBe(false);
    const calls = inputs(DescribeTagsCommand) as { LoadBalancerNames: string[] }[];
    // 20, then 20 that failed on lb-21 and were asked one at a time, then the last 5.
    expect(calls.map((c) => c.LoadBalancerNames.length)).toEqual([20, 20, ...Array(20).fill(1), 5]);
    expect(calls.at(-1)?.LoadBalancerNames).toEqual(['lb-40', 'lb-41', 'lb-42', 'lb-43', 'lb-44']);
  });

  it('creates policies (an existing name is success) and deletes them (a missing one too)', async () => {
    elb
      .on(CreateLoadBalancerPolicyCommand)
      .resolvesOnce({})
      .rejectsOnce(new DuplicatePolicyNameException({ message: 'exists', ...meta }));
    elb
      .on(DeleteLoadBalancerPolicyCommand)
      .rejectsOnce(sdkError('PolicyNotFoundException', 'PolicyNotFound'))
      .rejectsOnce(new InvalidConfigurationRequestException({ message: 'in use', $metadata: { httpStatusCode: 409 } }));
    const policy = {
      policyName: 'web-proxy',
      policyTypeName: 'ProxyProtocolPolicyType',
      attributes: { ProxyProtocol: 'true' },
    };
    await adapter.createPolicy('web', policy);
    await adapter.createPolicy('web', policy);
    await adapter.deletePolicy('web', 'web-proxy');
    await expect(adapter.deletePolicy('web', 'web-proxy')).rejects.toBeInstanceOf(TerminalError);
    expect(inputs(CreateLoadBalancerPolicyCommand)[0]).toEqual({
      LoadBalancerName: 'web',
      PolicyName: 'web-proxy',
      PolicyTypeName: 'ProxyProtocolPolicyType',
      PolicyAttributes: [{ AttributeName: 'ProxyProtocol', AttributeValue: 'true' }],
    });
    expect(inputs(DeleteLoadBalancerPolicyCommand)[0]).toEqual({ LoadBalancerName: 'web', PolicyName: 'web-proxy' });
  });

  it('reads the load balancer own policies and instance states', async () => {
    elb.on(DescribeLoadBalancerPoliciesCommand).resolves({
      PolicyDescriptions: [
        {
          PolicyName: 'web-ssl',
          PolicyTypeName: 'SSLNegotiationPolicyType',
          PolicyAttributeDescriptions: [
            { AttributeName: 'Reference-Security-Policy', AttributeValue: 'ELBSecurityPolicy-TLS-1-2-2017-01' },
          ],
        },
      ],
    });
    elb.on(DescribeInstanceHealthCommand).resolves({
      InstanceStates: [
        { InstanceId: 'i-1', State: 'InService' },
        { InstanceId: 'i-2', State: 'OutOfService', ReasonCode: 'ELB' },
        { InstanceId: 'i-3', State: 'Unknown' },
        { State: 'InService' },
      ],
    });
    expect(await adapter.describePolicies('web')).toEqual([
      {
        policyName: 'web-ssl',
        policyTypeName: 'SSLNegotiationPolicyType',
        attributes: { 'Reference-Security-Policy': 'ELBSecurityPolicy-TLS-1-2-2017-01' },
      },
    ]);
    expect(await adapter.describeInstanceHealth('web')).toEqual([
      { instanceId: 'i-1', state: 'InService' },
      { instanceId: 'i-2', state: 'OutOfService' },
      { instanceId: 'i-3', state: 'Unknown' },
    ]);
    expect(inputs(DescribeLoadBalancerPoliciesCommand)).toEqual([{ LoadBalancerName: 'web' }]);
    expect(inputs(DescribeInstanceHealthCommand)).toEqual([{ LoadBalancerName: 'web' }]);
  });
});

describe('ElbAdapter errors', () => {
  it.each([
    [new AccessPointNotFoundException({ message: 'x', ...meta }), 'LoadBalancerNotFound'],
    [new DuplicateAccessPointNameException({ message: 'x', ...meta }), 'DuplicateLoadBalancerName'],
    [new InvalidEndPointException({ message: 'x', ...meta }), 'InvalidInstance'],
    [new TooManyAccessPointsException({ message: 'x', ...meta }), 'TooManyLoadBalancers'],
    [new DuplicatePolicyNameException({ message: 'x', ...meta }), 'DuplicatePolicyName'],
    [sdkError('AccessPointNotFoundException', 'LoadBalancerNotFound'), 'LoadBalancerNotFound'],
  ])('%o has the wire code %s', (err, code) => {
    expect(classicErrorCode(err)).toBe(code);
  });

  it.each([
    [sdkError('Throttling', 'Throttling'), ThrottledError],
    [sdkError('DependencyThrottleException', 'DependencyThrottle'), ThrottledError],
    [sdkError('InvalidConfigurationRequestException', 'InvalidConfigurationRequest', 409), TerminalError],
    [new InvalidEndPointException({ message: 'terminated', ...meta }), TerminalError],
    [sdkError('ServiceUnavailable', 'ServiceUnavailable', 503), RetryableError],
  ])('%o is a %o, naming the wire code', async (err, kind) => {
    elb.on(RegisterInstancesWithLoadBalancerCommand).rejects(err);
    const failure = await adapter.registerInstances('web', ['i-1']).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(kind);
    expect((failure as Error).message).toMatch(`registering 1 instances with web: ${classicErrorCode(err)}`);
  });
});
