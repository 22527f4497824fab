import type { Stack } from 'aws-cdk-lib';
import type { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { StageConfig } from './config.ts';
import { ingressEnvironment } from './config-ingress.ts';
import type { ControlPlaneContext } from './context.ts';
import { allow, clusterResourceWrite, ec2Describe, elbv2Describe, ownedResourceWrite, tagOnCreate } from './iam.ts';
import { adoptionTagging, ingressTagRemoval, unscopedList } from './iam-ingress.ts';
import { ownedLoadBalancerStatements, ownedSecurityGroupStatements } from './iam-load-balancers.ts';
import { type Reconciler, reconciler } from './reconciler.ts';

/**
 * The Ingress controller (functions/ingress): one Application Load Balancer per IngressGroup, with its listeners,
 * rules, target groups and security groups, in the one VPC configured, as the AWS Load Balancer Controller makes
 * them. Like the service controller (stacks/service.ts) it creates only what the request tags
 * `kubernetes.io/cluster/<cluster>=owned`, changes or deletes only what carries that tag, and removes no ownership
 * or tracking tag; it may add rules to the Nodes' cluster-tagged security groups (`owned` or `shared`), and tag ours
 * what the reference controller made for this cluster (stacks/iam-ingress.ts says why and how narrowly). Its load
 * balancers are Application Load Balancers only (`app/` ARNs): it can touch no Network Load Balancer, and the
 * service controller none of its.
 *
 * With `CCM_TARGET_GROUP_BINDING=true` it keeps a TargetGroupBinding per target group (STACK_TARGET_GROUP_BINDINGS):
 * Kubernetes objects, granted by its ClusterRole (deploy/README-deploy.md), nothing in AWS.
 *
 * ACM: it reads certificates to find those of an HTTPS listener's hosts. WAFv2: only with `CCM_INGRESS_WAF=true`,
 * so that a stage without web ACLs grants nothing of WAF.
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_awscertificatemanager.html
 * https://docs.aws.amazon.com/waf/latest/developerguide/security_iam_service-with-iam.html
 */
export function ingressReconciler(
  stack: Stack,
  ctx: ControlPlaneContext,
  ingress: NonNullable<StageConfig['ingress']>,
): Reconciler {
  const { services } = ctx.config;
  return reconciler(stack, ctx, 'ingress', {
    description: 'Application Load Balancers for Ingresses (one per IngressGroup), and their cleanup',
    permissions: ingressStatements(stack, ctx.config.clusterName, ctx.config.region, ingress),
    environment: {
      ...ingressEnvironment(ingress),
      // The service controller's settings it shares (shared/controllers.ts): the stage has them with CCM_VPC_ID.
      ...(services?.nodePortRange ? { SERVICE_NODE_PORT_RANGE: services.nodePortRange } : {}),
      ...(services?.externalManagedTags
        ? { SERVICE_EXTERNAL_MANAGED_TAGS: services.externalManagedTags.join(',') }
        : {}),
      ...(services
        ? {
            SERVICE_PROVISIONING_REQUEUE_SECONDS: String(services.provisioningRequeueSeconds),
            SERVICE_CLEANUP_REQUEUE_SECONDS: String(services.cleanupRequeueSeconds),
            SERVICE_REPLACEMENT_GRACE_SECONDS: String(services.replacementGraceSeconds),
          }
        : {}),
      // With the binding controller deployed: a TargetGroupBinding per target group, for its Pods' readiness gates.
      ...(ctx.config.targetGroupBinding ? { STACK_TARGET_GROUP_BINDINGS: 'true' } : {}),
    },
  });
}

/** Everything the Ingress controller may call in AWS, for one stage. */
export function ingressStatements(
  stack: Stack,
  clusterName: string,
  region: string,
  ingress: NonNullable<StageConfig['ingress']>,
): PolicyStatement[] {
  const arn = (service: string, resource: string, resourceName: string) =>
    stack.formatArn({ service, region, resource, resourceName });
  const vpc = arn('ec2', 'vpc', ingress.vpcId);
  const securityGroups = arn('ec2', 'security-group', '*');
  const loadBalancers = arn('elasticloadbalancing', 'loadbalancer', 'app/*/*');
  const targetGroups = arn('elasticloadbalancing', 'targetgroup', '*/*');
  const listeners = arn('elasticloadbalancing', 'listener', 'app/*/*/*');
  const rules = arn('elasticloadbalancing', 'listener-rule', 'app/*/*/*/*');
  return [
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
      'DescribeRules',
      'DescribeTargetGroups',
      'DescribeTargetGroupAttributes',
      'DescribeTargetHealth',
      'DescribeTags',
    ),
    // Our groups: a load balancer's managed group, the cluster's backend group.
    ...ownedSecurityGroupStatements({ clusterName, securityGroups, vpc }),
    ingressTagRemoval({
      sid: 'SecurityGroupTagRemoval',
      clusterName,
      actions: ['ec2:DeleteTags'],
      resources: [securityGroups],
    }),
    // Listen ports on our groups, and the load balancers' access to the Nodes' cluster-tagged groups.
    clusterResourceWrite({
      sid: 'SecurityGroupRules',
      clusterName,
      actions: ['ec2:AuthorizeSecurityGroupIngress', 'ec2:RevokeSecurityGroupIngress'],
      resources: [securityGroups],
      vpcArn: vpc,
    }),
    adoptionTagging({
      sid: 'SecurityGroupAdoption',
      clusterName,
      action: 'ec2:CreateTags',
      resources: [securityGroups],
    }),
    ...ownedLoadBalancerStatements({ clusterName, loadBalancers, targetGroups }),
    // Listeners and rules are born tagged owned, in the CreateListener / CreateRule call.
    tagOnCreate({
      sid: 'ListenerTagOnCreate',
      clusterName,
      createActions: ['elasticloadbalancing:CreateListener', 'elasticloadbalancing:CreateRule'],
      resources: [listeners, rules],
    }),
    // aws:ResourceTag is the listener's own tags. A rule is authorized on its listener when created, as a listener
    // on its load balancer; the certificate and attribute calls are authorized on the listener too.
    ownedResourceWrite({
      sid: 'ListenerWrites',
      clusterName,
      actions: [
        'elasticloadbalancing:ModifyListener',
        'elasticloadbalancing:ModifyListenerAttributes',
        'elasticloadbalancing:AddListenerCertificates',
        'elasticloadbalancing:RemoveListenerCertificates',
        'elasticloadbalancing:DeleteListener',
        'elasticloadbalancing:CreateRule',
        'elasticloadbalancing:AddTags',
      ],
      resources: [listeners],
    }),
    // aws:ResourceTag is the rule's own tags; SetRulePriorities is authorized on each rule it moves.
    ownedResourceWrite({
      sid: 'RuleWrites',
      clusterName,
      actions: [
        'elasticloadbalancing:ModifyRule',
        'elasticloadbalancing:DeleteRule',
        'elasticloadbalancing:SetRulePriorities',
        'elasticloadbalancing:AddTags',
      ],
      resources: [rules],
    }),
    ingressTagRemoval({
      sid: 'LoadBalancerTagRemoval',
      clusterName,
      actions: ['elasticloadbalancing:RemoveTags'],
      resources: [loadBalancers, targetGroups, listeners, rules],
    }),
    adoptionTagging({
      sid: 'LoadBalancerAdoption',
      clusterName,
      action: 'elasticloadbalancing:AddTags',
      resources: [loadBalancers, targetGroups, listeners, rules],
    }),
    // Certificate discovery: the account's ISSUED certificates, then the names each covers.
    unscopedList(['acm:ListCertificates'], 'CertificateList'),
    allow(['acm:DescribeCertificate'], [arn('acm', 'certificate', '*')], 'CertificateDescribe'),
    ...(ingress.waf ? wafStatements(arn, clusterName, loadBalancers) : []),
  ];
}

/**
 * The web ACL of an Application Load Balancer (`wafv2-acl-arn`, `wafv2-acl-name`): reading it, finding a regional
 * web ACL by name, associating and disassociating. WAF authorizes an association on the web ACL and the load
 * balancer, and asks for `elasticloadbalancing:SetWebAcl` on the load balancer too, which requires our tag there.
 * https://docs.aws.amazon.com/waf/latest/developerguide/security_iam_service-with-iam.html
 */
function wafStatements(
  arn: (service: string, resource: string, resourceName: string) => string,
  clusterName: string,
  loadBalancers: string,
): PolicyStatement[] {
  const webAcls = arn('wafv2', 'regional', 'webacl/*/*');
  return [
    unscopedList(['wafv2:ListWebACLs'], 'WebAclList'),
    allow(['wafv2:GetWebACLForResource'], [loadBalancers], 'WebAclRead'),
    allow(['wafv2:AssociateWebACL', 'wafv2:DisassociateWebACL'], [webAcls, loadBalancers], 'WebAclAssociation'),
    ownedResourceWrite({
      sid: 'WebAclLoadBalancer',
      clusterName,
      actions: ['elasticloadbalancing:SetWebAcl'],
      resources: [loadBalancers],
    }),
  ];
}
