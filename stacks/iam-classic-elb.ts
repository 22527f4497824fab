import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { explicitActions, ownedResourceCreate, ownedResourceWrite, ownedTagRemoval, tagOnCreate } from './iam.ts';

/**
 * The service controller's grants for Classic Load Balancers (Elastic Load Balancing API 2012-06-01), exactly the
 * calls `shared/aws/elb-adapter.ts` makes, scoped as the ELBv2 ones are (stacks/iam.ts):
 * - CreateLoadBalancer only when the request tags the load balancer `kubernetes.io/cluster/<cluster>=owned`
 *   (`aws:RequestTag`), and AddTags as part of that create only (`elasticloadbalancing:CreateAction`);
 * - every other write only on a load balancer whose own tag says `owned` (`aws:ResourceTag`);
 * - RemoveTags never of the ownership tags (`ownedTagRemoval`);
 * - Describe* on `*`: they support no resource-level permissions.
 *
 * AWS's reference for "AWS Elastic Load Balancing" (the Classic API, service prefix `elasticloadbalancing`, shared
 * with ELBv2) lists for every write action the `loadbalancer` resource with `aws:ResourceTag/${TagKey}` (and
 * `elasticloadbalancing:ResourceTag/${TagKey}`), for CreateLoadBalancer and AddTags also `aws:RequestTag/${TagKey}`
 * and `aws:TagKeys`, for AddTags `elasticloadbalancing:CreateAction`, for RemoveTags `aws:TagKeys`; the Describe*
 * actions name no resource type. A Classic load balancer's ARN is
 * `arn:${Partition}:elasticloadbalancing:${Region}:${Account}:loadbalancer/${LoadBalancerName}`.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancing.html
 * https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/tagging-resources-during-creation.html
 */

/** The reads ElbAdapter makes. DescribeLoadBalancers, DescribeTags and DescribeLoadBalancerAttributes share their names with ELBv2's. */
export const CLASSIC_ELB_READ_ACTIONS: readonly string[] = [
  'elasticloadbalancing:DescribeLoadBalancers',
  'elasticloadbalancing:DescribeLoadBalancerAttributes',
  'elasticloadbalancing:DescribeLoadBalancerPolicies',
  'elasticloadbalancing:DescribeInstanceHealth',
  'elasticloadbalancing:DescribeTags',
];

/** The writes on an existing load balancer ElbAdapter makes (AddTags also tags an existing one). */
export const CLASSIC_ELB_WRITE_ACTIONS: readonly string[] = [
  'elasticloadbalancing:DeleteLoadBalancer',
  'elasticloadbalancing:CreateLoadBalancerListeners',
  'elasticloadbalancing:DeleteLoadBalancerListeners',
  'elasticloadbalancing:AttachLoadBalancerToSubnets',
  'elasticloadbalancing:DetachLoadBalancerFromSubnets',
  'elasticloadbalancing:ApplySecurityGroupsToLoadBalancer',
  'elasticloadbalancing:ConfigureHealthCheck',
  'elasticloadbalancing:ModifyLoadBalancerAttributes',
  'elasticloadbalancing:RegisterInstancesWithLoadBalancer',
  'elasticloadbalancing:DeregisterInstancesFromLoadBalancer',
  'elasticloadbalancing:CreateLoadBalancerPolicy',
  'elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer',
  'elasticloadbalancing:SetLoadBalancerPoliciesOfListener',
  'elasticloadbalancing:DeleteLoadBalancerPolicy',
  'elasticloadbalancing:AddTags',
];

/** `arn:<partition>:elasticloadbalancing:<region>:<account>:loadbalancer/<name>`: Classic names have no `/`. */
export const CLASSIC_LOAD_BALANCER_ARN = /^arn:[^:]+:elasticloadbalancing:[^:]*:[^:]*:loadbalancer\/[^/]+$/;

export function classicLoadBalancerStatements(props: {
  clusterName: string;
  /**
   * The Classic load balancers' ARN pattern, `...:loadbalancer/*`. IAM has no pattern for "no `/` in the rest", so
   * it also matches Network Load Balancers (`loadbalancer/net/...`); the actions shared with ELBv2 are granted on
   * those already under the same conditions, and the Classic-only ones do not apply to them.
   */
  loadBalancers: string;
}): PolicyStatement[] {
  const { clusterName, loadBalancers } = props;
  // The region and account may be CDK tokens (`${Token[...]}`), which hold no `/`.
  if (!CLASSIC_LOAD_BALANCER_ARN.test(loadBalancers)) {
    throw new Error(
      `classicLoadBalancerStatements takes Classic load balancer ARNs (loadbalancer/<name>), not ${loadBalancers}`,
    );
  }
  return [
    new PolicyStatement({
      sid: 'ClassicElbDescribe',
      effect: Effect.ALLOW,
      actions: explicitActions(CLASSIC_ELB_READ_ACTIONS),
      resources: ['*'],
    }),
    ownedResourceCreate({
      sid: 'ClassicLoadBalancerCreate',
      clusterName,
      actions: ['elasticloadbalancing:CreateLoadBalancer'],
      resources: [loadBalancers],
    }),
    tagOnCreate({
      sid: 'ClassicLoadBalancerTagOnCreate',
      clusterName,
      createActions: ['elasticloadbalancing:CreateLoadBalancer'],
      resources: [loadBalancers],
    }),
    ownedResourceWrite({
      sid: 'ClassicLoadBalancerWrites',
      clusterName,
      actions: CLASSIC_ELB_WRITE_ACTIONS,
      resources: [loadBalancers],
    }),
    ownedTagRemoval({
      sid: 'ClassicLoadBalancerTagRemoval',
      clusterName,
      actions: ['elasticloadbalancing:RemoveTags'],
      resources: [loadBalancers],
    }),
  ];
}
