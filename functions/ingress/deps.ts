import type { AcmPort } from '../../shared/aws/acm-port.ts';
import type { Ec2LoadBalancerNetworkPort } from '../../shared/aws/ec2-port.ts';
import type { Elbv2Port, TargetType } from '../../shared/aws/elbv2-port.ts';
import type { Wafv2Port } from '../../shared/aws/wafv2-port.ts';
import type { Clock } from '../../shared/clock.ts';
import { TerminalError } from '../../shared/errors.ts';
import type { IngressControllerKube } from '../../shared/k8s/ingress-port.ts';
import type { StackBindingsPort } from '../../shared/k8s/stack-bindings.ts';
import type { PortRange } from '../../shared/load-balancers/security-rules.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { MetricsPort } from '../../shared/observability/metrics.ts';

/** What the Ingress controller needs: its settings, Kubernetes, and the AWS ports it writes through. */
export interface IngressDeps {
  clusterName: string;
  /** The VPC the load balancers, target groups and security groups go in. */
  vpcId: string;
  /** HTTPS listeners without an `ssl-policy` (INGRESS_DEFAULT_SSL_POLICY); the reference's `ELBSecurityPolicy-2016-08`. */
  defaultSslPolicy: string;
  /** Target type without a `target-type` annotation (INGRESS_DEFAULT_TARGET_TYPE); `instance` as the reference's. */
  defaultTargetType: TargetType;
  /** Tags on every resource, over every other tag (INGRESS_DEFAULT_TAGS). */
  defaultTags: Record<string, string>;
  /** Tag keys another tool manages on our resources (SERVICE_EXTERNAL_MANAGED_TAGS): never removed. */
  externalManagedTags: string[];
  /** Requeue while a load balancer provisions or deletion waits for AWS. */
  provisioningRequeueSeconds: number;
  cleanupRequeueSeconds: number;
  /** How long a replaced load balancer keeps serving after the status moved (SERVICE_REPLACEMENT_GRACE_SECONDS). */
  replacementGraceSeconds: number;
  /** kube-apiserver's `--service-node-port-range`; default 30000-32767. */
  nodePortRange?: PortRange;
  kube: IngressControllerKube;
  /**
   * Where the group's TargetGroupBindings are kept, one per target group as the reference keeps them, so the binding
   * controller keeps the readiness gates of the Pods behind ip target groups (shared/k8s/stack-bindings.ts). Given
   * when STACK_TARGET_GROUP_BINDINGS is on; absent, none are made.
   */
  stackBindings?: StackBindingsPort;
  ec2: Ec2LoadBalancerNetworkPort;
  elbv2: Elbv2Port;
  acm: AcmPort;
  wafv2: Wafv2Port;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

/** An Ingress group asks for something that cannot be built: retrying will not help until an Ingress changes. */
export class IngressModelError extends TerminalError {}

export const DEFAULT_SSL_POLICY = 'ELBSecurityPolicy-2016-08';
