import type { Ec2LoadBalancerNetworkPort } from '../../shared/aws/ec2-port.ts';
import type { ElbPort } from '../../shared/aws/elb-port.ts';
import type { Elbv2Port } from '../../shared/aws/elbv2-port.ts';
import type { Clock } from '../../shared/clock.ts';
import { TerminalError } from '../../shared/errors.ts';
import type { LeaseReadPort } from '../../shared/k8s/lbc-lease.ts';
import type { ServiceControllerKube } from '../../shared/k8s/service-port.ts';
import type { StackBindingsPort } from '../../shared/k8s/stack-bindings.ts';
import type { PortRange } from '../../shared/load-balancers/security-rules.ts';
import type { Log } from '../../shared/observability/log.ts';
import type { MetricsPort } from '../../shared/observability/metrics.ts';

export interface ServiceDeps {
  clusterName: string;
  /** The VPC the load balancers, target groups and security groups go in. */
  vpcId: string;
  /** `spec.loadBalancerClass` handled besides "no class" (LOAD_BALANCER_CLASS). */
  loadBalancerClass?: string;
  /** Requeue while a load balancer provisions (SERVICE_PROVISIONING_REQUEUE_SECONDS). */
  provisioningRequeueSeconds: number;
  /** Requeue while deletion waits for AWS (ENIs draining, target groups in use) (SERVICE_CLEANUP_REQUEUE_SECONDS). */
  cleanupRequeueSeconds: number;
  /**
   * How long a replaced Network Load Balancer keeps serving after the status moved to its successor, before it
   * is deleted (SERVICE_REPLACEMENT_GRACE_SECONDS); default DEFAULT_REPLACEMENT_GRACE_SECONDS.
   */
  replacementGraceSeconds?: number;
  /** kube-apiserver's `--service-node-port-range` (SERVICE_NODE_PORT_RANGE); default 30000-32767. */
  nodePortRange?: PortRange;
  /** Tag keys another tool manages on our resources (SERVICE_EXTERNAL_MANAGED_TAGS): never removed. */
  externalManagedTags?: string[];
  /**
   * Services, EndpointSlices, Nodes, Events; and the Lease reads the AWS Load Balancer Controller's Services need
   * (its leader Lease: functions/service/lbc/lease.ts).
   */
  kube: ServiceControllerKube & Partial<LeaseReadPort>;
  /**
   * Serve the Services the AWS Load Balancer Controller serves (`aws-load-balancer-type: external` / `nlb-ip`, class
   * `service.k8s.aws/nlb`) its way (SERVICE_LBC_SERVICES); off, they are left alone.
   */
  lbcServices?: boolean;
  /**
   * Where an LBC Service's TargetGroupBindings are kept, one per target group as the reference keeps them, so the
   * binding controller keeps the readiness gates of the Pods behind ip target groups (shared/k8s/stack-bindings.ts).
   * Given when STACK_TARGET_GROUP_BINDINGS is on; absent, none are made. In-tree Services never get one.
   */
  stackBindings?: StackBindingsPort;
  ec2: Ec2LoadBalancerNetworkPort;
  elbv2: Elbv2Port;
  /** Classic ELB: Services on Classic ELBs (migrated from the reference controller, or asked for). */
  elb?: ElbPort;
  /** The kind a new Service gets without the type annotation (SERVICE_DEFAULT_LOAD_BALANCER_TYPE); default `nlb`. */
  defaultLoadBalancerType?: 'nlb' | 'classic';
  /**
   * A resync pass looks quickly first and skips the full pass when nothing it sees differs; each Service still
   * gets a full pass hourly (resync-check.ts); likewise a Node-set change's pass looks quickly, then sees only to the
   * targets and Node rules. On in the deployed handler; off, every pass is a full one.
   */
  resyncQuickCheck?: boolean;
  clock: Clock;
  log: Log;
  metrics: MetricsPort;
}

/**
 * The grace a replaced NLB keeps serving: the DNS TTL of a load balancer's name (60 s), so resolvers and
 * external-dns have moved to the successor's, plus the target groups' default deregistration delay (300 s), the
 * time AWS itself gives connections in flight to finish.
 */
export const DEFAULT_REPLACEMENT_GRACE_SECONDS = 360;

/** A Service asks for something that cannot be built: retrying will not help until the Service changes. */
export class AnnotationError extends TerminalError {}
