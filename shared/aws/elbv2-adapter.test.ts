import {
  AddListenerCertificatesCommand,
  AddTagsCommand,
  CreateListenerCommand,
  CreateLoadBalancerCommand,
  CreateTargetGroupCommand,
  DeleteLoadBalancerCommand,
  DeleteTargetGroupCommand,
  DescribeListenerAttributesCommand,
  DescribeListenerCertificatesCommand,
  DescribeListenersCommand,
  DescribeLoadBalancersCommand,
  DescribeTagsCommand,
  DescribeTargetGroupsCommand,
  DescribeTargetHealthCommand,
  ElasticLoadBalancingV2Client,
  ModifyListenerAttributesCommand,
  ModifyListenerCommand,
  ModifyTargetGroupCommand,
  RegisterTargetsCommand,
  RemoveListenerCertificatesCommand,
  RemoveTagsCommand,
  SetIpAddressTypeCommand,
} from '@aws-sdk/client-elastic-load-balancing-v2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { Elbv2Adapter, elbv2ErrorCode } from './elbv2-adapter.ts';
import { AwsServiceError } from './errors.ts';

const client = new ElasticLoadBalancingV2Client({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
});
const elb = mockClient(client);
const adapter = new Elbv2Adapter(client);

/** An error as the SDK throws it for the query protocol: the class named `<Code>Exception`, the wire code in `Code`. */
function sdkError(code: string, message = code, status = 400): Error {
  return Object.assign(new AwsServiceError(`${code}Exception`, message, status), { Code: code });
}

const LB_ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/web/0123456789abcdef';
const TG_ARN = 'arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/web-80/0123456789abcdef';
const LISTENER_ARN =
  'arn:aws:elasticloadbalancing:eu-west-1:111122223333:listener/net/web/0123456789abcdef/fedcba9876543210';
const OWNED_TAGS = { 'kubernetes.io/cluster/c1': 'owned', 'kubernetes.io/service-name': 'default/web' };

const sdkLoadBalancer = (name = 'web') => ({
  LoadBalancerArn: LB_ARN,
  LoadBalancerName: name,
  DNSName: `${name}-0123456789abcdef.elb.eu-west-1.amazonaws.com`,
  Scheme: 'internet-facing' as const,
  Type: 'network' as const,
  VpcId: 'vpc-1',
  State: { Code: 'provisioning' as const },
  AvailabilityZones: [
    {
      ZoneName: 'eu-west-1a',
      SubnetId: 'subnet-a',
      LoadBalancerAddresses: [{ AllocationId: 'eipalloc-1', IpAddress: '1.2.3.4' }],
    },
  ],
  SecurityGroups: ['sg-1'],
});

beforeEach(() => {
  elb.reset();
});

describe('Elbv2Adapter load balancers', () => {
  it('finds a load balancer by name; LoadBalancerNotFound is absence', async () => {
    elb
      .on(DescribeLoadBalancersCommand)
      .resolvesOnce({ LoadBalancers: [sdkLoadBalancer()] })
      .rejectsOnce(sdkError('LoadBalancerNotFound'));

    expect(await adapter.findLoadBalancer('web')).toEqual({
      arn: LB_ARN,
      name: 'web',
      dnsName: 'web-0123456789abcdef.elb.eu-west-1.amazonaws.com',
      scheme: 'internet-facing',
      type: 'network',
      ipAddressType: 'ipv4',
      state: 'provisioning',
      vpcId: 'vpc-1',
      subnets: [{ subnetId: 'subnet-a', zoneName: 'eu-west-1a', allocationId: 'eipalloc-1' }],
      securityGroups: ['sg-1'],
    });
    expect(await adapter.findLoadBalancer('missing')).toBeUndefined();
    expect(elb.commandCalls(DescribeLoadBalancersCommand).map((c) => c.args[0].input)).toEqual([
      { Names: ['web'] },
      { Names: ['missing'] },
    ]);
  });

  it('lists every page, 400 at a time', async () => {
    elb
      .on(DescribeLoadBalancersCommand)
      .resolvesOnce({ LoadBalancers: [sdkLoadBalancer('a')], NextMarker: 'm1' })
      .resolvesOnce({ LoadBalancers: [sdkLoadBalancer('b')] });
    expect((await adapter.listLoadBalancers()).map((l) => l.name)).toEqual(['a', 'b']);
    expect(elb.commandCalls(DescribeLoadBalancersCommand).map((c) => c.args[0].input)).toEqual([
      { PageSize: 400, Marker: undefined },
      { PageSize: 400, Marker: 'm1' },
    ]);
  });

  it('creates a network load balancer with subnet mappings, groups and tags; a duplicate name is name-taken', async () => {
    elb
      .on(CreateLoadBalancerCommand)
      .resolvesOnce({ LoadBalancers: [sdkLoadBalancer()] })
      .rejectsOnce(sdkError('DuplicateLoadBalancerName'));
    const input = {
      name: 'web',
      scheme: 'internet-facing' as const,
      subnetMappings: [{ subnetId: 'subnet-a', allocationId: 'eipalloc-1' }, { subnetId: 'subnet-b' }],
      securityGroups: ['sg-1'],
      tags: { 'kubernetes.io/cluster/prod': 'owned' },
    };
    expect(await adapter.createLoadBalancer(input)).toMatchObject({ arn: LB_ARN });
    expect(await adapter.createLoadBalancer(input)).toBe('name-taken');
    expect(elb.commandCalls(CreateLoadBalancerCommand)[0]!.args[0].input).toEqual({
      Name: 'web',
      Type: 'network',
      Scheme: 'internet-facing',
      IpAddressType: 'ipv4',
      SubnetMappings: [{ SubnetId: 'subnet-a', AllocationId: 'eipalloc-1' }, { SubnetId: 'subnet-b' }],
      SecurityGroups: ['sg-1'],
      Tags: [{ Key: 'kubernetes.io/cluster/prod', Value: 'owned' }],
    });
  });

  it('creates a dualstack load balancer when asked, and sets the IP address type', async () => {
    elb.on(CreateLoadBalancerCommand).resolves({ LoadBalancers: [sdkLoadBalancer()] });
    elb.on(SetIpAddressTypeCommand).resolves({ IpAddressType: 'ipv4' });
    await adapter.createLoadBalancer({
      name: 'web',
      scheme: 'internal',
      subnetMappings: [{ subnetId: 'subnet-a', privateIPv4Address: '10.0.1.10' }],
      securityGroups: ['sg-1'],
      ipAddressType: 'dualstack',
      tags: {},
    });
    expect(elb.commandCalls(CreateLoadBalancerCommand)[0]!.args[0].input).toMatchObject({
      Scheme: 'internal',
      IpAddressType: 'dualstack',
      SubnetMappings: [{ SubnetId: 'subnet-a', PrivateIPv4Address: '10.0.1.10' }],
    });
    await adapter.setIpAddressType(LB_ARN, 'ipv4');
    expect(elb.commandCalls(SetIpAddressTypeCommand).map((c) => c.args[0].input)).toEqual([
      { LoadBalancerArn: LB_ARN, IpAddressType: 'ipv4' },
    ]);
  });

  it.each([
    [undefined, 'ipv4'],
    ['ipv4', 'ipv4'],
    ['dualstack', 'dualstack'],
    ['dualstack-without-public-ipv4', 'dualstack'],
  ] as const)('reads IpAddressType %s as %s', async (sdkType, expected) => {
    elb.on(DescribeLoadBalancersCommand).resolves({
      LoadBalancers: [{ ...sdkLoadBalancer(), ...(sdkType ? { IpAddressType: sdkType } : {}) }],
    });
    expect((await adapter.findLoadBalancer('web'))?.ipAddressType).toBe(expected);
  });

  it('setting the IP address type keeps the AWS error code (subnets without IPv6)', async () => {
    elb.on(SetIpAddressTypeCommand).rejects(sdkError('InvalidConfigurationRequest'));
    const err = await adapter.setIpAddressType(LB_ARN, 'dualstack').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TerminalError);
    expect(elbv2ErrorCode((err as Error).cause)).toBe('InvalidConfigurationRequest');
  });

  it('deleting a load balancer that is gone is success', async () => {
    elb.on(DeleteLoadBalancerCommand).rejects(sdkError('LoadBalancerNotFound'));
    await expect(adapter.deleteLoadBalancer(LB_ARN)).resolves.toBeUndefined();
  });
});

describe('Elbv2Adapter listeners', () => {
  it('reads the forward target group and the default certificate first', async () => {
    elb.on(DescribeListenersCommand).resolves({
      Listeners: [
        {
          ListenerArn: 'l1',
          LoadBalancerArn: LB_ARN,
          Port: 443,
          Protocol: 'TLS',
          SslPolicy: 'P',
          Certificates: [{ CertificateArn: 'extra' }, { CertificateArn: 'default', IsDefault: true }],
          DefaultActions: [{ Type: 'forward', ForwardConfig: { TargetGroups: [{ TargetGroupArn: TG_ARN }] } }],
        },
      ],
    });
    expect(await adapter.describeListeners(LB_ARN)).toEqual([
      {
        arn: 'l1',
        loadBalancerArn: LB_ARN,
        port: 443,
        protocol: 'TLS',
        sslPolicy: 'P',
        certificateArns: ['default', 'extra'],
        targetGroupArn: TG_ARN,
      },
    ]);
  });

  it('creates TLS listeners with certificate and policy, TCP ones without; tagged on create, Tags left out when none', async () => {
    elb
      .on(CreateListenerCommand)
      .resolves({ Listeners: [{ ListenerArn: 'l', LoadBalancerArn: LB_ARN, Port: 1, Protocol: 'TCP' }] });
    await adapter.createListener(
      LB_ARN,
      { port: 443, protocol: 'TLS', certificateArn: 'c', sslPolicy: 'P', targetGroupArn: TG_ARN },
      OWNED_TAGS,
    );
    await adapter.createListener(
      LB_ARN,
      { port: 80, protocol: 'TCP', certificateArn: 'ignored', targetGroupArn: TG_ARN },
      {},
    );
    expect(elb.commandCalls(CreateListenerCommand).map((c) => c.args[0].input)).toEqual([
      {
        LoadBalancerArn: LB_ARN,
        Port: 443,
        Protocol: 'TLS',
        DefaultActions: [{ Type: 'forward', TargetGroupArn: TG_ARN }],
        Certificates: [{ CertificateArn: 'c' }],
        SslPolicy: 'P',
        Tags: [
          { Key: 'kubernetes.io/cluster/c1', Value: 'owned' },
          { Key: 'kubernetes.io/service-name', Value: 'default/web' },
        ],
      },
      {
        LoadBalancerArn: LB_ARN,
        Port: 80,
        Protocol: 'TCP',
        DefaultActions: [{ Type: 'forward', TargetGroupArn: TG_ARN }],
      },
    ]);
  });

  it('sends the ALPN policy as a list of one on TLS listeners only, and reads it back', async () => {
    elb.on(CreateListenerCommand).resolves({
      Listeners: [
        {
          ListenerArn: LISTENER_ARN,
          LoadBalancerArn: LB_ARN,
          Port: 443,
          Protocol: 'TLS',
          AlpnPolicy: ['HTTP2Preferred'],
          Certificates: [{ CertificateArn: 'c' }],
        },
      ],
    });
    elb.on(ModifyListenerCommand).resolves({});
    const created = await adapter.createListener(
      LB_ARN,
      { port: 443, protocol: 'TLS', certificateArn: 'c', alpnPolicy: 'HTTP2Preferred', targetGroupArn: TG_ARN },
      {},
    );
    expect(created.alpnPolicy).toBe('HTTP2Preferred');
    await adapter.modifyListener(LISTENER_ARN, {
      port: 443,
      protocol: 'TLS',
      certificateArn: 'c',
      alpnPolicy: 'None',
      targetGroupArn: TG_ARN,
    });
    await adapter.modifyListener(LISTENER_ARN, {
      port: 80,
      protocol: 'TCP',
      alpnPolicy: 'HTTP1Only',
      targetGroupArn: TG_ARN,
    });
    expect(elb.commandCalls(CreateListenerCommand)[0]!.args[0].input).toMatchObject({
      AlpnPolicy: ['HTTP2Preferred'],
    });
    expect(elb.commandCalls(ModifyListenerCommand).map((c) => c.args[0].input)).toEqual([
      {
        ListenerArn: LISTENER_ARN,
        Port: 443,
        Protocol: 'TLS',
        DefaultActions: [{ Type: 'forward', TargetGroupArn: TG_ARN }],
        Certificates: [{ CertificateArn: 'c' }],
        AlpnPolicy: ['None'],
      },
      {
        ListenerArn: LISTENER_ARN,
        Port: 80,
        Protocol: 'TCP',
        DefaultActions: [{ Type: 'forward', TargetGroupArn: TG_ARN }],
      },
    ]);
  });

  it('an ALPN policy this code does not know is read as none', async () => {
    elb.on(DescribeListenersCommand).resolves({
      Listeners: [{ ListenerArn: 'l', LoadBalancerArn: LB_ARN, Port: 443, Protocol: 'TLS', AlpnPolicy: ['HTTP3'] }],
    });
    expect((await adapter.describeListeners(LB_ARN))[0]?.alpnPolicy).toBeUndefined();
  });

  it('describes listener certificates over every page, the default one marked', async () => {
    elb
      .on(DescribeListenerCertificatesCommand)
      .resolvesOnce({
        Certificates: [{ CertificateArn: 'default', IsDefault: true }, { CertificateArn: 'sni-1' }],
        NextMarker: 'm1',
      })
      .resolvesOnce({ Certificates: [{ CertificateArn: 'sni-2', IsDefault: false }, {}] });
    expect(await adapter.describeListenerCertificates(LISTENER_ARN)).toEqual([
      { certificateArn: 'default', isDefault: true },
      { certificateArn: 'sni-1', isDefault: false },
      { certificateArn: 'sni-2', isDefault: false },
    ]);
    expect(elb.commandCalls(DescribeListenerCertificatesCommand).map((c) => c.args[0].input)).toEqual([
      { ListenerArn: LISTENER_ARN, PageSize: 400, Marker: undefined },
      { ListenerArn: LISTENER_ARN, PageSize: 400, Marker: 'm1' },
    ]);
  });

  it('adds and removes certificates one per call (AWS takes one), none: no call', async () => {
    elb.on(AddListenerCertificatesCommand).resolves({});
    elb.on(RemoveListenerCertificatesCommand).resolves({});
    await adapter.addListenerCertificates(LISTENER_ARN, ['a', 'b', 'a']);
    await adapter.addListenerCertificates(LISTENER_ARN, []);
    await adapter.removeListenerCertificates(LISTENER_ARN, ['c']);
    await adapter.removeListenerCertificates(LISTENER_ARN, []);
    expect(elb.commandCalls(AddListenerCertificatesCommand).map((c) => c.args[0].input)).toEqual([
      { ListenerArn: LISTENER_ARN, Certificates: [{ CertificateArn: 'a' }] },
      { ListenerArn: LISTENER_ARN, Certificates: [{ CertificateArn: 'b' }] },
    ]);
    expect(elb.commandCalls(RemoveListenerCertificatesCommand).map((c) => c.args[0].input)).toEqual([
      { ListenerArn: LISTENER_ARN, Certificates: [{ CertificateArn: 'c' }] },
    ]);
  });

  it('stops at the first certificate AWS refuses, with its code', async () => {
    elb.on(AddListenerCertificatesCommand).resolvesOnce({}).rejectsOnce(sdkError('TooManyCertificates')).resolves({});
    elb.on(RemoveListenerCertificatesCommand).rejects(sdkError('OperationNotPermitted'));
    const err = await adapter.addListenerCertificates(LISTENER_ARN, ['a', 'b', 'c']).catch((e: unknown) => e);
    expect(elbv2ErrorCode((err as Error).cause)).toBe('TooManyCertificates');
    expect((err as Error).message).toMatch(/adding certificate b to/);
    expect(elb.commandCalls(AddListenerCertificatesCommand)).toHaveLength(2);
    const removing = await adapter.removeListenerCertificates(LISTENER_ARN, ['default']).catch((e: unknown) => e);
    expect(removing).toBeInstanceOf(TerminalError);
    expect(elbv2ErrorCode((removing as Error).cause)).toBe('OperationNotPermitted');
  });

  it('reads and modifies listener attributes as key/value lists; nothing to modify sends nothing', async () => {
    elb
      .on(DescribeListenerAttributesCommand)
      .resolves({ Attributes: [{ Key: 'tcp.idle_timeout.seconds', Value: '350' }] });
    elb.on(ModifyListenerAttributesCommand).resolves({});
    expect(await adapter.describeListenerAttributes(LISTENER_ARN)).toEqual({ 'tcp.idle_timeout.seconds': '350' });
    await adapter.modifyListenerAttributes(LISTENER_ARN, { 'tcp.idle_timeout.seconds': '600' });
    await adapter.modifyListenerAttributes(LISTENER_ARN, {});
    expect(elb.commandCalls(DescribeListenerAttributesCommand)[0]!.args[0].input).toEqual({
      ListenerArn: LISTENER_ARN,
    });
    expect(elb.commandCalls(ModifyListenerAttributesCommand).map((c) => c.args[0].input)).toEqual([
      { ListenerArn: LISTENER_ARN, Attributes: [{ Key: 'tcp.idle_timeout.seconds', Value: '600' }] },
    ]);
  });

  it('a target group still tied to another load balancer is an error with its code', async () => {
    elb.on(CreateListenerCommand).rejects(sdkError('TargetGroupAssociationLimit'));
    const err = await adapter
      .createListener(LB_ARN, { port: 80, protocol: 'TCP', targetGroupArn: TG_ARN }, OWNED_TAGS)
      .catch((e: unknown) => e);
    expect(elbv2ErrorCode((err as Error).cause)).toBe('TargetGroupAssociationLimit');
  });
});

describe('Elbv2Adapter target groups and targets', () => {
  const sdkGroup = (name: string) => ({
    TargetGroupArn: `${TG_ARN}-${name}`,
    TargetGroupName: name,
    Protocol: 'TCP' as const,
    Port: 30080,
    TargetType: 'instance' as const,
    HealthCheckProtocol: 'HTTP' as const,
    HealthCheckPort: '32000',
    HealthCheckPath: '/healthz',
    HealthCheckIntervalSeconds: 10,
    HealthCheckTimeoutSeconds: 6,
    HealthyThresholdCount: 2,
    UnhealthyThresholdCount: 2,
    LoadBalancerArns: [LB_ARN],
  });

  it('finds by name; one unknown name makes it ask name by name', async () => {
    elb
      .on(DescribeTargetGroupsCommand, { Names: ['a', 'b'] })
      .rejects(sdkError('TargetGroupNotFound'))
      .on(DescribeTargetGroupsCommand, { Names: ['a'] })
      .resolves({ TargetGroups: [sdkGroup('a')] })
      .on(DescribeTargetGroupsCommand, { Names: ['b'] })
      .rejects(sdkError('TargetGroupNotFound'));
    const found = await adapter.findTargetGroups(['a', 'b', 'a']);
    expect(found).toEqual([
      {
        arn: `${TG_ARN}-a`,
        name: 'a',
        protocol: 'TCP',
        port: 30080,
        targetType: 'instance',
        ipAddressType: 'ipv4',
        vpcId: undefined,
        healthCheck: {
          protocol: 'HTTP',
          port: '32000',
          path: '/healthz',
          intervalSeconds: 10,
          timeoutSeconds: 6,
          healthyThreshold: 2,
          unhealthyThreshold: 2,
        },
        loadBalancerArns: [LB_ARN],
      },
    ]);
    // PageSize may not be combined with Names.
    expect(elb.commandCalls(DescribeTargetGroupsCommand).map((c) => c.args[0].input)).toEqual([
      { Names: ['a', 'b'], Marker: undefined },
      { Names: ['a'], Marker: undefined },
      { Names: ['b'], Marker: undefined },
    ]);
  });

  it('creates with the health check (a path only for HTTP/HTTPS) and tags; a duplicate name is name-taken', async () => {
    elb
      .on(CreateTargetGroupCommand)
      .resolvesOnce({ TargetGroups: [sdkGroup('a')] })
      .rejectsOnce(sdkError('DuplicateTargetGroupName'));
    const input = {
      name: 'a',
      protocol: 'TCP' as const,
      port: 30080,
      targetType: 'instance' as const,
      vpcId: 'vpc-1',
      healthCheck: {
        protocol: 'TCP' as const,
        port: 'traffic-port',
        intervalSeconds: 30,
        timeoutSeconds: 10,
        healthyThreshold: 3,
        unhealthyThreshold: 3,
      },
      tags: { a: 'b' },
    };
    await adapter.createTargetGroup(input);
    expect(await adapter.createTargetGroup(input)).toBe('name-taken');
    expect(elb.commandCalls(CreateTargetGroupCommand)[0]!.args[0].input).toEqual({
      Name: 'a',
      Protocol: 'TCP',
      Port: 30080,
      VpcId: 'vpc-1',
      TargetType: 'instance',
      IpAddressType: 'ipv4',
      HealthCheckEnabled: true,
      HealthCheckProtocol: 'TCP',
      HealthCheckPort: 'traffic-port',
      HealthCheckIntervalSeconds: 30,
      HealthCheckTimeoutSeconds: 10,
      HealthyThresholdCount: 3,
      UnhealthyThresholdCount: 3,
      Tags: [{ Key: 'a', Value: 'b' }],
    });
    elb.on(ModifyTargetGroupCommand).resolves({});
    await adapter.modifyTargetGroupHealthCheck(TG_ARN, { ...input.healthCheck, protocol: 'HTTP', path: '/healthz' });
    expect(elb.commandCalls(ModifyTargetGroupCommand)[0]!.args[0].input).toMatchObject({
      HealthCheckProtocol: 'HTTP',
      HealthCheckPath: '/healthz',
    });
  });

  it('creates an IPv6 target group when asked and reads the IP address type back', async () => {
    elb
      .on(CreateTargetGroupCommand)
      .resolves({ TargetGroups: [{ ...sdkGroup('v6'), TargetType: 'ip', IpAddressType: 'ipv6' }] });
    const created = await adapter.createTargetGroup({
      name: 'v6',
      protocol: 'TCP',
      port: 8080,
      targetType: 'ip',
      ipAddressType: 'ipv6',
      vpcId: 'vpc-1',
      healthCheck: {
        protocol: 'TCP',
        port: 'traffic-port',
        intervalSeconds: 30,
        timeoutSeconds: 10,
        healthyThreshold: 3,
        unhealthyThreshold: 3,
      },
      tags: {},
    });
    expect(created).toMatchObject({ targetType: 'ip', ipAddressType: 'ipv6' });
    expect(elb.commandCalls(CreateTargetGroupCommand)[0]!.args[0].input).toMatchObject({
      TargetType: 'ip',
      IpAddressType: 'ipv6',
    });
  });

  it('a target group in use is a retryable error; a missing one is not-found', async () => {
    elb
      .on(DeleteTargetGroupCommand)
      .rejectsOnce(sdkError('ResourceInUse'))
      .rejectsOnce(sdkError('TargetGroupNotFound'));
    const err = await adapter.deleteTargetGroup(TG_ARN).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as Error).message).toMatch(/deleting target group .*: ResourceInUse/);
    expect(await adapter.deleteTargetGroup(TG_ARN)).toBe('not-found');
  });

  it('an exception without the wire code is classified by its name without the Exception suffix', async () => {
    elb.on(DeleteTargetGroupCommand).rejects(new AwsServiceError('ResourceInUseException', 'in use'));
    expect(await adapter.deleteTargetGroup(TG_ARN).catch((e: unknown) => e)).toBeInstanceOf(RetryableError);
  });

  it('finds by ARN, 20 a call, without PageSize; one unknown ARN makes it ask ARN by ARN', async () => {
    const arns = Array.from({ length: 21 }, (_, i) => `${TG_ARN}-${i}`);
    elb
      .on(DescribeTargetGroupsCommand, { TargetGroupArns: arns.slice(0, 20) })
      .resolves({ TargetGroups: [sdkGroup('0')] })
      .on(DescribeTargetGroupsCommand, { TargetGroupArns: [arns[20]!] })
      .rejects(sdkError('TargetGroupNotFound'));
    expect((await adapter.describeTargetGroupsByArn([...arns, arns[0]!])).map((g) => g.name)).toEqual(['0']);
    expect(elb.commandCalls(DescribeTargetGroupsCommand).map((c) => c.args[0].input)).toEqual([
      { TargetGroupArns: arns.slice(0, 20), Marker: undefined },
      { TargetGroupArns: [arns[20]], Marker: undefined },
    ]);
    elb.reset();
    elb
      .on(DescribeTargetGroupsCommand, { TargetGroupArns: ['a', 'b'] })
      .rejects(sdkError('TargetGroupNotFound'))
      .on(DescribeTargetGroupsCommand, { TargetGroupArns: ['a'] })
      .rejects(sdkError('TargetGroupNotFound'))
      .on(DescribeTargetGroupsCommand, { TargetGroupArns: ['b'] })
      .resolves({ TargetGroups: [sdkGroup('b')] });
    expect((await adapter.describeTargetGroupsByArn(['a', 'b'])).map((g) => g.name)).toEqual(['b']);
    expect(elb.commandCalls(DescribeTargetGroupsCommand)).toHaveLength(3);
  });

  it('reads target health, and registers only when there is something to register', async () => {
    elb.on(DescribeTargetHealthCommand).resolves({
      TargetHealthDescriptions: [
        {
          Target: { Id: 'i-1', Port: 30080 },
          TargetHealth: { State: 'draining', Reason: 'Target.DeregistrationInProgress' },
        },
        {
          Target: { Id: '10.0.0.1', Port: 8080 },
          TargetHealth: {
            State: 'initial',
            Reason: 'Elb.RegistrationInProgress',
            Description: 'Target registration is in progress',
          },
        },
        { Target: { Id: 'i-2', Port: 30080 }, TargetHealth: { State: 'healthy' } },
      ],
    });
    expect(await adapter.describeTargetHealth(TG_ARN)).toEqual([
      { target: { id: 'i-1', port: 30080 }, state: 'draining', reason: 'Target.DeregistrationInProgress' },
      {
        target: { id: '10.0.0.1', port: 8080 },
        state: 'initial',
        reason: 'Elb.RegistrationInProgress',
        description: 'Target registration is in progress',
      },
      { target: { id: 'i-2', port: 30080 }, state: 'healthy' },
    ]);
    elb.on(RegisterTargetsCommand).resolves({});
    await adapter.registerTargets(TG_ARN, []);
    await adapter.registerTargets(TG_ARN, [{ id: 'i-3', port: 30080 }]);
    expect(elb.commandCalls(RegisterTargetsCommand).map((c) => c.args[0].input)).toEqual([
      { TargetGroupArn: TG_ARN, Targets: [{ Id: 'i-3', Port: 30080 }] },
    ]);
  });
});

describe('Elbv2Adapter tags and errors', () => {
  it('describes tags 20 ARNs per call; a vanished ARN makes it ask ARN by ARN', async () => {
    const arns = Array.from({ length: 21 }, (_, i) => `${TG_ARN}-${i}`);
    elb.on(DescribeTagsCommand).callsFake(async (input: { ResourceArns: string[] }) => {
      if (input.ResourceArns.includes(`${TG_ARN}-20`) && input.ResourceArns.length === 1)
        throw sdkError('TargetGroupNotFound');
      return {
        TagDescriptions: input.ResourceArns.map((arn) => ({
          ResourceArn: arn,
          Tags: [{ Key: 'k', Value: arn.slice(-2) }],
        })),
      };
    });
    const tags = await adapter.describeTags(arns);
    expect(tags.size).toBe(20);
    expect(elb.commandCalls(DescribeTagsCommand).map((c) => c.args[0].input.ResourceArns?.length)).toEqual([20, 1]);
  });

  it('a vanished listener among the ARNs is left out like a vanished load balancer', async () => {
    elb.on(DescribeTagsCommand).callsFake(async (input: { ResourceArns: string[] }) => {
      if (input.ResourceArns.includes(LISTENER_ARN)) throw sdkError('ListenerNotFound');
      return { TagDescriptions: input.ResourceArns.map((arn) => ({ ResourceArn: arn, Tags: [] })) };
    });
    const tags = await adapter.describeTags([LB_ARN, LISTENER_ARN]);
    expect([...tags.keys()]).toEqual([LB_ARN]);
    expect(elb.commandCalls(DescribeTagsCommand).map((c) => c.args[0].input.ResourceArns)).toEqual([
      [LB_ARN, LISTENER_ARN],
      [LB_ARN],
      [LISTENER_ARN],
    ]);
  });

  it('adds tags to one resource, a listener too', async () => {
    elb.on(AddTagsCommand).resolves({});
    await adapter.addTags(LB_ARN, { team: 'web' });
    await adapter.addTags(LB_ARN, {});
    await adapter.addTags(LISTENER_ARN, { 'kubernetes.io/cluster/c1': 'owned' });
    expect(elb.commandCalls(AddTagsCommand).map((c) => c.args[0].input)).toEqual([
      { ResourceArns: [LB_ARN], Tags: [{ Key: 'team', Value: 'web' }] },
      { ResourceArns: [LISTENER_ARN], Tags: [{ Key: 'kubernetes.io/cluster/c1', Value: 'owned' }] },
    ]);
  });

  it('removes tag keys from one resource; no keys: no call; an unknown resource keeps its code', async () => {
    elb.on(RemoveTagsCommand).resolvesOnce({}).rejects(sdkError('ListenerNotFound'));
    await adapter.removeTags(LB_ARN, ['team', 'old', 'team']);
    await adapter.removeTags(LB_ARN, []);
    expect(elb.commandCalls(RemoveTagsCommand).map((c) => c.args[0].input)).toEqual([
      { ResourceArns: [LB_ARN], TagKeys: ['team', 'old'] },
    ]);
    const err = await adapter.removeTags(LISTENER_ARN, ['team']).catch((e: unknown) => e);
    expect(elbv2ErrorCode((err as Error).cause)).toBe('ListenerNotFound');
  });

  it.each([
    [sdkError('Throttling', 'Rate exceeded'), ThrottledError],
    [sdkError('AccessDenied', 'no'), TerminalError],
    [sdkError('InternalFailure', 'oops', 500), RetryableError],
  ])('classifies %s', async (error, kind) => {
    elb.on(DescribeLoadBalancersCommand).rejects(error);
    expect(await adapter.listLoadBalancers().catch((e: unknown) => e)).toBeInstanceOf(kind);
  });
});
