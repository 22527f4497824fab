import { FakeClock } from '../../../clock.ts';
import { Elbv2Adapter } from '../../elbv2-adapter.ts';
import type {
  CreateLoadBalancerInput,
  CreateTargetGroupInput,
  HealthCheck,
  LoadBalancer,
  TargetGroup,
} from '../../elbv2-port.ts';
import { awsErrorCode } from '../../errors.ts';
import { FakeEc2, makeSubnet } from '../ec2/fake-ec2.ts';
import { FakeElbv2 } from './fake-elbv2.ts';

/**
 * What the FakeElbv2 tests share: a fake ELBv2 account linked to a fake EC2 account with two zones' subnets (and a
 * second subnet in the first zone) and one security group, reached through the real Elbv2Adapter as the
 * controller reaches it.
 */

export const VPC = 'vpc-0a1b2c3d';
export const SUBNET_A = makeSubnet({ index: 1, zone: 'eu-west-1a' });
export const SUBNET_B = makeSubnet({ index: 2, zone: 'eu-west-1b' });
export const SUBNET_A2 = makeSubnet({ index: 3, zone: 'eu-west-1a' });

export const HEALTH_CHECK: HealthCheck = {
  protocol: 'TCP',
  port: 'traffic-port',
  intervalSeconds: 30,
  timeoutSeconds: 10,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
};

export function elbv2World() {
  const clock = new FakeClock();
  const ec2 = new FakeEc2(clock);
  const fake = new FakeElbv2(clock, ec2);
  const elb = new Elbv2Adapter(fake);
  for (const s of [SUBNET_A, SUBNET_B, SUBNET_A2]) ec2.putSubnet(s);
  ec2.putSecurityGroup({ groupId: 'sg-lb', groupName: 'lb', vpcId: VPC, description: '', tags: {}, ingress: [] });

  const lb = async (input: Partial<CreateLoadBalancerInput> = {}): Promise<LoadBalancer> => {
    const created = await elb.createLoadBalancer(lbInput(input));
    if (created === 'name-taken') throw new Error(`the name ${input.name ?? 'web'} is taken`);
    return created;
  };
  const group = async (input: Partial<CreateTargetGroupInput> = {}): Promise<TargetGroup> => {
    const created = await elb.createTargetGroup(tgInput(input));
    if (created === 'name-taken') throw new Error(`the name ${input.name ?? 'web-80'} is taken`);
    return created;
  };
  /** A load balancer `web` and a target group `web-80`, not yet tied by a listener. */
  const lbWithGroup = async () => ({ lb: await lb(), group: await group() });
  return { clock, ec2, fake, elb, lb, group, lbWithGroup };
}

export function lbInput(input: Partial<CreateLoadBalancerInput> = {}): CreateLoadBalancerInput {
  return {
    name: 'web',
    scheme: 'internet-facing',
    subnetMappings: [{ subnetId: SUBNET_A.subnetId }, { subnetId: SUBNET_B.subnetId }],
    securityGroups: ['sg-lb'],
    tags: { team: 'web' },
    ...input,
  };
}

export function tgInput(input: Partial<CreateTargetGroupInput> = {}): CreateTargetGroupInput {
  return {
    name: 'web-80',
    protocol: 'TCP',
    port: 30080,
    targetType: 'instance',
    vpcId: VPC,
    healthCheck: HEALTH_CHECK,
    tags: {},
    ...input,
  };
}

/** The ELBv2 wire code behind an adapter's controller error. */
export const codeOf = (err: unknown) => awsErrorCode((err as Error).cause);

/** The error a call fails with; a call that succeeds fails the test. */
export async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the call to fail');
}
