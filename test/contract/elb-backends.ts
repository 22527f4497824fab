import {
  AttachInternetGatewayCommand,
  CreateInternetGatewayCommand,
  CreateRouteCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeRouteTablesCommand,
  EC2Client,
  RunInstancesCommand,
  StopInstancesCommand,
} from '@aws-sdk/client-ec2';
import { ElasticLoadBalancingClient } from '@aws-sdk/client-elastic-load-balancing';
import { Ec2Adapter } from '../../shared/aws/ec2-adapter.ts';
import type { Ec2Port } from '../../shared/aws/ec2-port.ts';
import { ElbAdapter } from '../../shared/aws/elb-adapter.ts';
import type { ElbPort } from '../../shared/aws/elb-port.ts';
import { FakeEc2 } from '../../shared/aws/fakes/ec2/fake-ec2.ts';
import { FakeElb } from '../../shared/aws/fakes/elb/fake-elb.ts';
import { FakeClock } from '../../shared/clock.ts';
import { EMULATOR_AVAILABLE, EMULATOR_REGION, type Emulator, startEmulator } from '../helpers/emulator.ts';
import { type BackendFactory, fakeRunningInstance, requestEmulatorCertificate } from './backends.ts';

/**
 * The two backends of the Classic ELB contract suite: `ElbAdapter` over the AWS API emulator, and `ElbAdapter`
 * over `FakeElb` linked to a `FakeEc2`. As in backends.ts, what the ports cannot make (VPCs with an internet
 * gateway, subnets, instances, certificates) comes from a per-backend seed, so the tests never know which backend
 * they run on. Kept apart from backends.ts because a Classic load balancer needs an internet gateway in its VPC,
 * which the EC2/ELBv2 seed does not make.
 */

export interface ElbSeed {
  /**
   * A VPC as CreateVpc makes it (main route table, `default` security group); with `internetGateway` an attached
   * internet gateway the main table routes 0.0.0.0/0 to, which an internet-facing Classic load balancer needs.
   */
  vpc(input: { cidr: string; internetGateway: boolean }): Promise<string>;
  subnet(input: { vpcId: string; cidr: string; zone: string }): Promise<string>;
  /** Running instances in the subnet; their IDs. */
  instances(input: { subnetId: string; count: number }): Promise<string[]>;
  stop(instanceIds: readonly string[]): Promise<void>;
  /** A certificate an SSL or HTTPS listener can use (ACM on the emulator). */
  certificate(domain: string): Promise<string>;
}

export interface ElbBackend {
  ec2: Ec2Port;
  elb: ElbPort;
  seed: ElbSeed;
}

// ---- the fakes ---------------------------------------------------------------------------------------

const FAKE_ACCOUNT = '111122223333';

function fakeSeed(ec2: FakeEc2): ElbSeed {
  let counter = 0;
  const id = (prefix: string) => `${prefix}-${(++counter).toString(16).padStart(17, '0')}`;
  const cidrs = new Map<string, string>();
  const hosts = new Map<string, number>();
  return {
    async vpc({ cidr, internetGateway }) {
      const vpcId = id('vpc');
      cidrs.set(vpcId, cidr);
      ec2.putRouteTable({
        routeTableId: id('rtb'),
        vpcId,
        tags: {},
        routes: [
          { destination: cidr, target: { gatewayId: 'local' }, origin: 'CreateRouteTable' },
          ...(internetGateway
            ? [{ destination: '0.0.0.0/0', target: { gatewayId: id('igw') }, origin: 'CreateRoute' as const }]
            : []),
        ],
        associations: [{ main: true }],
      });
      ec2.putSecurityGroup({
        groupId: id('sg'),
        groupName: 'default',
        vpcId,
        description: 'default VPC security group',
        tags: {},
        ingress: [],
      });
      return vpcId;
    },
    async subnet({ vpcId, cidr, zone }) {
      if (!cidrs.has(vpcId)) throw new Error(`seed: no VPC ${vpcId}`);
      const subnetId = id('subnet');
      const zoneId = ec2.zones.find((z) => z.zoneName === zone)?.zoneId;
      ec2.putSubnet({ subnetId, vpcId, availabilityZone: zone, availabilityZoneId: zoneId, cidrBlock: cidr, tags: {} });
      return subnetId;
    },
    async instances({ subnetId, count }) {
      const subnet = ec2.subnets.get(subnetId);
      if (!subnet?.cidrBlock) throw new Error(`seed: no subnet ${subnetId}`);
      const prefix = subnet.cidrBlock.split('.').slice(0, 3).join('.');
      return Array.from({ length: count }, () => {
        const instanceId = id('i');
        // EC2 keeps the first four addresses of a subnet; hosts start at .4.
        const host = (hosts.get(subnetId) ?? 3) + 1;
        hosts.set(subnetId, host);
        const ip = `${prefix}.${host}`;
        ec2.putInstance(fakeRunningInstance(subnet, ip, { instanceId, networkInterfaceId: id('eni') }));
        return instanceId;
      });
    },
    async stop(instanceIds) {
      for (const instanceId of instanceIds) ec2.setState(instanceId, 'stopped');
    },
    async certificate(domain) {
      return `arn:aws:acm:${EMULATOR_REGION}:${FAKE_ACCOUNT}:certificate/${domain.replaceAll('.', '-')}`;
    },
  };
}

// ---- the emulator ------------------------------------------------------------------------------------

/** An AMI the emulator knows. */
const EMULATOR_AMI = 'ami-12c6146b';

function emulatorSeed(emulator: Emulator, client: EC2Client): ElbSeed {
  return {
    async vpc({ cidr, internetGateway }) {
      const vpcId = (await client.send(new CreateVpcCommand({ CidrBlock: cidr }))).Vpc?.VpcId;
      if (!vpcId) throw new Error('seed: CreateVpc answered without a VPC ID');
      if (!internetGateway) return vpcId;
      const gatewayId = (await client.send(new CreateInternetGatewayCommand({}))).InternetGateway?.InternetGatewayId;
      if (!gatewayId) throw new Error('seed: CreateInternetGateway answered without an ID');
      await client.send(new AttachInternetGatewayCommand({ InternetGatewayId: gatewayId, VpcId: vpcId }));
      const tables = await client.send(
        new DescribeRouteTablesCommand({
          Filters: [
            { Name: 'vpc-id', Values: [vpcId] },
            { Name: 'association.main', Values: ['true'] },
          ],
        }),
      );
      const mainTable = tables.RouteTables?.[0]?.RouteTableId;
      if (!mainTable) throw new Error(`seed: VPC ${vpcId} has no main route table`);
      await client.send(
        new CreateRouteCommand({ RouteTableId: mainTable, DestinationCidrBlock: '0.0.0.0/0', GatewayId: gatewayId }),
      );
      return vpcId;
    },
    async subnet({ vpcId, cidr, zone }) {
      const created = await client.send(
        new CreateSubnetCommand({ VpcId: vpcId, CidrBlock: cidr, AvailabilityZone: zone }),
      );
      const subnetId = created.Subnet?.SubnetId;
      if (!subnetId) throw new Error('seed: CreateSubnet answered without a subnet ID');
      return subnetId;
    },
    async instances({ subnetId, count }) {
      const created = await client.send(
        new RunInstancesCommand({
          ImageId: EMULATOR_AMI,
          InstanceType: 'm5.large',
          MinCount: count,
          MaxCount: count,
          SubnetId: subnetId,
        }),
      );
      return (created.Instances ?? []).map((instance) => {
        if (!instance.InstanceId) throw new Error('seed: RunInstances answered an instance without an ID');
        return instance.InstanceId;
      });
    },
    async stop(instanceIds) {
      await client.send(new StopInstancesCommand({ InstanceIds: [...instanceIds] }));
    },
    /**
     * ACM RequestCertificate, in ACM's JSON protocol (the project has no ACM client): the emulator reads service
     * and region from the credential scope and does not check the signature. Its CreateLoadBalancer refuses a
     * certificate ACM does not have (CertificateNotFound), as AWS does.
     */
    certificate: (domain) => requestEmulatorCertificate(emulator, domain),
  };
}

// ---- the factories -----------------------------------------------------------------------------------

function emulatorFactory(): BackendFactory<ElbBackend> {
  let emulator: Emulator | undefined;
  let backend: ElbBackend | undefined;
  return {
    kind: 'emulator',
    available: EMULATOR_AVAILABLE,
    async start() {
      emulator = await startEmulator();
      const ec2 = new EC2Client(emulator.clientConfig);
      backend = {
        ec2: new Ec2Adapter(ec2),
        elb: new ElbAdapter(new ElasticLoadBalancingClient(emulator.clientConfig)),
        seed: emulatorSeed(emulator, ec2),
      };
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

function fakeFactory(): BackendFactory<ElbBackend> {
  return {
    kind: 'fake',
    available: true,
    async start() {},
    async fresh() {
      const clock = new FakeClock();
      const ec2 = new FakeEc2(clock);
      // AWS's own quota is 20 a region unless raised; the listing test makes more, as an account with a raised
      // quota may have.
      const elb = Object.assign(new FakeElb(clock, ec2), { loadBalancerQuota: 1000 });
      return { ec2: new Ec2Adapter(ec2), elb: new ElbAdapter(elb), seed: fakeSeed(ec2) };
    },
    async stop() {},
  };
}

export function elbBackends(): BackendFactory<ElbBackend>[] {
  return [emulatorFactory(), fakeFactory()];
}
