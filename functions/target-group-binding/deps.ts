import type { Ec2LoadBalancerNetworkPort } from '../../shared/aws/ec2-port.ts';
import type { Elbv2Port } from '../../shared/aws/elbv2-port.ts';
import type { Clock } from '../../shared/clock.ts';
import type { TgbControllerKube } from '../../shared/k8s/tgb-port.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { MetricsPort } from '../../shared/observability/metrics.ts';

/** What the TargetGroupBinding controller needs: its settings, Kubernetes, and the AWS ports it writes through. */
export interface TgbDeps {
  clusterName: string;
  /** The cluster's VPC when the stage sets one (VPC_ID): a binding whose target group is in another VPC is refused. */
  vpcId?: string;
  /** How soon a binding is looked at again while a gated Pod's target is not yet healthy (TGB_READINESS_REQUEUE_SECONDS). */
  readinessRequeueSeconds: number;
  /** Whether the reference controller's leader Lease is checked first (always, deployed; tests of other things may skip it). */
  checkLbcLease: boolean;
  kube: TgbControllerKube;
  ec2: Ec2LoadBalancerNetworkPort;
  elbv2: Elbv2Port;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

export const DEFAULT_READINESS_REQUEUE_SECONDS = 10;
