import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { clusterResourceCondition, explicitActions, requireActions } from './iam.ts';

/**
 * The interruption controller's Auto Scaling grants, exactly the calls `shared/aws/autoscaling-adapter.ts` makes:
 * - CompleteLifecycleAction and RecordLifecycleActionHeartbeat only on Auto Scaling groups tagged
 *   `kubernetes.io/cluster/<cluster>` (`owned` or `shared`, as `isClusterResource` reads an instance's tags):
 *   a hook of another cluster's group is never completed, so its instances are never let go early;
 * - DescribeLifecycleHooks on `*`: it names no resource type.
 *
 * AWS's reference for "Amazon EC2 Auto Scaling" lists both writes on the `autoScalingGroup` resource (required),
 * with the condition keys `aws:ResourceTag/${TagKey}` and `autoscaling:ResourceTag/${TagKey}`; the group's ARN is
 * `arn:${Partition}:autoscaling:${Region}:${Account}:autoScalingGroup:${GroupId}:autoScalingGroupName/${GroupFriendlyName}`.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2autoscaling.html
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/tag-security.html
 */

/** The Auto Scaling writes any role may be granted, and only through `lifecycleActionWrite`. */
export const AUTOSCALING_LIFECYCLE_WRITES: ReadonlySet<string> = new Set([
  'autoscaling:CompleteLifecycleAction',
  'autoscaling:RecordLifecycleActionHeartbeat',
]);

/** Completing and heartbeating lifecycle actions on this cluster's Auto Scaling groups only. */
export function lifecycleActionWrite(props: {
  clusterName: string;
  actions: readonly string[];
  /** Auto Scaling group ARN patterns. */
  resources: readonly string[];
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions(props.actions);
  requireActions(
    actions,
    (a) => AUTOSCALING_LIFECYCLE_WRITES.has(a),
    (other) => `lifecycleActionWrite is for lifecycle actions only, not ${other}`,
  );
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [...props.resources],
    conditions: clusterResourceCondition(props.clusterName),
  });
}

/** Auto Scaling Describe* calls: no resource-level permissions, so the resource is `*`. */
export function autoscalingDescribe(...operations: `Describe${string}`[]): PolicyStatement {
  return new PolicyStatement({
    sid: 'AutoScalingDescribe',
    effect: Effect.ALLOW,
    actions: explicitActions(operations.map((op) => `autoscaling:${op}`)),
    resources: ['*'],
  });
}
