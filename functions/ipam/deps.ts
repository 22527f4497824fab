import type { Ec2Facts } from '../../shared/aws/ec2-facts.ts';
import type { Ec2InterfacePort } from '../../shared/aws/ec2-port.ts';
import type { Clock } from '../../shared/clock.ts';
import type { IpamKubernetesPort } from '../../shared/k8s/ipam-port.ts';
import type { KubernetesPort } from '../../shared/k8s/port.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { MetricsPort } from '../../shared/observability/metrics.ts';

/** The EC2 calls the IP address manager makes: reads of instances, types, subnets and interfaces; address writes. */
export type IpamEc2 = Pick<
  Ec2InterfacePort,
  | 'describeInstances'
  | 'describeInstanceTypes'
  | 'describeSubnets'
  | 'describeNetworkInterfaces'
  | 'assignPrivateIpAddresses'
  | 'unassignPrivateIpAddresses'
  | 'deleteNetworkInterface'
  | 'createTags'
  | 'deleteTags'
>;

/** What the IP address manager (reconciler.ts) is given: the handler builds it, the tests give fakes. */
export interface IpamDeps {
  clusterName: string;
  /** The garbage collector only looks at network interfaces in this VPC. */
  vpcId?: string;
  kube: KubernetesPort;
  pods: IpamKubernetesPort;
  ec2: IpamEc2;
  /** Instance types and subnets, asked once per container. */
  facts: Ec2Facts;
  cooldownSeconds: number;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}
