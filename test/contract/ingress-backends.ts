import { ACMClient, ImportCertificateCommand } from '@aws-sdk/client-acm';
import {
  AttachInternetGatewayCommand,
  CreateInternetGatewayCommand,
  CreateRouteCommand,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeRouteTablesCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import { CreateWebACLCommand, WAFV2Client } from '@aws-sdk/client-wafv2';
import type { IngressDeps } from '../../functions/ingress/deps.ts';
import { AcmAdapter } from '../../shared/aws/acm-adapter.ts';
import type { AcmPort } from '../../shared/aws/acm-port.ts';
import { Ec2Adapter } from '../../shared/aws/ec2-adapter.ts';
import type { Ec2Port } from '../../shared/aws/ec2-port.ts';
import { Elbv2Adapter } from '../../shared/aws/elbv2-adapter.ts';
import type { Elbv2Port } from '../../shared/aws/elbv2-port.ts';
import { importInput, RSA_EXAMPLE_COM } from '../../shared/aws/fakes/acm/testing.ts';
import { FakeWafv2 } from '../../shared/aws/fakes/wafv2/fake-wafv2.ts';
import { webAclInput } from '../../shared/aws/fakes/wafv2/testing.ts';
import { Wafv2Adapter } from '../../shared/aws/wafv2-adapter.ts';
import type { Wafv2Port } from '../../shared/aws/wafv2-port.ts';
import type { Emulator } from '../helpers/emulator.ts';
import { EMULATOR_REGION } from '../helpers/emulator.ts';
import { createIngressWorld, type IngressWorld } from '../helpers/ingress-world.ts';
import { makeNode } from '../helpers/nodes.ts';
import { NODE_GROUP } from '../helpers/service-world.ts';
import { CLUSTER } from '../helpers/world.ts';

/**
 * The two accounts the Ingress pass runs on (ingress-pass.contract.test.ts): the AWS API emulator reached through
 * the real adapters over SDK clients, and the fakes of ingress-world.ts (FakeElbv2, FakeEc2, FakeAcm, FakeWafv2
 * behind the same adapters). Kubernetes is FakeIngresses + FakeKubernetes on both. Each account is seeded alike:
 * public subnets in two or more zones tagged `kubernetes.io/role/elb`, two Nodes whose instances are in a
 * cluster-tagged security group, an imported certificate for example.com and *.example.com, a regional web ACL
 * `shop-acl`. The controller's ELBv2, ACM and WAFv2 clients record the operations they send.
 */

export const WEB_ACL_NAME = 'shop-acl';

export interface IngressAccount {
  kind: 'emulator' | 'fake';
  /** Kubernetes, the queue and the clock; its deps are replaced by `deps`. */
  world: IngressWorld;
  deps: IngressDeps;
  /** Ports that record nothing, to describe what the pass left. */
  look: { ec2: Ec2Port; elbv2: Elbv2Port; acm: AcmPort; wafv2: Wafv2Port };
  /** `service:Operation` of every request the controller's ELBv2, ACM and WAFv2 clients sent. */
  operations: Set<string>;
  certificateArn: string;
  webAclArn: string;
  nodeGroupId: string;
  /** Node name of each instance ID. */
  nodeOf: Map<string, string>;
}

type Sender = { send: (command: never) => unknown };

/** The client, with each command's operation recorded (`elbv2:CreateRule`) before it is sent. */
function recording<C extends Sender>(client: C, service: string, operations: Set<string>): C {
  const send = (client.send as (command: object) => unknown).bind(client);
  const wrapped = {
    send(command: object) {
      operations.add(`${service}:${command.constructor.name.replace(/Command$/, '')}`);
      return send(command);
    },
  };
  return wrapped as unknown as C;
}

function recordedPorts(
  clients: { elbv2: ElbSender; acm: AcmSender; wafv2: WafSender },
  operations: Set<string>,
): Pick<IngressDeps, 'elbv2' | 'acm' | 'wafv2'> {
  return {
    elbv2: new Elbv2Adapter(recording(clients.elbv2, 'elbv2', operations)),
    acm: new AcmAdapter(recording(clients.acm, 'acm', operations)),
    wafv2: new Wafv2Adapter(recording(clients.wafv2, 'wafv2', operations)),
  };
}

type ElbSender = Pick<ElasticLoadBalancingV2Client, 'send'>;
type AcmSender = Pick<ACMClient, 'send'>;
type WafSender = Pick<WAFV2Client, 'send'>;

/** The fakes of ingress-world.ts, with a FakeWafv2 (linked to the FakeElbv2 account) for the web ACL. */
export async function fakeAccount(): Promise<IngressAccount> {
  const world = createIngressWorld();
  const nodeOf = new Map<string, string>();
  for (const index of [1, 2]) {
    const { instance, node } = world.addNode(index);
    nodeOf.set(instance.instanceId, node.metadata.name);
  }
  const waf = new FakeWafv2(world.clock, (arn) => world.elbv2.loadBalancers.has(arn));
  const imported = await world.acm.send(new ImportCertificateCommand(importInput(RSA_EXAMPLE_COM)));
  const acl = await waf.send(new CreateWebACLCommand(webAclInput(WEB_ACL_NAME)));
  const operations = new Set<string>();
  return {
    kind: 'fake',
    world,
    deps: {
      ...world.ingressDeps,
      ...recordedPorts({ elbv2: world.elbv2, acm: world.acm, wafv2: waf }, operations),
    },
    look: {
      ec2: world.ec2Port,
      elbv2: world.elbv2Port,
      acm: new AcmAdapter(world.acm),
      wafv2: new Wafv2Adapter(waf),
    },
    operations,
    certificateArn: imported.CertificateArn!,
    webAclArn: acl.Summary!.ARN!,
    nodeGroupId: NODE_GROUP,
    nodeOf,
  };
}

const tagged = (resourceType: 'subnet' | 'security-group', tags: Record<string, string>) => ({
  TagSpecifications: [
    { ResourceType: resourceType, Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) },
  ],
});

/** A fresh emulator account (reset), seeded as the fake one is; Kubernetes stays on the fakes. */
export async function emulatorAccount(emulator: Emulator): Promise<IngressAccount> {
  await emulator.reset();
  const ec2 = new EC2Client(emulator.clientConfig);
  const elbv2 = new ElasticLoadBalancingV2Client(emulator.clientConfig);
  const acm = new ACMClient(emulator.clientConfig);
  const wafv2 = new WAFV2Client(emulator.clientConfig);

  const vpcId = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc!.VpcId!;
  // Public subnets: the VPC's main route table routes to an internet gateway.
  const gateway = (await ec2.send(new CreateInternetGatewayCommand({}))).InternetGateway!.InternetGatewayId!;
  await ec2.send(new AttachInternetGatewayCommand({ InternetGatewayId: gateway, VpcId: vpcId }));
  const tables = await ec2.send(
    new DescribeRouteTablesCommand({
      Filters: [
        { Name: 'vpc-id', Values: [vpcId] },
        { Name: 'association.main', Values: ['true'] },
      ],
    }),
  );
  await ec2.send(
    new CreateRouteCommand({
      RouteTableId: tables.RouteTables![0]!.RouteTableId!,
      DestinationCidrBlock: '0.0.0.0/0',
      GatewayId: gateway,
    }),
  );
  const zones = ['a', 'b', 'c'].map((z) => `${EMULATOR_REGION}${z}`);
  const subnets: string[] = [];
  for (const [i, zone] of zones.entries()) {
    const created = await ec2.send(
      new CreateSubnetCommand({
        VpcId: vpcId,
        CidrBlock: `10.0.${10 + i}.0/24`,
        AvailabilityZone: zone,
        ...tagged('subnet', { Name: `public-${zone}`, 'kubernetes.io/role/elb': '1' }),
      }),
    );
    subnets.push(created.Subnet!.SubnetId!);
  }
  const nodeGroupId = (
    await ec2.send(
      new CreateSecurityGroupCommand({
        GroupName: 'nodes',
        Description: 'cluster nodes',
        VpcId: vpcId,
        ...tagged('security-group', { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' }),
      }),
    )
  ).GroupId!;

  const world = createIngressWorld();
  const nodeOf = new Map<string, string>();
  for (const index of [1, 2]) {
    const launched = await ec2.send(
      new RunInstancesCommand({
        ImageId: 'ami-12c6146b',
        InstanceType: 'm5.large',
        MinCount: 1,
        MaxCount: 1,
        SubnetId: subnets[index % subnets.length],
        SecurityGroupIds: [nodeGroupId],
      }),
    );
    const instance = launched.Instances![0]!;
    const name = `node-${index}`;
    nodeOf.set(instance.InstanceId!, name);
    world.kube.putNode(
      makeNode(name, {
        providerID: `aws:///${instance.Placement!.AvailabilityZone}/${instance.InstanceId}`,
        initialized: true,
      }),
    );
  }
  const imported = await acm.send(new ImportCertificateCommand(importInput(RSA_EXAMPLE_COM)));
  const acl = await wafv2.send(new CreateWebACLCommand(webAclInput(WEB_ACL_NAME)));

  const operations = new Set<string>();
  const look = {
    ec2: new Ec2Adapter(ec2),
    elbv2: new Elbv2Adapter(elbv2),
    acm: new AcmAdapter(acm),
    wafv2: new Wafv2Adapter(wafv2),
  };
  return {
    kind: 'emulator',
    world,
    deps: { ...world.ingressDeps, vpcId, ec2: look.ec2, ...recordedPorts({ elbv2, acm, wafv2 }, operations) },
    look,
    operations,
    certificateArn: imported.CertificateArn!,
    webAclArn: acl.Summary!.ARN!,
    nodeGroupId,
    nodeOf,
  };
}
