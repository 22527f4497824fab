import {
  AutoScalingClient,
  CreateAutoScalingGroupCommand,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
  PutLifecycleHookCommand,
  TerminateInstanceInAutoScalingGroupCommand,
} from '@aws-sdk/client-auto-scaling';
import { CreateLaunchTemplateCommand, CreateSubnetCommand, CreateVpcCommand, EC2Client } from '@aws-sdk/client-ec2';
import { AutoScalingAdapter } from '../../shared/aws/autoscaling-adapter.ts';
import type { AutoScalingPort } from '../../shared/aws/autoscaling-port.ts';
import { FakeAutoScaling } from '../../shared/aws/fakes/autoscaling/fake-autoscaling.ts';
import { FakeClock } from '../../shared/clock.ts';
import { EMULATOR_AVAILABLE, EMULATOR_REGION, type Emulator, startEmulator } from '../helpers/emulator.ts';
import type { BackendFactory } from './backends.ts';

/**
 * The two backends of the Auto Scaling contract suite: `AutoScalingAdapter` over the AWS API emulator and over
 * `FakeAutoScaling`. The port cannot make groups or terminate instances, so a seed does, with the same Auto
 * Scaling commands on both (the fake answers them too); only the emulator needs the EC2 side (a VPC, a subnet and
 * a launch template to launch from).
 */

export interface AutoScalingSeed {
  /** A group of `instances` InService instances with a termination hook; the instance IDs. */
  group(input: {
    name: string;
    instances: number;
    hook: { name: string; heartbeatTimeoutSeconds: number; defaultResult: 'CONTINUE' | 'ABANDON' };
  }): Promise<string[]>;
  /** TerminateInstanceInAutoScalingGroup: a scale-in that a termination hook holds in Terminating:Wait. */
  terminate(instanceId: string): Promise<void>;
  /** The instance's lifecycle state in its group; undefined when the group no longer has it. */
  lifecycleState(instanceId: string): Promise<string | undefined>;
}

export interface AutoScalingBackend {
  port: AutoScalingPort;
  seed: AutoScalingSeed;
}

/** An AMI the emulator knows. */
const EMULATOR_AMI = 'ami-12c6146b';

type Sender = Pick<AutoScalingClient, 'send'>;

function seedOver(
  client: Sender,
  launchTemplate: (group: string) => Promise<{ name: string; subnetId?: string }>,
): AutoScalingSeed {
  return {
    async group({ name, instances, hook }) {
      const template = await launchTemplate(name);
      await client.send(
        new CreateAutoScalingGroupCommand({
          AutoScalingGroupName: name,
          LaunchTemplate: { LaunchTemplateName: template.name, Version: '$Latest' },
          MinSize: 0,
          MaxSize: instances,
          DesiredCapacity: instances,
          ...(template.subnetId ? { VPCZoneIdentifier: template.subnetId } : {}),
        }),
      );
      await client.send(
        new PutLifecycleHookCommand({
          AutoScalingGroupName: name,
          LifecycleHookName: hook.name,
          LifecycleTransition: 'autoscaling:EC2_INSTANCE_TERMINATING',
          HeartbeatTimeout: hook.heartbeatTimeoutSeconds,
          DefaultResult: hook.defaultResult,
        }),
      );
      // The hook applies to instances terminated from now on: the ones already in service are the ones to scale in.
      return listInstances(client, name);
    },
    async terminate(instanceId) {
      await client.send(
        new TerminateInstanceInAutoScalingGroupCommand({
          InstanceId: instanceId,
          ShouldDecrementDesiredCapacity: true,
        }),
      );
    },
    async lifecycleState(instanceId) {
      const output = await client.send(new DescribeAutoScalingInstancesCommand({ InstanceIds: [instanceId] }));
      return output.AutoScalingInstances?.[0]?.LifecycleState;
    },
  };
}

async function listInstances(client: Sender, group: string): Promise<string[]> {
  const output = await client.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [group] }));
  return (output.AutoScalingGroups?.[0]?.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
}

function emulatorFactory(): BackendFactory<AutoScalingBackend> {
  let emulator: Emulator | undefined;
  return {
    kind: 'emulator',
    available: EMULATOR_AVAILABLE,
    async start() {
      emulator = await startEmulator();
    },
    async fresh() {
      if (!emulator) throw new Error('emulator backend not started');
      await emulator.reset();
      const ec2 = new EC2Client(emulator.clientConfig);
      const autoscaling = new AutoScalingClient(emulator.clientConfig);
      const seed = seedOver(autoscaling, async (group) => {
        const vpcId = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc?.VpcId;
        const subnet = await ec2.send(
          new CreateSubnetCommand({ VpcId: vpcId, CidrBlock: '10.0.1.0/24', AvailabilityZone: `${EMULATOR_REGION}a` }),
        );
        const name = `${group}-template`;
        await ec2.send(
          new CreateLaunchTemplateCommand({
            LaunchTemplateName: name,
            LaunchTemplateData: { ImageId: EMULATOR_AMI, InstanceType: 'm5.large' },
          }),
        );
        return { name, subnetId: subnet.Subnet?.SubnetId };
      });
      return { port: new AutoScalingAdapter(autoscaling), seed };
    },
    async stop() {
      await emulator?.stop();
      emulator = undefined;
    },
  };
}

function fakeFactory(): BackendFactory<AutoScalingBackend> {
  return {
    kind: 'fake',
    available: true,
    async start() {},
    async fresh() {
      const fake = new FakeAutoScaling(new FakeClock());
      return {
        port: new AutoScalingAdapter(fake),
        seed: seedOver(fake, async (group) => ({ name: `${group}-template` })),
      };
    },
    async stop() {},
  };
}

export function autoScalingBackends(): BackendFactory<AutoScalingBackend>[] {
  return [emulatorFactory(), fakeFactory()];
}
