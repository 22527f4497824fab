import type { Stack } from 'aws-cdk-lib';
import type { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { StageConfig } from './config.ts';
import { tgbEnvironment } from './config-tgb.ts';
import type { ControlPlaneContext } from './context.ts';
import { ec2Describe, elbv2Describe } from './iam.ts';
import { bindingRuleWrites, targetRegistration } from './iam-target-group-binding.ts';
import { type Reconciler, reconciler } from './reconciler.ts';

/**
 * The TargetGroupBinding controller (functions/target-group-binding, docs/target-group-binding.md): it registers the
 * Pods or Nodes behind a Service in a target group the user made, deregisters those it registered, and adds and
 * revokes the binding's `networking.ingress` rules on the targets' security group. It creates, changes, tags and
 * deletes no load balancer, listener, target group or security group: the user owns them.
 *
 * Its grants: reading target groups and their targets' health, the instances and network interfaces the targets
 * are on and their security groups; registering and deregistering targets on any target group (untagged: the user's;
 * stacks/iam-target-group-binding.ts); rules only on groups tagged for this cluster.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 */
export function targetGroupBindingReconciler(
  stack: Stack,
  ctx: ControlPlaneContext,
  binding: NonNullable<StageConfig['targetGroupBinding']>,
): Reconciler {
  return reconciler(stack, ctx, 'target-group-binding', {
    description: 'registers Pods or Nodes in the target groups TargetGroupBindings name, with Pod readiness gates',
    permissions: targetGroupBindingStatements(stack, ctx.config.clusterName, ctx.config.region, binding),
    environment: tgbEnvironment(binding),
  });
}

/** Everything the binding controller may call in AWS, for one stage. */
export function targetGroupBindingStatements(
  stack: Stack,
  clusterName: string,
  region: string,
  binding: NonNullable<StageConfig['targetGroupBinding']>,
): PolicyStatement[] {
  const arn = (service: string, resource: string, resourceName: string) =>
    stack.formatArn({ service, region, resource, resourceName });
  return [
    ec2Describe('DescribeInstances', 'DescribeNetworkInterfaces', 'DescribeSecurityGroups'),
    elbv2Describe('DescribeTargetGroups', 'DescribeTargetHealth'),
    targetRegistration({ sid: 'TargetRegistration', targetGroups: arn('elasticloadbalancing', 'targetgroup', '*/*') }),
    bindingRuleWrites({
      sid: 'SecurityGroupRules',
      clusterName,
      securityGroups: arn('ec2', 'security-group', '*'),
      ...(binding.vpcId ? { vpcArn: arn('ec2', 'vpc', binding.vpcId) } : {}),
    }),
  ];
}
