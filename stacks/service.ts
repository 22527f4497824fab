import type { Stack } from 'aws-cdk-lib';
import type { StageConfig } from './config.ts';
import type { ControlPlaneContext } from './context.ts';
import {
  clusterResourceWrite,
  ec2Describe,
  elbv2Describe,
  listenerTagBackfill,
  ownedResourceWrite,
  ownedTagRemoval,
  tagOnCreate,
} from './iam.ts';
import { classicLoadBalancerStatements } from './iam-classic-elb.ts';
import { adoptionTagging, trackedTagRemoval } from './iam-ingress.ts';
import { ownedLoadBalancerStatements, ownedSecurityGroupStatements } from './iam-load-balancers.ts';
import { type Reconciler, reconciler } from './reconciler.ts';

/** The AWS Load Balancer Controller's tracking tags on what it makes for a Service (kept by every tag removal). */
const SERVICE_TRACKING_TAGS = ['elbv2.k8s.aws/cluster', 'service.k8s.aws/stack', 'service.k8s.aws/resource'];

/**
 * The Service load-balancer controller (docs/adr/0005-service-load-balancers.md): Network Load Balancers,
 * their listeners and target groups, and security groups, in the one VPC configured. It creates only what
 * the request tags `kubernetes.io/cluster/<cluster>=owned`, and changes or deletes only what carries that
 * tag, with two exceptions the tags cannot express (stacks/iam.ts): rules on the Nodes' security groups,
 * which may be `shared` with the cluster, and tagging listeners that earlier versions created untagged.
 * It removes tags only from what is owned, and never the ownership tags themselves (`ownedTagRemoval`).
 *
 * With `CCM_LBC_SERVICES=true` it serves the AWS Load Balancer Controller's Services too, whose Network Load
 * Balancer, listeners, target groups and security group that controller may have made: as the Ingress role
 * (stacks/iam-ingress.ts), it may then tag ours what carries `elbv2.k8s.aws/cluster=<this cluster>` (adding only the
 * two cluster tags), and its tag removal keeps the reference's tracking tags as well as the ownership tags. With
 * `CCM_TARGET_GROUP_BINDING=true` it keeps their TargetGroupBindings too (STACK_TARGET_GROUP_BINDINGS): Kubernetes
 * objects, granted by its ClusterRole (deploy/README-deploy.md), nothing in AWS.
 *
 * Exactly the calls functions/service makes through shared/aws/ec2-adapter.ts and elbv2-adapter.ts.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 */
export function serviceReconciler(
  stack: Stack,
  ctx: ControlPlaneContext,
  services: NonNullable<StageConfig['services']>,
): Reconciler {
  const { clusterName, region } = ctx.config;
  const arn = (service: 'ec2' | 'elasticloadbalancing', resource: string, resourceName: string) =>
    stack.formatArn({ service, region, resource, resourceName });
  const vpc = arn('ec2', 'vpc', services.vpcId);
  const securityGroups = arn('ec2', 'security-group', '*');
  const loadBalancers = arn('elasticloadbalancing', 'loadbalancer', 'net/*/*');
  const targetGroups = arn('elasticloadbalancing', 'targetgroup', '*/*');
  const listeners = arn('elasticloadbalancing', 'listener', 'net/*/*/*');
  // Classic load balancers are named, not typed: loadbalancer/<name>.
  const classicLoadBalancers = arn('elasticloadbalancing', 'loadbalancer', '*');
  return reconciler(stack, ctx, 'service', {
    description: 'Network Load Balancers and Classic ELBs for type: LoadBalancer Services, and their cleanup',
    permissions: [
      ec2Describe(
        'DescribeInstances',
        'DescribeAvailabilityZones',
        'DescribeSubnets',
        'DescribeRouteTables',
        'DescribeSecurityGroups',
      ),
      elbv2Describe(
        'DescribeLoadBalancers',
        'DescribeLoadBalancerAttributes',
        'DescribeListeners',
        'DescribeListenerCertificates',
        'DescribeListenerAttributes',
        'DescribeTargetGroups',
        'DescribeTargetGroupAttributes',
        'DescribeTargetHealth',
        'DescribeTags',
      ),
      // Our groups: a load balancer's managed group, the cluster's backend group.
      ...ownedSecurityGroupStatements({ clusterName, securityGroups, vpc }),
      // Removing tags a Service no longer asks for from our groups; never the ownership or role tags (nor, serving
      // the reference's Services, its tracking tags).
      services.lbcServices
        ? trackedTagRemoval({
            sid: 'SecurityGroupTagRemoval',
            clusterName,
            actions: ['ec2:DeleteTags'],
            resources: [securityGroups],
            trackingTags: SERVICE_TRACKING_TAGS,
          })
        : ownedTagRemoval({
            sid: 'SecurityGroupTagRemoval',
            clusterName,
            actions: ['ec2:DeleteTags'],
            resources: [securityGroups],
          }),
      // Rules on our groups and on the Nodes' cluster-tagged groups, which are often only shared with us.
      clusterResourceWrite({
        sid: 'SecurityGroupRules',
        clusterName,
        actions: ['ec2:AuthorizeSecurityGroupIngress', 'ec2:RevokeSecurityGroupIngress'],
        resources: [securityGroups],
        vpcArn: vpc,
      }),
      ...ownedLoadBalancerStatements({ clusterName, loadBalancers, targetGroups }),
      // Listeners are born tagged owned, in the CreateListener call (authorized on the load balancer above).
      tagOnCreate({
        sid: 'ListenerTagOnCreate',
        clusterName,
        createActions: ['elasticloadbalancing:CreateListener'],
        resources: [listeners],
      }),
      // aws:ResourceTag here is the listener's own tags. The certificate and attribute calls are authorized on
      // the listener too (the service authorization reference lists listener/net for each, no certificate type).
      ownedResourceWrite({
        sid: 'ListenerWrites',
        clusterName,
        actions: [
          'elasticloadbalancing:ModifyListener',
          'elasticloadbalancing:ModifyListenerAttributes',
          'elasticloadbalancing:AddListenerCertificates',
          'elasticloadbalancing:RemoveListenerCertificates',
          'elasticloadbalancing:DeleteListener',
          'elasticloadbalancing:AddTags',
        ],
        resources: [listeners],
      }),
      // The one exception: tagging listeners earlier versions made untagged (listenerTagBackfill says why).
      listenerTagBackfill({ sid: 'ListenerTagBackfill', clusterName, resources: [listeners] }),
      // Removing tags a Service no longer asks for (additional-resource-tags), each resource's own owned tag
      // deciding; never the ownership tags themselves (nor, serving the reference's Services, its tracking tags).
      services.lbcServices
        ? trackedTagRemoval({
            sid: 'LoadBalancerTagRemoval',
            clusterName,
            actions: ['elasticloadbalancing:RemoveTags'],
            resources: [loadBalancers, targetGroups, listeners],
            trackingTags: SERVICE_TRACKING_TAGS,
          })
        : ownedTagRemoval({
            sid: 'LoadBalancerTagRemoval',
            clusterName,
            actions: ['elasticloadbalancing:RemoveTags'],
            resources: [loadBalancers, targetGroups, listeners],
          }),
      ...(services.lbcServices
        ? [
            adoptionTagging({
              sid: 'SecurityGroupAdoption',
              clusterName,
              action: 'ec2:CreateTags',
              resources: [securityGroups],
            }),
            adoptionTagging({
              sid: 'LoadBalancerAdoption',
              clusterName,
              action: 'elasticloadbalancing:AddTags',
              resources: [loadBalancers, targetGroups, listeners],
            }),
          ]
        : []),
      ...classicLoadBalancerStatements({ clusterName, loadBalancers: classicLoadBalancers }),
    ],
    environment: {
      VPC_ID: services.vpcId,
      ...(services.loadBalancerClass ? { LOAD_BALANCER_CLASS: services.loadBalancerClass } : {}),
      ...(services.nodePortRange ? { SERVICE_NODE_PORT_RANGE: services.nodePortRange } : {}),
      ...(services.externalManagedTags
        ? { SERVICE_EXTERNAL_MANAGED_TAGS: services.externalManagedTags.join(',') }
        : {}),
      SERVICE_DEFAULT_LOAD_BALANCER_TYPE: services.defaultLoadBalancerType,
      SERVICE_PROVISIONING_REQUEUE_SECONDS: String(services.provisioningRequeueSeconds),
      SERVICE_CLEANUP_REQUEUE_SECONDS: String(services.cleanupRequeueSeconds),
      SERVICE_REPLACEMENT_GRACE_SECONDS: String(services.replacementGraceSeconds),
      ...(services.lbcServices ? { SERVICE_LBC_SERVICES: 'true' } : {}),
      // With the binding controller deployed: a TargetGroupBinding per target group of the reference's Services.
      ...(ctx.config.targetGroupBinding ? { STACK_TARGET_GROUP_BINDINGS: 'true' } : {}),
    },
  });
}
