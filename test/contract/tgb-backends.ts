import {
  AssignPrivateIpAddressesCommand,
  CreateSecurityGroupCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  EC2Client,
  RunInstancesCommand,
} from '@aws-sdk/client-ec2';
import { ElasticLoadBalancingV2Client } from '@aws-sdk/client-elastic-load-balancing-v2';
import type { TgbDeps } from '../../functions/target-group-binding/deps.ts';
import { createTgbWorld, type TgbWorld } from '../../functions/target-group-binding/testing/world.ts';
import { Ec2Adapter } from '../../shared/aws/ec2-adapter.ts';
import type { Ec2Port } from '../../shared/aws/ec2-port.ts';
import { Elbv2Adapter } from '../../shared/aws/elbv2-adapter.ts';
import type { Elbv2Port } from '../../shared/aws/elbv2-port.ts';
import type { Emulator } from '../helpers/emulator.ts';
import { EMULATOR_REGION } from '../helpers/emulator.ts';
import { makeNode } from '../helpers/nodes.ts';
import { NODE_GROUP, VPC } from '../helpers/service-world.ts';
import { CLUSTER } from '../helpers/world.ts';

/**
 * The two accounts the binding controller's passes run on (tgb-pass.contract.test.ts): the AWS API emulator reached
 * through the real adapters over SDK clients, and the fakes of functions/target-group-binding/testing/world.ts behind
 * the same adapters. Kubernetes is FakeTargetGroupBindings + FakeKubernetes on both. Each account is seeded alike: a
 * VPC, two Nodes whose instances are in a cluster-tagged security group, the first holding three Pod addresses on its
 * primary interface (as the VPC CNI gives them), and a security group `clients` for rules to name. The target groups
 * are the test's (as Terraform would make them), through `look`. The controller's EC2 and ELBv2 clients record the
 * operations they send, per step.
 */

export const POD_IPS = ['10.0.10.101', '10.0.10.102', '10.0.10.103'];

export interface TgbAccount {
  kind: 'emulator' | 'fake';
  /** Kubernetes, the queue and the clock; its deps are replaced by `deps`. */
  world: TgbWorld;
  deps: TgbDeps;
  /** Ports that record nothing: to make the user's target groups and describe what the passes left. */
  look: { ec2: Ec2Port; elbv2: Elbv2Port };
  /** `service:Operation` of every request the controller's EC2 and ELBv2 clients sent since it was last cleared. */
  operations: Set<string>;
  vpcId: string;
  nodeGroupId: string;
  clientsGroupId: string;
  /** Node name of each instance ID. */
  nodeOf: Map<string, string>;
}

type Sender = { send: (command: never) => unknown };

/** The client, with each command's operation recorded (`elbv2:RegisterTargets`) before it is sent. */
function recording<C extends Sender>(client: C, service: string, operations: Set<string>): C {
  const send = (client.send as (command: object) => unknown).bind(client);
  return {
    send(command: object) {
      operations.add(`${service}:${command.constructor.name.replace(/Command$/, '')}`);
      return send(command);
    },
  } as unknown as C;
}

/** The fakes of the binding world: Nodes 1 and 2, the first with the Pod addresses. */
export async function fakeAccount(): Promise<TgbAccount> {
  const world = createTgbWorld();
  const nodeOf = new Map<string, string>();
  const first = world.addPodNode(1, POD_IPS);
  const second = world.addNode(2);
  nodeOf.set(first.instance.instanceId, first.node.metadata.name);
  nodeOf.set(second.instance.instanceId, second.node.metadata.name);
  const clients = await world.ec2Port.createSecurityGroup({
    groupName: 'clients',
    description: 'clients of the shop',
    vpcId: VPC,
    tags: {},
  });
  const operations = new Set<string>();
  return {
    kind: 'fake',
    world,
    deps: {
      ...world.deps,
      ec2: new Ec2Adapter(recording(world.ec2, 'ec2', operations)),
      elbv2: new Elbv2Adapter(recording(world.elbv2, 'elbv2', operations)),
    },
    look: { ec2: world.ec2Port, elbv2: world.elbv2Port },
    operations,
    vpcId: VPC,
    nodeGroupId: NODE_GROUP,
    clientsGroupId: typeof clients === 'string' ? clients : clients.groupId,
    nodeOf,
  };
}

/** A fresh emulator account (reset), seeded as the fake one is; Kubernetes stays on the fakes. */
export async function emulatorAccount(emulator: Emulator): Promise<TgbAccount> {
  await emulator.reset();
  const ec2 = new EC2Client(emulator.clientConfig);
  const elbv2 = new ElasticLoadBalancingV2Client(emulator.clientConfig);
  const vpcId = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc!.VpcId!;
  const subnet = (
    await ec2.send(
      new CreateSubnetCommand({ VpcId: vpcId, CidrBlock: '10.0.10.0/24', AvailabilityZone: `${EMULATOR_REGION}a` }),
    )
  ).Subnet!.SubnetId!;
  const group = (name: string, tags: Record<string, string>) =>
    ec2.send(
      new CreateSecurityGroupCommand({
        GroupName: name,
        Description: name === 'nodes' ? 'cluster nodes' : 'clients of the shop',
        VpcId: vpcId,
        ...(Object.keys(tags).length > 0
          ? {
              TagSpecifications: [
                {
                  ResourceType: 'security-group',
                  Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
                },
              ],
            }
          : {}),
      }),
    );
  const nodeGroupId = (await group('nodes', { [`kubernetes.io/cluster/${CLUSTER}`]: 'owned' })).GroupId!;
  const clientsGroupId = (await group('clients', {})).GroupId!;

  const world = createTgbWorld();
  const nodeOf = new Map<string, string>();
  for (const index of [1, 2]) {
    const launched = await ec2.send(
      new RunInstancesCommand({
        ImageId: 'ami-12c6146b',
        InstanceType: 'm5.large',
        MinCount: 1,
        MaxCount: 1,
        SubnetId: subnet,
        SecurityGroupIds: [nodeGroupId],
      }),
    );
    const instance = launched.Instances![0]!;
    if (index === 1) {
      await ec2.send(
        new AssignPrivateIpAddressesCommand({
          NetworkInterfaceId: instance.NetworkInterfaces![0]!.NetworkInterfaceId!,
          PrivateIpAddresses: POD_IPS,
        }),
      );
    }
    const name = `node-${index}`;
    nodeOf.set(instance.InstanceId!, name);
    world.kube.putNode(
      makeNode(name, {
        providerID: `aws:///${instance.Placement!.AvailabilityZone}/${instance.InstanceId}`,
        initialized: true,
      }),
    );
  }
  const operations = new Set<string>();
  const look = { ec2: new Ec2Adapter(ec2), elbv2: new Elbv2Adapter(elbv2) };
  return {
    kind: 'emulator',
    world,
    deps: {
      ...world.deps,
      vpcId,
      ec2: new Ec2Adapter(recording(ec2, 'ec2', operations)),
      elbv2: new Elbv2Adapter(recording(elbv2, 'elbv2', operations)),
    },
    look,
    operations,
    vpcId,
    nodeGroupId,
    clientsGroupId,
    nodeOf,
  };
}
