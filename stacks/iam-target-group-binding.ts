import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { clusterResourceCondition, explicitActions, requireActions, SHARED_RESOURCE_WRITES } from './iam.ts';

/**
 * The TargetGroupBinding controller's grants that stacks/iam.ts's helpers cannot express (stacks/target-group-binding.ts
 * has them all).
 *
 * A TargetGroupBinding names a target group the user made (Terraform, CloudFormation, the console): it carries no tag
 * of ours and never will, since the controller never changes, tags or deletes it. So registering and deregistering
 * targets is granted on target group ARNs without a tag condition (`targetRegistration`), as the AWS Load Balancer
 * Controller's own policy grants them. That is the one write here not confined to this cluster's resources; it
 * changes which targets a target group has, nothing else of it, and no other action comes with it.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 * https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/installation/
 */

/** Registering and deregistering targets: the only writes allowed on a target group this cluster does not own. */
export const TARGET_REGISTRATION_ACTIONS: ReadonlySet<string> = new Set([
  'elasticloadbalancing:RegisterTargets',
  'elasticloadbalancing:DeregisterTargets',
]);

/** A target group's ARN, as text: `arn:<partition>:elasticloadbalancing:<region>:<account>:targetgroup/<name>/<id>`. */
export const TARGET_GROUP_ARN = /^arn:[^:]+:elasticloadbalancing:[^:]*:[^:]*:targetgroup\/.+$/;

/** `TARGET_REGISTRATION_ACTIONS` on target group ARNs, any tags. `policy-rules.ts` accepts this shape only. */
export function targetRegistration(props: { targetGroups: string; sid?: string }): PolicyStatement {
  const actions = explicitActions([...TARGET_REGISTRATION_ACTIONS]);
  if (props.targetGroups === '*' || !props.targetGroups.includes(':targetgroup/')) {
    throw new Error(`targetRegistration takes target group ARNs (…:targetgroup/…), not ${props.targetGroups}`);
  }
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [props.targetGroups],
  });
}

/**
 * The binding's `networking.ingress` rules on the target network interfaces' security group: added and revoked only
 * on groups tagged `kubernetes.io/cluster/<cluster>` (`owned` or `shared`), and only in the cluster's VPC when the
 * stage names it. stacks/iam.ts's `clusterResourceWrite` always names a VPC; a binding controller deployed without
 * `CCM_VPC_ID` has none to name, and the tag alone confines it (`policy-rules.ts` checks the tag).
 */
export function bindingRuleWrites(props: {
  clusterName: string;
  securityGroups: string;
  /** The ARN of the VPC the groups must be in, when the stage names one. */
  vpcArn?: string;
  sid?: string;
}): PolicyStatement {
  const actions = explicitActions([...SHARED_RESOURCE_WRITES]);
  requireActions(
    actions,
    (a) => SHARED_RESOURCE_WRITES.has(a),
    (others) => `bindingRuleWrites is only for security group rules, not ${others}`,
  );
  return new PolicyStatement({
    ...(props.sid ? { sid: props.sid } : {}),
    effect: Effect.ALLOW,
    actions,
    resources: [props.securityGroups],
    conditions: {
      ...clusterResourceCondition(props.clusterName),
      ...(props.vpcArn ? { ArnEquals: { 'ec2:Vpc': props.vpcArn } } : {}),
    },
  });
}
