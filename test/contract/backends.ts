import {
  CreateNetworkInterfaceCommand,
  CreateRouteTableCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeVpcsCommand,
  EC2Client,
  RunInstancesCommand,
  StopInstancesCommand,
  type Tag,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import { Ec2Adapter } from '../../shared/aws/ec2-adapter.ts';
import type { Ec2Port, Instance, Subnet } from '../../shared/aws/ec2-port.ts';
import { Elbv2Adapter } from '../../shared/aws/elbv2-adapter.ts';
import type { Elbv2Port } from '../../shared/aws/elbv2-port.ts';
import { FakeEc2 } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElbv2 } from '../../shared/aws/fakes/elbv2/fake-elbv2.ts';
import { FakeClock } from '../../shared/clock.ts';
import { EMULATOR_AVAILABLE, EMULATOR_REGION, type Emulator, startEmulator } from '../helpers/emulator.ts';

/**
 * The two backends of the contract suite: the real adapters talking to the AWS API emulator, and the project's
 * fakes. Every behaviour test runs on both, through the port only. What a port cannot create (VPCs, subnets,
 * instances, route tables, certificates) is made by a per-backend seed, so the tests never know which backend
 * they run on. The suites run through `describeContract` (contract.ts).
 */

export type BackendKind = 'emulator' | 'fake';

/** Where a seeded instance landed; enough to find it again through the port. */
export interface SeededInstance {
  instanceId: string;
  privateDnsName: string;
  privateIpAddress: string;
  networkInterfaceId: string;
}

export interface Ec2Seed {
  /** A VPC as CreateVpc makes it: with its main route table and its `default` security group. */
  vpc(input: { cidr: string; ipv6?: boolean }): Promise<{ vpcId: string; ipv6CidrBlock?: string }>;
  /** `ipv6Index` carves the index-th /64 out of the VPC's IPv6 block (the VPC needs `ipv6: true`). */
  subnet(input: {
    vpcId: string;
    cidr: string;
    zone: string;
    ipv6Index?: number;
    tags?: Record<string, string>;
  }): Promise<{ subnetId: string; ipv6CidrBlock?: string }>;
  /** Running instances with one network interface each, in the subnet. */
  instances(input: {
    subnetId: string;
    count: number;
    tags?: Record<string, string>;
    securityGroupIds?: string[];
  }): Promise<SeededInstance[]>;
  stop(instanceIds: readonly string[]): Promise<void>;
  terminate(instanceIds: readonly string[]): Promise<void>;
  /** A standalone network interface (`available`) in the subnet, with its primary address chosen by EC2. */
  networkInterface(input: {
    subnetId: string;
    tags?: Record<string, string>;
  }): Promise<{ networkInterfaceId: string; privateIpAddress: string }>;
  routeTable(input: { vpcId: string; tags?: Record<string, string> }): Promise<string>;
}

export interface Elbv2Seed {
  /** A certificate a TLS listener can use (ACM on the emulator). */
  certificate(domain: string): Promise<string>;
}

export interface Ec2Backend {
  ec2: Ec2Port;
  seed: Ec2Seed;
}

export interface Elbv2Backend extends Ec2Backend {
  elbv2: Elbv2Port;
  elbSeed: Elbv2Seed;
}

/** One backend for a test file: started once, a fresh empty account for every test, stopped at the end. */
export interface BackendFactory<B> {
  kind: BackendKind;
  /** The emulator runs only where moto_server is installed. */
  available: boolean;
  start(): Promise<void>;
  fresh(): Promise<B>;
  stop(): Promise<void>;
}

// ---- the fakes ---------------------------------------------------------------------------------------

/**
 * The fakes behind the real adapters: each fake answers the SDK commands its adapter sends (`send`), so the fake
 * backend exercises the adapter's paging, chunking, fallbacks and error handling too, as the emulator backend does.
 */
function fakeEc2Port(fake: FakeEc2): Ec2Port {
  return new Ec2Adapter(fake);
}

function fakeElbv2Port(fake: FakeElbv2): Elbv2Port {
  return new Elbv2Adapter(fake);
}

const FAKE_ACCOUNT = '111122223333';

/** The seed of the fake account: it adds resources the way EC2 would have made them. */
function fakeEc2Seed(fake: FakeEc2): Ec2Seed {
  let counter = 0;
  const id = (prefix: string) => `${prefix}-${(++counter).toString(16).padStart(17, '0')}`;
  const vpcs = new Map<string, { cidr: string; ipv6CidrBlock?: string }>();
  const subnetHosts = new Map<string, number>();
  return {
    async vpc({ cidr, ipv6 }) {
      const vpcId = id('vpc');
      const ipv6CidrBlock = ipv6 ? `2001:db8:${counter.toString(16)}:${(counter * 256).toString(16)}::/56` : undefined;
      vpcs.set(vpcId, { cidr, ipv6CidrBlock });
      // CreateVpc makes the main route table (local route only) and the `default` security group.
      fake.putRouteTable({
        routeTableId: id('rtb'),
        vpcId,
        tags: {},
        routes: [
          { destination: cidr, target: { gatewayId: 'local' }, origin: 'CreateRouteTable' },
          ...(ipv6CidrBlock
            ? [{ destination: ipv6CidrBlock, target: { gatewayId: 'local' }, origin: 'CreateRouteTable' as const }]
            : []),
        ],
        associations: [{ main: true }],
      });
      fake.putSecurityGroup({
        groupId: id('sg'),
        groupName: 'default',
        vpcId,
        description: 'default VPC security group',
        tags: {},
        ingress: [],
      });
      return { vpcId, ...(ipv6CidrBlock ? { ipv6CidrBlock } : {}) };
    },
    async subnet({ vpcId, cidr, zone, ipv6Index, tags = {} }) {
      const vpc = vpcs.get(vpcId);
      if (!vpc) throw new Error(`seed: no VPC ${vpcId}`);
      const subnetId = id('subnet');
      const ipv6CidrBlock =
        ipv6Index !== undefined && vpc.ipv6CidrBlock ? ipv6Subnet(vpc.ipv6CidrBlock, ipv6Index) : undefined;
      const zoneInfo = fake.zones.find((z) => z.zoneName === zone);
      fake.putSubnet({
        subnetId,
        vpcId,
        availabilityZone: zone,
        availabilityZoneId: zoneInfo?.zoneId,
        cidrBlock: cidr,
        ...(ipv6CidrBlock ? { ipv6CidrBlocks: [ipv6CidrBlock] } : {}),
        tags: { ...tags },
      });
      return { subnetId, ...(ipv6CidrBlock ? { ipv6CidrBlock } : {}) };
    },
    async instances({ subnetId, count, tags = {}, securityGroupIds }) {
      const subnet = fake.subnets.get(subnetId);
      if (!subnet?.cidrBlock) throw new Error(`seed: no subnet ${subnetId}`);
      const base = ipv4ToNumber(subnet.cidrBlock.split('/')[0]!);
      const used = fake.addressesInUse();
      const seeded: SeededInstance[] = [];
      for (let n = 0; n < count; n++) {
        // EC2 keeps the first four addresses of a subnet; hosts start at .4, skipping addresses interfaces hold.
        let host = subnetHosts.get(subnetId) ?? 3;
        do host++;
        while (used.has(base + host));
        used.add(base + host);
        subnetHosts.set(subnetId, host);
        const ip = numberToIpv4(base + host);
        const instanceId = id('i');
        const networkInterfaceId = id('eni');
        const instance = fakeRunningInstance(
          subnet,
          ip,
          { instanceId, networkInterfaceId },
          { tags, securityGroupIds },
        );
        const { privateDnsName } = instance;
        fake.putInstance(instance);
        seeded.push({ instanceId, privateDnsName: privateDnsName!, privateIpAddress: ip, networkInterfaceId });
      }
      return seeded;
    },
    async stop(instanceIds) {
      for (const instanceId of instanceIds) fake.setState(instanceId, 'stopped');
    },
    async terminate(instanceIds) {
      for (const instanceId of instanceIds) fake.setState(instanceId, 'terminated');
    },
    async networkInterface({ subnetId, tags = {} }) {
      const stored = fake.putNetworkInterface({
        networkInterfaceId: id('eni'),
        subnetId,
        privateIpAddresses: [],
        ipv4Prefixes: [],
        tags: { ...tags },
      });
      return { networkInterfaceId: stored.networkInterfaceId, privateIpAddress: stored.privateIpAddresses[0]!.address };
    },
    async routeTable({ vpcId, tags = {} }) {
      const vpc = vpcs.get(vpcId);
      if (!vpc) throw new Error(`seed: no VPC ${vpcId}`);
      const routeTableId = id('rtb');
      fake.putRouteTable({
        routeTableId,
        vpcId,
        tags: { ...tags },
        routes: [{ destination: vpc.cidr, target: { gatewayId: 'local' }, origin: 'CreateRouteTable' }],
        associations: [],
      });
      return routeTableId;
    },
  };
}

function fakeBackends(): { ec2: FakeEc2; elbv2: FakeElbv2 } {
  const clock = new FakeClock();
  const ec2 = new FakeEc2(clock);
  return { ec2, elbv2: new FakeElbv2(clock, ec2) };
}

const fakeElbSeed: Elbv2Seed = {
  async certificate(domain) {
    return `arn:aws:acm:${EMULATOR_REGION}:${FAKE_ACCOUNT}:certificate/${domain.replaceAll('.', '-')}`;
  },
};

// ---- the emulator ------------------------------------------------------------------------------------

/** An AMI the emulator knows; any ID works on the fake. */
const EMULATOR_AMI = 'ami-12c6146b';

function emulatorEc2Seed(client: EC2Client): Ec2Seed {
  return {
    async vpc({ cidr, ipv6 }) {
      const created = await client.send(
        new CreateVpcCommand({ CidrBlock: cidr, ...(ipv6 ? { AmazonProvidedIpv6CidrBlock: true } : {}) }),
      );
      const vpcId = created.Vpc?.VpcId;
      if (!vpcId) throw new Error('seed: CreateVpc answered without a VPC ID');
      if (!ipv6) return { vpcId };
      const described = await client.send(new DescribeVpcsCommand({ VpcIds: [vpcId] }));
      const ipv6CidrBlock = described.Vpcs?.[0]?.Ipv6CidrBlockAssociationSet?.[0]?.Ipv6CidrBlock;
      return { vpcId, ...(ipv6CidrBlock ? { ipv6CidrBlock } : {}) };
    },
    async subnet({ vpcId, cidr, zone, ipv6Index, tags = {} }) {
      let ipv6CidrBlock: string | undefined;
      if (ipv6Index !== undefined) {
        const described = await client.send(new DescribeVpcsCommand({ VpcIds: [vpcId] }));
        const block = described.Vpcs?.[0]?.Ipv6CidrBlockAssociationSet?.[0]?.Ipv6CidrBlock;
        if (!block) throw new Error(`seed: VPC ${vpcId} has no IPv6 block`);
        ipv6CidrBlock = ipv6Subnet(block, ipv6Index);
      }
      const created = await client.send(
        new CreateSubnetCommand({
          VpcId: vpcId,
          CidrBlock: cidr,
          AvailabilityZone: zone,
          ...(ipv6CidrBlock ? { Ipv6CidrBlock: ipv6CidrBlock } : {}),
          ...tagSpecification('subnet', tags),
        }),
      );
      const subnetId = created.Subnet?.SubnetId;
      if (!subnetId) throw new Error('seed: CreateSubnet answered without a subnet ID');
      return { subnetId, ...(ipv6CidrBlock ? { ipv6CidrBlock } : {}) };
    },
    async instances({ subnetId, count, tags = {}, securityGroupIds }) {
      const created = await client.send(
        new RunInstancesCommand({
          ImageId: EMULATOR_AMI,
          InstanceType: 'm5.large',
          MinCount: count,
          MaxCount: count,
          SubnetId: subnetId,
          ...(securityGroupIds ? { SecurityGroupIds: securityGroupIds } : {}),
          ...tagSpecification('instance', tags),
        }),
      );
      return (created.Instances ?? []).map((instance) => {
        const networkInterfaceId = instance.NetworkInterfaces?.[0]?.NetworkInterfaceId;
        if (!instance.InstanceId || !instance.PrivateDnsName || !instance.PrivateIpAddress || !networkInterfaceId) {
          throw new Error('seed: RunInstances answered an instance without its network identity');
        }
        return {
          instanceId: instance.InstanceId,
          privateDnsName: instance.PrivateDnsName,
          privateIpAddress: instance.PrivateIpAddress,
          networkInterfaceId,
        };
      });
    },
    async stop(instanceIds) {
      await client.send(new StopInstancesCommand({ InstanceIds: [...instanceIds] }));
    },
    async terminate(instanceIds) {
      await client.send(new TerminateInstancesCommand({ InstanceIds: [...instanceIds] }));
    },
    async networkInterface({ subnetId, tags = {} }) {
      const created = await client.send(
        new CreateNetworkInterfaceCommand({ SubnetId: subnetId, ...tagSpecification('network-interface', tags) }),
      );
      const networkInterfaceId = created.NetworkInterface?.NetworkInterfaceId;
      const privateIpAddress = created.NetworkInterface?.PrivateIpAddress;
      if (!networkInterfaceId || !privateIpAddress)
        throw new Error('seed: CreateNetworkInterface answered without an ID');
      return { networkInterfaceId, privateIpAddress };
    },
    async routeTable({ vpcId, tags = {} }) {
      const created = await client.send(
        new CreateRouteTableCommand({ VpcId: vpcId, ...tagSpecification('route-table', tags) }),
      );
      const routeTableId = created.RouteTable?.RouteTableId;
      if (!routeTableId) throw new Error('seed: CreateRouteTable answered without an ID');
      return routeTableId;
    },
  };
}

/**
 * ACM RequestCertificate on the emulator. The project has no ACM client (it never calls ACM), so this speaks
 * ACM's JSON protocol directly; the emulator reads service and region from the credential scope and does not
 * check the signature.
 */
function emulatorElbSeed(emulator: Emulator): Elbv2Seed {
  return {
    certificate: (domain) => requestEmulatorCertificate(emulator, domain),
  };
}

/**
 * ACM RequestCertificate on the emulator, in ACM's JSON protocol (the project has no ACM client): the emulator
 * reads service and region from the credential scope and does not check the signature.
 */
export async function requestEmulatorCertificate(emulator: Emulator, domain: string): Promise<string> {
  const scope = `${emulator.clientConfig.credentials.accessKeyId}/20260101/${EMULATOR_REGION}/acm/aws4_request`;
  const response = await fetch(emulator.endpoint, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-amz-json-1.1',
      'X-Amz-Target': 'CertificateManager.RequestCertificate',
      Authorization: `AWS4-HMAC-SHA256 Credential=${scope}, SignedHeaders=host, Signature=0`,
    },
    body: JSON.stringify({ DomainName: domain, ValidationMethod: 'DNS' }),
  });
  const body = (await response.json()) as { CertificateArn?: string };
  if (!response.ok || !body.CertificateArn) throw new Error(`seed: RequestCertificate failed (${response.status})`);
  return body.CertificateArn;
}

function tagSpecification(
  resourceType: 'subnet' | 'instance' | 'route-table' | 'network-interface',
  tags: Record<string, string>,
) {
  const list: Tag[] = Object.entries(tags).map(([Key, Value]) => ({ Key, Value }));
  return list.length > 0 ? { TagSpecifications: [{ ResourceType: resourceType, Tags: list }] } : {};
}

function emulatorFactory<B>(build: (emulator: Emulator) => B): BackendFactory<B> {
  let emulator: Emulator | undefined;
  let backend: B | undefined;
  return {
    kind: 'emulator',
    available: EMULATOR_AVAILABLE,
    async start() {
      emulator = await startEmulator();
      backend = build(emulator);
    },
    async fresh() {
      if (!emulator || !backend) throw new Error('emulator backend not started');
      await emulator.reset();
      return backend;
    },
    async stop() {
      await emulator?.stop();
      emulator = undefined;
    },
  };
}

function fakeFactory<B>(build: () => B): BackendFactory<B> {
  return { kind: 'fake', available: true, async start() {}, fresh: async () => build(), async stop() {} };
}

export function ec2Backends(): BackendFactory<Ec2Backend>[] {
  return [
    emulatorFactory((emulator) => {
      const client = new EC2Client(emulator.clientConfig);
      return { ec2: new Ec2Adapter(client), seed: emulatorEc2Seed(client) };
    }),
    fakeFactory(() => {
      const { ec2 } = fakeBackends();
      return { ec2: fakeEc2Port(ec2), seed: fakeEc2Seed(ec2) };
    }),
  ];
}

export function elbv2Backends(): BackendFactory<Elbv2Backend>[] {
  return [
    emulatorFactory((emulator) => {
      const client = new EC2Client(emulator.clientConfig);
      return {
        ec2: new Ec2Adapter(client),
        seed: emulatorEc2Seed(client),
        elbv2: new Elbv2Adapter(new ElasticLoadBalancingV2Client(emulator.clientConfig)),
        elbSeed: emulatorElbSeed(emulator),
      };
    }),
    fakeFactory(() => {
      const { ec2, elbv2 } = fakeBackends();
      return { ec2: fakeEc2Port(ec2), seed: fakeEc2Seed(ec2), elbv2: fakeElbv2Port(elbv2), elbSeed: fakeElbSeed };
    }),
  ];
}

// ---- addresses ---------------------------------------------------------------------------------------

function ipv4ToNumber(ip: string): number {
  return ip.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

function numberToIpv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}

/** The index-th /64 of a /56 (the low byte of the fourth group is the subnet's). */
export function ipv6Subnet(block: string, index: number): string {
  const address = block.split('/')[0]!;
  const [head = '', tail = ''] = address.split('::');
  const groups = head.split(':').filter(Boolean);
  const missing = 8 - groups.length - tail.split(':').filter(Boolean).length;
  const full = [...groups, ...Array(missing).fill('0'), ...tail.split(':').filter(Boolean)].map((g) =>
    Number.parseInt(g, 16),
  );
  full[3] = ((full[3] ?? 0) & 0xff00) | (index & 0xff);
  return `${full
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** A running instance in the fake, as EC2 describes one just launched into `subnet` at `ip` (one primary interface). */
export function fakeRunningInstance(
  subnet: Subnet,
  ip: string,
  ids: { instanceId: string; networkInterfaceId: string },
  options: { tags?: Record<string, string>; securityGroupIds?: readonly string[] } = {},
): Instance {
  const privateDnsName = `ip-${ip.replaceAll('.', '-')}.${EMULATOR_REGION}.compute.internal`;
  return {
    instanceId: ids.instanceId,
    state: 'running',
    instanceType: 'm5.large',
    availabilityZone: subnet.availabilityZone,
    vpcId: subnet.vpcId,
    subnetId: subnet.subnetId,
    privateDnsName,
    privateIpAddress: ip,
    sourceDestCheck: true,
    networkInterfaces: [
      {
        networkInterfaceId: ids.networkInterfaceId,
        deviceIndex: 0,
        status: 'in-use',
        subnetId: subnet.subnetId,
        privateIpAddresses: [{ address: ip, primary: true, privateDnsName }],
        ipv6Addresses: [],
        sourceDestCheck: true,
        ...(options.securityGroupIds ? { securityGroupIds: [...options.securityGroupIds] } : {}),
      },
    ],
    tags: { ...(options.tags ?? {}) },
  };
}
