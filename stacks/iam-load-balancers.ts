import type { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { createSecurityGroupInVpc, ownedResourceCreate, ownedResourceWrite, tagOnCreate } from './iam.ts';

/**
 * What every Elastic Load Balancing v2 controller's role grants on its own load balancers and target groups (the
 * service controller's NLBs, the Ingress controller's ALBs), in this order: creating them tagged owned, tagging in
 * the create call, and the writes IAM allows on their own owned tag. `loadBalancers` and `targetGroups` are the ARN
 * patterns the controller may touch.
 */
export function ownedLoadBalancerStatements(props: {
  clusterName: string;
  loadBalancers: string;
  targetGroups: string;
}): PolicyStatement[] {
  const { clusterName, loadBalancers, targetGroups } = props;
  return [
    ownedResourceCreate({
      sid: 'LoadBalancerCreate',
      clusterName,
      actions: ['elasticloadbalancing:CreateLoadBalancer', 'elasticloadbalancing:CreateTargetGroup'],
      resources: [loadBalancers, targetGroups],
    }),
    tagOnCreate({
      sid: 'LoadBalancerTagOnCreate',
      clusterName,
      createActions: ['elasticloadbalancing:CreateLoadBalancer', 'elasticloadbalancing:CreateTargetGroup'],
      resources: [loadBalancers, targetGroups],
    }),
    ownedResourceWrite({
      sid: 'LoadBalancerWrites',
      clusterName,
      actions: [
        'elasticloadbalancing:DeleteLoadBalancer',
        'elasticloadbalancing:SetSecurityGroups',
        'elasticloadbalancing:SetSubnets',
        'elasticloadbalancing:SetIpAddressType',
        'elasticloadbalancing:ModifyLoadBalancerAttributes',
        // A listener is authorized on its load balancer when created (the listener does not exist yet).
        'elasticloadbalancing:CreateListener',
        'elasticloadbalancing:AddTags',
      ],
      resources: [loadBalancers],
    }),
    ownedResourceWrite({
      sid: 'TargetGroupWrites',
      clusterName,
      actions: [
        'elasticloadbalancing:ModifyTargetGroup',
        'elasticloadbalancing:ModifyTargetGroupAttributes',
        'elasticloadbalancing:DeleteTargetGroup',
        'elasticloadbalancing:RegisterTargets',
        'elasticloadbalancing:DeregisterTargets',
        'elasticloadbalancing:AddTags',
      ],
      resources: [targetGroups],
    }),
  ];
}

/**
 * A load balancer controller's own security groups (a load balancer's managed group, the cluster's backend group):
 * created tagged owned in the cluster's VPC, then deleted or given the tags they lack on their owned tag.
 */
export function ownedSecurityGroupStatements(props: {
  clusterName: string;
  securityGroups: string;
  vpc: string;
}): PolicyStatement[] {
  const { clusterName, securityGroups, vpc } = props;
  return [
    ownedResourceCreate({
      sid: 'SecurityGroupCreate',
      clusterName,
      actions: ['ec2:CreateSecurityGroup'],
      resources: [securityGroups],
    }),
    createSecurityGroupInVpc([vpc], 'SecurityGroupCreateInVpc'),
    tagOnCreate({
      sid: 'SecurityGroupTagOnCreate',
      clusterName,
      createActions: ['ec2:CreateSecurityGroup'],
      resources: [securityGroups],
    }),
    ownedResourceWrite({
      sid: 'SecurityGroupWrites',
      clusterName,
      actions: ['ec2:DeleteSecurityGroup', 'ec2:CreateTags'],
      resources: [securityGroups],
    }),
  ];
}
