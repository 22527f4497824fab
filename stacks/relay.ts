import { CfnPodIdentityAssociation } from 'aws-cdk-lib/aws-eks';
import { FederatedPrincipal, type IPrincipal, PolicyDocument, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { StageConfig } from './config.ts';
import type { ControlPlaneContext } from './context.ts';
import { sendToQueues } from './queues.ts';

/**
 * The in-cluster relay's AWS identity: it may send keys to the reconcilers' queues and do nothing
 * else. Only the relay's service account can assume it, through IRSA or EKS Pod Identity.
 */
export class RelayRole extends Construct {
  readonly role: Role;

  constructor(scope: Construct, ctx: ControlPlaneContext, queues: readonly IQueue[]) {
    super(scope, 'Relay');
    const { relay } = ctx.config;
    this.role = new Role(this, 'Role', {
      assumedBy: relayPrincipal(ctx.config),
      description: `${ctx.name('relay')}: ${relay.namespace}/${relay.serviceAccount} sends keys to the reconciler queues`,
      inlinePolicies: { SendKeys: new PolicyDocument({ statements: [sendToQueues(queues)] }) },
    });
    if (relay.createPodIdentityAssociation) {
      new CfnPodIdentityAssociation(this, 'PodIdentity', {
        clusterName: ctx.config.kubernetes.eksClusterName,
        namespace: relay.namespace,
        serviceAccount: relay.serviceAccount,
        roleArn: this.role.roleArn,
      });
    }
  }
}

function relayPrincipal(config: StageConfig): IPrincipal {
  const { relay } = config;
  if (relay.identity === 'irsa') {
    // The projected service-account token's subject and audience, as EKS documents for IRSA.
    // https://docs.aws.amazon.com/eks/latest/userguide/associate-service-account-role.html
    return new FederatedPrincipal(
      relay.oidcProviderArn ?? '',
      {
        StringEquals: {
          [`${relay.oidcIssuer}:sub`]: `system:serviceaccount:${relay.namespace}:${relay.serviceAccount}`,
          [`${relay.oidcIssuer}:aud`]: 'sts.amazonaws.com',
        },
      },
      'sts:AssumeRoleWithWebIdentity',
    );
  }
  // Pod Identity assumes the role with session tags naming the cluster, namespace and service
  // account; requiring them means no other association in the account can borrow this role.
  // https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html
  return new ServicePrincipal('pods.eks.amazonaws.com').withSessionTags().withConditions({
    StringEquals: {
      'aws:RequestTag/eks-cluster-name': config.kubernetes.eksClusterName,
      'aws:RequestTag/kubernetes-namespace': relay.namespace,
      'aws:RequestTag/kubernetes-service-account': relay.serviceAccount,
    },
  });
}
