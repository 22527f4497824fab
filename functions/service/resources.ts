import type { Ec2LoadBalancerNetworkPort } from '../../shared/aws/ec2-port.ts';
import { elbv2ErrorCode } from '../../shared/aws/elbv2-adapter.ts';
import type { Elbv2Port, LoadBalancer, TargetGroup } from '../../shared/aws/elbv2-port.ts';
import { awsErrorCode } from '../../shared/aws/errors.ts';
import { RetryableError } from '../../shared/errors.ts';

/**
 * AWS steps that creation, deletion and garbage collection share. Each one is safe to repeat: a resource
 * already gone counts as deleted, and a step that must wait (ENIs still draining, a listener still
 * forwarding) says so instead of failing, so the caller can finish what it can and requeue.
 */

/** The ports a step writes through: a pass's recorded ones (Events and metrics), or the raw ones (garbage collection). */
export interface AwsPorts {
  ec2: Ec2LoadBalancerNetworkPort;
  elbv2: Elbv2Port;
}

/** The AWS error code behind a controller error (its `cause`), ELBv2's `...Exception` names normalised. */
export function codeOf(err: unknown): string | undefined {
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return elbv2ErrorCode(cause) ?? awsErrorCode(cause);
}

/**
 * The load balancer, and with it its listeners: DeleteLoadBalancer deletes them (freeing their target
 * groups), and is authorized on the load balancer's own owned tag. Deleting listeners one by one first would
 * need DeleteListener on each, which IAM allows only on listeners tagged owned, and listeners made by
 * earlier versions are untagged. AWS answers success for a load balancer that is already gone.
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteLoadBalancer.html
 */
export async function deleteLoadBalancerAndListeners(lb: LoadBalancer, ports: AwsPorts): Promise<void> {
  await ports.elbv2.deleteLoadBalancer(lb.arn);
}

/** `in-use`: a listener still forwards to it (or AWS has not caught up with one just deleted). */
export async function deleteTargetGroup(group: TargetGroup, ports: AwsPorts): Promise<'deleted' | 'in-use'> {
  try {
    await ports.elbv2.deleteTargetGroup(group.arn);
    return 'deleted';
  } catch (err) {
    if (codeOf(err) === 'ResourceInUse') return 'in-use';
    throw err;
  }
}

/**
 * `in-use`: DependencyViolation, i.e. the network interfaces of a deleted load balancer still use it (for
 * minutes), or another group's rule references it.
 */
export async function deleteSecurityGroup(groupId: string, ports: AwsPorts): Promise<'deleted' | 'in-use'> {
  try {
    await ports.ec2.deleteSecurityGroup(groupId);
    return 'deleted';
  } catch (err) {
    if (codeOf(err) === 'DependencyViolation') return 'in-use';
    throw err;
  }
}

/** An AWS error that only means "the load balancer replacing this one has not let go of the target group yet". */
export function retryAssociationLimit(err: unknown, doing: string): never {
  if (codeOf(err) === 'TargetGroupAssociationLimit') {
    throw new RetryableError(`${doing}: the target group is still attached to another load balancer`, { cause: err });
  }
  throw err;
}
