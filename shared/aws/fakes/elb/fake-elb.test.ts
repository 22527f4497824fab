import {
  AccessPointNotFoundException,
  CreateLoadBalancerCommand,
  DescribeLoadBalancersCommand,
  DuplicateAccessPointNameException,
  InvalidConfigurationRequestException,
  InvalidEndPointException,
} from '@aws-sdk/client-elastic-load-balancing';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../../clock.ts';
import { TerminalError, ThrottledError } from '../../../errors.ts';
import { ElbAdapter } from '../../elb-adapter.ts';
import { CLASSIC_ATTRIBUTE_DEFAULTS, CLASSIC_HEALTH_CHECK_DEFAULTS } from '../../elb-defaults.ts';
import { classicErrorCode } from '../../elb-errors.ts';
import type { ClassicListener, CreateClassicLoadBalancerInput } from '../../elb-port.ts';
import { FakeEc2, makeInstance, makeRouteTable, makeSubnet } from '../ec2/fake-ec2.ts';
import { FakeElb } from './fake-elb.ts';

let clock: FakeClock;
let ec2: FakeEc2;
let fake: FakeElb;
let elb: ElbAdapter;
const a = makeSubnet({ index: 1, zone: 'eu-west-1a' });
const b = makeSubnet({ index: 2, zone: 'eu-west-1b' });
const a2 = makeSubnet({ index: 3, zone: 'eu-west-1a' });
const group = (groupId: string, groupName = groupId) => ({
  groupId,
  groupName,
  vpcId: a.vpcId,
  description: '',
  tags: {},
  ingress: [],
});

beforeEach(() => {
  clock = new FakeClock();
  ec2 = new FakeEc2(clock);
  fake = new FakeElb(clock, ec2);
  elb = new ElbAdapter(fake);
  for (const s of [a, b, a2]) ec2.putSubnet(s);
  ec2.putSecurityGroup(group('sg-lb'));
  ec2.putSecurityGroup(group('sg-default', 'default'));
});

const TCP80: ClassicListener = { loadBalancerPort: 80, protocol: 'TCP', instancePort: 30080, instanceProtocol: 'TCP' };
const input = (extra: Partial<CreateClassicLoadBalancerInput> = {}): CreateClassicLoadBalancerInput => ({
  name: 'web',
  scheme: 'internet-facing',
  subnets: [a.subnetId, b.subnetId],
  securityGroups: ['sg-lb'],
  listeners: [TCP80],
  tags: { 'kubernetes.io/cluster/prod': 'owned' },
  ...extra,
});
/** The wire code of a controller error's AWS cause. */
const codeOf = (err: unknown) => classicErrorCode((err as Error).cause);
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('FakeElb load balancers, through ElbAdapter', () => {
  it('creates one with the DNS name, defaults and tags AWS gives it', async () => {
    expect(await elb.createLoadBalancer(input())).toEqual({
      dnsName: expect.stringMatching(/^web-\d+\.eu-west-1\.elb\.amazonaws\.com$/),
    });
    expect(await elb.createLoadBalancer(input({ name: 'api', scheme: 'internal' }))).toEqual({
      dnsName: expect.stringMatching(/^internal-api-\d+\.eu-west-1\.elb\.amazonaws\.com$/),
    });
    const web = await elb.findLoadBalancer('web');
    expect(web).toMatchObject({
      name: 'web',
      scheme: 'internet-facing',
      vpcId: a.vpcId,
      subnets: [a.subnetId, b.subnetId],
      securityGroups: ['sg-lb'],
      listeners: [{ ...TCP80, policyNames: [] }],
      healthCheck: CLASSIC_HEALTH_CHECK_DEFAULTS,
      instanceIds: [],
      backendPolicies: [],
    });
    expect(fake.describeNamed('web')?.AvailabilityZones).toEqual(['eu-west-1a', 'eu-west-1b']);
    expect(await elb.describeAttributes('web')).toEqual(CLASSIC_ATTRIBUTE_DEFAULTS);
    expect(await elb.describeTags(['web', 'api', 'gone'])).toEqual(
      new Map([
        ['web', { 'kubernetes.io/cluster/prod': 'owned' }],
        ['api', { 'kubernetes.io/cluster/prod': 'owned' }],
      ]),
    );
    expect(await elb.findLoadBalancer('gone')).toBeUndefined();
  });

  it('answers a create with the same listeners with the existing DNS name, and other listeners name-taken', async () => {
    const first = await elb.createLoadBalancer(input());
    expect(await elb.createLoadBalancer(input({ subnets: [a.subnetId] }))).toEqual(first);
    expect(await elb.createLoadBalancer(input({ listeners: [{ ...TCP80, instancePort: 31000 }] }))).toBe('name-taken');
    expect(fake.callCount('CreateLoadBalancer')).toBe(3);
  });

  it('throws what the SDK throws: its class name, the wire code in Code', async () => {
    await elb.createLoadBalancer(input());
    const raw = (await fake
      .send(new DescribeLoadBalancersCommand({ LoadBalancerNames: ['nope'] }))
      .catch((e) => e)) as {
      name: string;
      Code: string;
      $metadata: { httpStatusCode: number };
    };
    expect(raw).toMatchObject({
      name: new AccessPointNotFoundException({ message: '', $metadata: {} }).name,
      Code: 'LoadBalancerNotFound',
      $metadata: { httpStatusCode: 400 },
    });
    const dup = (await fake
      .send(
        new CreateLoadBalancerCommand({
          LoadBalancerName: 'web',
          Listeners: [{ Protocol: 'HTTP', LoadBalancerPort: 80, InstancePort: 30080 }],
          Subnets: [a.subnetId],
        }),
      )
      .catch((e) => e)) as { name: string; Code: string };
    expect(dup).toMatchObject({
      name: new DuplicateAccessPointNameException({ message: '', $metadata: {} }).name,
      Code: 'DuplicateLoadBalancerName',
    });
    const invalid = await failure(elb.attachSubnets('web', [a2.subnetId]));
    expect((invalid as Error).cause).toMatchObject({
      name: new InvalidConfigurationRequestException({ message: '', $metadata: {} }).name,
      $metadata: { httpStatusCode: 409 },
    });
    expect(invalid).toBeInstanceOf(TerminalError);
  });

  it('checks subnets and security groups against EC2, and needs an internet gateway to face the internet', async () => {
    expect(codeOf(await failure(elb.createLoadBalancer(input({ subnets: [a.subnetId, a2.subnetId] }))))).toBe(
      'InvalidConfigurationRequest',
    );
    expect(codeOf(await failure(elb.createLoadBalancer(input({ subnets: ['subnet-0ffffffffffffffff'] }))))).toBe(
      'SubnetNotFound',
    );
    expect(codeOf(await failure(elb.createLoadBalancer(input({ securityGroups: ['sg-nope'] }))))).toBe(
      'InvalidSecurityGroup',
    );
    ec2.putRouteTable(makeRouteTable({ routeTableId: 'rtb-0a1b2c3d', vpcId: a.vpcId, extraRoutes: [] }));
    const routes = ec2.routeTables.get('rtb-0a1b2c3d')!.routes;
    routes.splice(0, routes.length, ...routes.filter((r) => !r.target.gatewayId?.startsWith('igw-')));
    expect(codeOf(await failure(elb.createLoadBalancer(input())))).toBe('InvalidSubnet');
    // Internal load balancers need no gateway; without groups they get the VPC's default group.
    await elb.createLoadBalancer(input({ scheme: 'internal', securityGroups: [] }));
    expect((await elb.findLoadBalancer('web'))?.securityGroups).toEqual(['sg-default']);
  });

  it('keeps one subnet per zone and at least one subnet', async () => {
    await elb.createLoadBalancer(input({ subnets: [a.subnetId] }));
    expect(codeOf(await failure(elb.attachSubnets('web', [a2.subnetId])))).toBe('InvalidConfigurationRequest');
    await elb.attachSubnets('web', [b.subnetId]);
    await elb.detachSubnets('web', [a.subnetId]);
    await elb.attachSubnets('web', [a2.subnetId]);
    expect((await elb.findLoadBalancer('web'))?.subnets).toEqual([b.subnetId, a2.subnetId]);
    expect(codeOf(await failure(elb.detachSubnets('web', [b.subnetId, a2.subnetId])))).toBe(
      'InvalidConfigurationRequest',
    );
  });

  it('holds its security groups in EC2 until its network interfaces have drained after the delete', async () => {
    const hold = vi.spyOn(ec2, 'holdSecurityGroups');
    const release = vi.spyOn(ec2, 'releaseSecurityGroups');
    await elb.createLoadBalancer(input());
    ec2.putSecurityGroup(group('sg-2'));
    await elb.applySecurityGroups('web', ['sg-lb', 'sg-2']);
    const holder = hold.mock.calls[0]![0];
    expect(hold.mock.calls).toEqual([
      [holder, ['sg-lb']],
      [holder, ['sg-lb', 'sg-2']],
    ]);
    await elb.deleteLoadBalancer('web');
    await elb.deleteLoadBalancer('web');
    expect(release.mock.calls).toEqual([[holder, fake.eniDrainMs]]);
    expect(await elb.findLoadBalancer('web')).toBeUndefined();
    // A new load balancer of the same name holds under another key: the old one's drain is not cut short.
    await elb.createLoadBalancer(input());
    expect(hold.mock.calls.at(-1)?.[0]).not.toBe(holder);
  });
});

describe('FakeElb listeners, instances, attributes, policies', () => {
  beforeEach(async () => {
    await elb.createLoadBalancer(input());
  });

  it('adds listeners, refuses a different one on a used port, deletes by port', async () => {
    const tls: ClassicListener = {
      loadBalancerPort: 443,
      protocol: 'SSL',
      instancePort: 30443,
      instanceProtocol: 'TCP',
      sslCertificateId: 'arn:aws:acm:eu-west-1:111122223333:certificate/x',
    };
    await elb.createListeners('web', [TCP80, tls]);
    expect(codeOf(await failure(elb.createListeners('web', [{ ...TCP80, instancePort: 1 }])))).toBe(
      'DuplicateListener',
    );
    expect(
      codeOf(await failure(elb.createListeners('web', [{ ...tls, loadBalancerPort: 8443, protocol: 'HTTPS' }]))),
    ).toBe('InvalidConfigurationRequest');
    await elb.deleteListeners('web', [80, 9999]);
    expect((await elb.findLoadBalancer('web'))?.listeners.map((l) => l.loadBalancerPort)).toEqual([443]);
  });

  it('refuses an SSL or HTTPS listener without a certificate, or with one AWS does not have, and adds none of the call', async () => {
    const cert = 'arn:aws:acm:eu-west-1:111122223333:certificate/gone';
    const free: ClassicListener = { ...TCP80, loadBalancerPort: 9000 };
    for (const protocol of ['SSL', 'HTTPS'] as const) {
      const instanceProtocol = protocol === 'SSL' ? 'SSL' : 'HTTPS';
      const bare: ClassicListener = { ...TCP80, loadBalancerPort: 443, protocol, instanceProtocol };
      expect(codeOf(await failure(elb.createListeners('web', [free, bare])))).toBe('ValidationError');
    }
    fake.missingCertificates.add(cert);
    const tls: ClassicListener = { ...TCP80, loadBalancerPort: 443, protocol: 'SSL', sslCertificateId: cert };
    expect(codeOf(await failure(elb.createListeners('web', [free, tls])))).toBe('CertificateNotFound');
    expect(codeOf(await failure(elb.createLoadBalancer(input({ name: 'tls', listeners: [tls] }))))).toBe(
      'CertificateNotFound',
    );
    expect((await elb.findLoadBalancer('web'))?.listeners.map((l) => l.loadBalancerPort)).toEqual([80]);
    expect(await elb.findLoadBalancer('tls')).toBeUndefined();
  });

  it('registers running instances only; they serve once registration is through', async () => {
    const running = ec2.putInstance(makeInstance({ vpcId: a.vpcId }));
    const stopped = ec2.putInstance(makeInstance({ vpcId: a.vpcId, state: 'stopped' }));
    expect(codeOf(await failure(elb.registerInstances('web', [stopped.instanceId])))).toBe('InvalidInstance');
    const err = await failure(elb.registerInstances('web', ['i-0123456789abcdef0']));
    expect((err as Error).cause).toMatchObject({
      name: new InvalidEndPointException({ message: '', $metadata: {} }).name,
    });
    await elb.registerInstances('web', [running.instanceId]);
    expect(await elb.describeInstanceHealth('web')).toEqual([
      { instanceId: running.instanceId, state: 'OutOfService' },
    ]);
    expect(await elb.describeInstanceHealth('web')).toEqual([{ instanceId: running.instanceId, state: 'InService' }]);
    ec2.setState(running.instanceId, 'stopped');
    expect(await elb.describeInstanceHealth('web')).toEqual([
      { instanceId: running.instanceId, state: 'OutOfService' },
    ]);
    await elb.deregisterInstances('web', [running.instanceId]);
    expect((await elb.findLoadBalancer('web'))?.instanceIds).toEqual([]);
  });

  it('changes only the attributes asked for, within AWS ranges', async () => {
    await elb.modifyAttributes('web', {
      crossZone: true,
      idleTimeoutSeconds: 350,
      connectionDraining: { enabled: true, timeoutSeconds: 30 },
      accessLog: { enabled: true, s3BucketName: 'logs', emitIntervalMinutes: 5 },
    });
    expect(await elb.describeAttributes('web')).toEqual({
      crossZone: true,
      idleTimeoutSeconds: 350,
      connectionDraining: { enabled: true, timeoutSeconds: 30 },
      accessLog: { enabled: true, s3BucketName: 'logs', emitIntervalMinutes: 5 },
    });
    const bad = { ...CLASSIC_ATTRIBUTE_DEFAULTS, idleTimeoutSeconds: 4001 };
    expect(codeOf(await failure(elb.modifyAttributes('web', bad)))).toBe('ValidationError');
    const noBucket = { ...CLASSIC_ATTRIBUTE_DEFAULTS, accessLog: { enabled: true } };
    expect(codeOf(await failure(elb.modifyAttributes('web', noBucket)))).toBe('InvalidConfigurationRequest');
    await elb.modifyAttributes('web', CLASSIC_ATTRIBUTE_DEFAULTS);
    expect(await elb.describeAttributes('web')).toEqual(CLASSIC_ATTRIBUTE_DEFAULTS);
  });

  it('checks health checks', async () => {
    const hc = {
      target: 'HTTP:32000/healthz',
      intervalSeconds: 10,
      timeoutSeconds: 5,
      healthyThreshold: 2,
      unhealthyThreshold: 6,
    };
    await elb.configureHealthCheck('web', hc);
    expect((await elb.findLoadBalancer('web'))?.healthCheck).toEqual(hc);
    expect(codeOf(await failure(elb.configureHealthCheck('web', { ...hc, target: 'HTTP:32000' })))).toBe(
      'ValidationError',
    );
    expect(codeOf(await failure(elb.configureHealthCheck('web', { ...hc, timeoutSeconds: 10 })))).toBe(
      'ValidationError',
    );
  });

  it('keeps proxy protocol on back ends and SSL negotiation on secure listeners', async () => {
    const proxy = {
      policyName: 'web-proxy',
      policyTypeName: 'ProxyProtocolPolicyType',
      attributes: { ProxyProtocol: 'true' },
    };
    const ssl = {
      policyName: 'web-ssl',
      policyTypeName: 'SSLNegotiationPolicyType',
      attributes: { 'Reference-Security-Policy': 'ELBSecurityPolicy-TLS-1-2-2017-01' },
    };
    await elb.createPolicy('web', proxy);
    await elb.createPolicy('web', proxy); // DuplicatePolicyName: success
    await elb.createPolicy('web', ssl);
    expect(fake.callCount('CreateLoadBalancerPolicy')).toBe(3);
    await elb.setBackendPolicies('web', 30080, ['web-proxy']);
    expect(codeOf(await failure(elb.setListenerPolicies('web', 80, ['web-ssl'])))).toBe('InvalidConfigurationRequest');
    expect(codeOf(await failure(elb.setListenerPolicies('web', 443, ['web-ssl'])))).toBe('ListenerNotFound');
    expect(codeOf(await failure(elb.setBackendPolicies('web', 30080, ['nope'])))).toBe('PolicyNotFound');
    expect(codeOf(await failure(elb.deletePolicy('web', 'web-proxy')))).toBe('InvalidConfigurationRequest');
    const described = await elb.describePolicies('web');
    expect(described.map((p) => p.policyName)).toEqual(['web-proxy', 'web-ssl']);
    // AWS expands a predefined policy into its protocols and options; the reference stays.
    expect(described[1]?.attributes).toMatchObject(ssl.attributes);
    expect((await elb.findLoadBalancer('web'))?.backendPolicies).toEqual([
      { instancePort: 30080, policyNames: ['web-proxy'] },
    ]);
    await elb.setBackendPolicies('web', 30080, []);
    await elb.deletePolicy('web', 'web-proxy');
    await elb.deletePolicy('web', 'web-proxy');
    expect((await elb.describePolicies('web')).map((p) => p.policyName)).toEqual(['web-ssl']);
  });

  it('keeps at most 50 tags and removes tags by key', async () => {
    await elb.addTags('web', { team: 'a' });
    await elb.removeTags('web', ['kubernetes.io/cluster/prod']);
    expect((await elb.describeTags(['web'])).get('web')).toEqual({ team: 'a' });
    const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    expect(codeOf(await failure(elb.addTags('web', many)))).toBe('TooManyTags');
  });
});

describe('FakeElb for tests', () => {
  it('pages DescribeLoadBalancers and counts each page', async () => {
    fake.loadBalancerQuota = 500;
    for (let i = 0; i < 401; i++) await elb.createLoadBalancer(input({ name: `lb-${i}` }));
    fake.resetCalls();
    expect(await elb.listLoadBalancers()).toHaveLength(401);
    expect(fake.callCount('DescribeLoadBalancers')).toBe(2);
  });

  it('answers TooManyLoadBalancers beyond the quota', async () => {
    fake.loadBalancerQuota = 1;
    await elb.createLoadBalancer(input());
    expect(codeOf(await failure(elb.createLoadBalancer(input({ name: 'api' }))))).toBe('TooManyLoadBalancers');
  });

  it('throttles and queues errors per operation, and counts writes', async () => {
    fake.throttle('CreateLoadBalancer', 1);
    expect(await failure(elb.createLoadBalancer(input()))).toBeInstanceOf(ThrottledError);
    fake.queueError('DescribeLoadBalancers', new Error('boom'));
    await expect(elb.findLoadBalancer('web')).rejects.toThrow('boom');
    await elb.createLoadBalancer(input());
    await elb.findLoadBalancer('web');
    expect(fake.callCount('CreateLoadBalancer')).toBe(2);
    expect(fake.writeCallCount()).toBe(2);
    expect(fake.callCount()).toBe(4);
  });
});
