import {
  AccessPointNotFoundException,
  AddTagsCommand,
  ApplySecurityGroupsToLoadBalancerCommand,
  AttachLoadBalancerToSubnetsCommand,
  ConfigureHealthCheckCommand,
  CreateLoadBalancerCommand,
  CreateLoadBalancerListenersCommand,
  DeleteLoadBalancerCommand,
  DeleteLoadBalancerListenersCommand,
  DeregisterInstancesFromLoadBalancerCommand,
  DescribeLoadBalancersCommand,
  DetachLoadBalancerFromSubnetsCommand,
  DuplicateAccessPointNameException,
  ElasticLoadBalancingClient,
  RegisterInstancesWithLoadBalancerCommand,
  RemoveTagsCommand,
  SetLoadBalancerPoliciesForBackendServerCommand,
  SetLoadBalancerPoliciesOfListenerCommand,
} from '@aws-sdk/client-elastic-load-balancing';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { ThrottledError } from '../errors.ts';
import { ElbAdapter } from './elb-adapter.ts';
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

const description = (name = 'web') => ({
  LoadBalancerName: name,
  DNSName: `${name}-1234567890.eu-west-1.elb.amazonaws.com`,
  ListenerDescriptions: [
    {
      Listener: { Protocol: 'TCP', LoadBalancerPort: 80, InstanceProtocol: 'TCP', InstancePort: 30080 },
      PolicyNames: [],
    },
    {
      Listener: {
        Protocol: 'SSL',
        LoadBalancerPort: 443,
        InstanceProtocol: 'TCP',
        InstancePort: 30443,
        SSLCertificateId: 'arn:aws:acm:eu-west-1:111122223333:certificate/abc',
      },
      PolicyNames: ['web-ssl'],
    },
  ],
  BackendServerDescriptions: [{ InstancePort: 30080, PolicyNames: ['web-proxy'] }],
  Subnets: ['subnet-a', 'subnet-b'],
  VPCId: 'vpc-1',
  Instances: [{ InstanceId: 'i-1' }, { InstanceId: 'i-2' }],
  HealthCheck: { Target: 'TCP:30080', Interval: 10, Timeout: 5, HealthyThreshold: 2, UnhealthyThreshold: 6 },
  SecurityGroups: ['sg-1'],
  Scheme: 'internal',
});

beforeEach(() => {
  elb.reset();
});

describe('ElbAdapter load balancers', () => {
  it('finds one by name, in the port shape; LoadBalancerNotFound is absence, in either form', async () => {
    elb
      .on(DescribeLoadBalancersCommand)
      .resolvesOnce({ LoadBalancerDescriptions: [description()] })
      .rejectsOnce(notFound())
      .rejectsOnce(new AccessPointNotFoundException({ message: 'gone', ...meta }));
    expect(await adapter.findLoadBalancer('web')).toEqual({
      name: 'web',
      dnsName: 'web-1234567890.eu-west-1.elb.amazonaws.com',
      scheme: 'internal',
      vpcId: 'vpc-1',
      subnets: ['subnet-a', 'subnet-b'],
      securityGroups: ['sg-1'],
      listeners: [
        { loadBalancerPort: 80, protocol: 'TCP', instancePort: 30080, instanceProtocol: 'TCP', policyNames: [] },
        {
          loadBalancerPort: 443,
          protocol: 'SSL',
          instancePort: 30443,
          instanceProtocol: 'TCP',
          sslCertificateId: 'arn:aws:acm:eu-west-1:111122223333:certificate/abc',
          policyNames: ['web-ssl'],
        },
      ],
      healthCheck: {
        target: 'TCP:30080',
        intervalSeconds: 10,
        timeoutSeconds: 5,
        healthyThreshold: 2,
        unhealthyThreshold: 6,
      },
      instanceIds: ['i-1', 'i-2'],
      backendPolicies: [{ instancePort: 30080, policyNames: ['web-proxy'] }],
    });
    expect(await adapter.findLoadBalancer('gone')).toBeUndefined();
    expect(await adapter.findLoadBalancer('gone-too')).toBeUndefined();
    expect(inputs(DescribeLoadBalancersCommand)).toEqual([
      { LoadBalancerNames: ['web'] },
      { LoadBalancerNames: ['gone'] },
      { LoadBalancerNames: ['gone-too'] },
    ]);
  });

  it('lists every page, 400 at a time', async () => {
    elb
      .on(DescribeLoadBalancersCommand)
      .resolvesOnce({ LoadBalancerDescriptions: [description('a')], NextMarker: 'm1' })
      .resolvesOnce({ LoadBalancerDescriptions: [description('b')] });
    expect((await adapter.listLoadBalancers()).map((l) => l.name)).toEqual(['a', 'b']);
    expect(inputs(DescribeLoadBalancersCommand)).toEqual([
      { PageSize: 400, Marker: undefined },
      { PageSize: 400, Marker: 'm1' },
    ]);
  });

  it('creates with listeners, subnets, groups, scheme and tags in one call; a name taken is name-taken', async () => {
    elb
      .on(CreateLoadBalancerCommand)
      .resolvesOnce({ DNSName: 'web-1.eu-west-1.elb.amazonaws.com' })
      .rejectsOnce(sdkError('DuplicateAccessPointNameException', 'DuplicateLoadBalancerName'))
      .rejectsOnce(new DuplicateAccessPointNameException({ message: 'taken', ...meta }));
    const input = {
      name: 'web',
      scheme: 'internet-facing' as const,
      subnets: ['subnet-a', 'subnet-b'],
      securityGroups: ['sg-1'],
      listeners: [
        { loadBalancerPort: 80, protocol: 'TCP' as const, instancePort: 30080, instanceProtocol: 'TCP' as const },
      ],
      tags: { 'kubernetes.io/cluster/prod': 'owned' },
    };
    expect(await adapter.createLoadBalancer(input)).toEqual({ dnsName: 'web-1.eu-west-1.elb.amazonaws.com' });
    expect(await adapter.createLoadBalancer(input)).toBe('name-taken');
    expect(await adapter.createLoadBalancer(input)).toBe('name-taken');
    expect(inputs(CreateLoadBalancerCommand)[0]).toEqual({
      LoadBalancerName: 'web',
      Listeners: [{ Protocol: 'TCP', LoadBalancerPort: 80, InstanceProtocol: 'TCP', InstancePort: 30080 }],
      Subnets: ['subnet-a', 'subnet-b'],
      SecurityGroups: ['sg-1'],
      Scheme: 'internet-facing',
      Tags: [{ Key: 'kubernetes.io/cluster/prod', Value: 'owned' }],
    });
  });

  it('leaves an empty tag list out of the create (AWS refuses one)', async () => {
    elb.on(CreateLoadBalancerCommand).resolves({ DNSName: 'x' });
    await adapter.createLoadBalancer({
      name: 'web',
      scheme: 'internal',
      subnets: ['subnet-a'],
      securityGroups: [],
      listeners: [{ loadBalancerPort: 80, protocol: 'HTTP', instancePort: 30080, instanceProtocol: 'HTTP' }],
      tags: {},
    });
    expect(inputs(CreateLoadBalancerCommand)[0]).not.toHaveProperty('Tags');
  });

  it('takes a delete of what is gone as done, and fails on anything else', async () => {
    elb.on(DeleteLoadBalancerCommand).rejectsOnce(notFound()).rejectsOnce(sdkError('Throttling', 'Throttling'));
    await adapter.deleteLoadBalancer('web');
    await expect(adapter.deleteLoadBalancer('web')).rejects.toBeInstanceOf(ThrottledError);
    expect(inputs(DeleteLoadBalancerCommand)).toEqual([{ LoadBalancerName: 'web' }, { LoadBalancerName: 'web' }]);
  });
});

describe('ElbAdapter writes send exactly one command each', () => {
  beforeEach(() => {
    for (const command of [
      CreateLoadBalancerListenersCommand,
      DeleteLoadBalancerListenersCommand,
      AttachLoadBalancerToSubnetsCommand,
      DetachLoadBalancerFromSubnetsCommand,
      ApplySecurityGroupsToLoadBalancerCommand,
      ConfigureHealthCheckCommand,
      RegisterInstancesWithLoadBalancerCommand,
      DeregisterInstancesFromLoadBalancerCommand,
      AddTagsCommand,
      RemoveTagsCommand,
      SetLoadBalancerPoliciesForBackendServerCommand,
      SetLoadBalancerPoliciesOfListenerCommand,
    ] as const) {
      elb.on(command as never).resolves({});
    }
  });

  it('with the request AWS documents', async () => {
    const listener = {
      loadBalancerPort: 443,
      protocol: 'HTTPS' as const,
      instancePort: 30443,
      instanceProtocol: 'HTTP' as const,
      sslCertificateId: 'arn:cert',
    };
    await adapter.createListeners('web', [listener]);
    await adapter.deleteListeners('web', [80, 8080]);
    await adapter.attachSubnets('web', ['subnet-c']);
    await adapter.detachSubnets('web', ['subnet-a']);
    await adapter.applySecurityGroups('web', ['sg-1', 'sg-2']);
    await adapter.configureHealthCheck('web', {
      target: 'HTTP:32000/healthz',
      intervalSeconds: 10,
      timeoutSeconds: 5,
      healthyThreshold: 2,
      unhealthyThreshold: 6,
    });
    await adapter.registerInstances('web', ['i-1', 'i-2', 'i-1']);
    await adapter.deregisterInstances('web', ['i-3']);
    await adapter.addTags('web', { team: 'a' });
    await adapter.removeTags('web', ['old', 'old']);
    await adapter.setBackendPolicies('web', 30080, ['web-proxy']);
    await adapter.setListenerPolicies('web', 443, []);
    const L = 'web';
    expect(inputs(CreateLoadBalancerListenersCommand)).toEqual([
      {
        LoadBalancerName: L,
        Listeners: [
          {
            Protocol: 'HTTPS',
            LoadBalancerPort: 443,
            InstanceProtocol: 'HTTP',
            InstancePort: 30443,
            SSLCertificateId: 'arn:cert',
          },
        ],
      },
    ]);
    expect(inputs(DeleteLoadBalancerListenersCommand)).toEqual([
      { LoadBalancerName: L, LoadBalancerPorts: [80, 8080] },
    ]);
    expect(inputs(AttachLoadBalancerToSubnetsCommand)).toEqual([{ LoadBalancerName: L, Subnets: ['subnet-c'] }]);
    expect(inputs(DetachLoadBalancerFromSubnetsCommand)).toEqual([{ LoadBalancerName: L, Subnets: ['subnet-a'] }]);
    expect(inputs(ApplySecurityGroupsToLoadBalancerCommand)).toEqual([
      { LoadBalancerName: L, SecurityGroups: ['sg-1', 'sg-2'] },
    ]);
    expect(inputs(ConfigureHealthCheckCommand)).toEqual([
      {
        LoadBalancerName: L,
        HealthCheck: {
          Target: 'HTTP:32000/healthz',
          Interval: 10,
          Timeout: 5,
          HealthyThreshold: 2,
          UnhealthyThreshold: 6,
        },
      },
    ]);
    expect(inputs(RegisterInstancesWithLoadBalancerCommand)).toEqual([
      { LoadBalancerName: L, Instances: [{ InstanceId: 'i-1' }, { InstanceId: 'i-2' }] },
    ]);
    expect(inputs(DeregisterInstancesFromLoadBalancerCommand)).toEqual([
      { LoadBalancerName: L, Instances: [{ InstanceId: 'i-3' }] },
    ]);
    expect(inputs(AddTagsCommand)).toEqual([{ LoadBalancerNames: [L], Tags: [{ Key: 'team', Value: 'a' }] }]);
    expect(inputs(RemoveTagsCommand)).toEqual([{ LoadBalancerNames: [L], Tags: [{ Key: 'old' }] }]);
    expect(inputs(SetLoadBalancerPoliciesForBackendServerCommand)).toEqual([
      { LoadBalancerName: L, InstancePort: 30080, PolicyNames: ['web-proxy'] },
    ]);
    // An empty list is the request that removes a listener's policies: it is sent.
    expect(inputs(SetLoadBalancerPoliciesOfListenerCommand)).toEqual([
      { LoadBalancerName: L, LoadBalancerPort: 443, PolicyNames: [] },
    ]);
  });

  it('and none when there is nothing to do', async () => {
    await adapter.createListeners('web', []);
    await adapter.deleteListeners('web', []);
    await adapter.attachSubnets('web', []);
    await adapter.detachSubnets('web', []);
    await adapter.registerInstances('web', []);
    await adapter.deregisterInstances('web', []);
    await adapter.addTags('web', {});
    await adapter.removeTags('web', []);
    expect(elb.calls()).toHaveLength(0);
  });
});
