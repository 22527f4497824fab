import { ArnFormat, Stack } from 'aws-cdk-lib';
import { CfnAccessEntry } from 'aws-cdk-lib/aws-eks';
import { Effect, type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { APP_NAME, type FunctionName, type StageConfig } from './config.ts';
import { allow, explicitActions } from './iam.ts';

/**
 * How the functions reach the Kubernetes API (docs/architecture.md "Reaching the Kubernetes API
 * from Lambda"): the environment `shared/k8s/lambda-access.ts` reads, and the IAM each mode needs.
 */

export function kubernetesEnvironment(config: StageConfig): Record<string, string> {
  const k = config.kubernetes;
  return {
    KUBERNETES_AUTH_MODE: k.authMode,
    KUBERNETES_API_ENDPOINT: k.apiEndpoint,
    EKS_CLUSTER_NAME: k.eksClusterName,
    ...(k.caData ? { KUBERNETES_CA_DATA: k.caData } : {}),
    ...(k.tokenSecretId ? { KUBERNETES_TOKEN_SECRET_ID: k.tokenSecretId } : {}),
  };
}

/**
 * eks mode: an EKS token is a presigned sts:GetCallerIdentity, which needs no permission; only a CA
 * missing from configuration is fetched with eks:DescribeCluster. token mode: read the one secret
 * (and decrypt it, when a customer-managed key encrypts it, only through Secrets Manager).
 */
export function kubernetesAccessStatements(scope: Construct, config: StageConfig): PolicyStatement[] {
  const stack = Stack.of(scope);
  const k = config.kubernetes;
  if (k.authMode === 'eks') {
    if (k.caData) return [];
    const cluster = stack.formatArn({ service: 'eks', resource: 'cluster', resourceName: k.eksClusterName });
    return [allow(['eks:DescribeCluster'], [cluster], 'KubernetesEndpoint')];
  }
  const secretId = k.tokenSecretId ?? '';
  // A secret's ARN ends in a random 6-character suffix; a name alone matches any suffix.
  const secret = secretId.startsWith('arn:')
    ? secretId
    : stack.formatArn({
        service: 'secretsmanager',
        resource: 'secret',
        resourceName: `${secretId}-??????`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      });
  const statements = [allow(['secretsmanager:GetSecretValue'], [secret], 'KubernetesToken')];
  if (k.tokenSecretKmsKeyArn) {
    statements.push(
      new PolicyStatement({
        sid: 'KubernetesTokenKey',
        effect: Effect.ALLOW,
        actions: explicitActions(['kms:Decrypt']),
        resources: [k.tokenSecretKmsKeyArn],
        conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${config.region}.amazonaws.com` } },
      }),
    );
  }
  return statements;
}

/** The Kubernetes group a function's identity belongs to; RBAC in the cluster binds roles to it. */
export function kubernetesGroup(name: FunctionName): string {
  return `${APP_NAME}:${name}`;
}

/** The Kubernetes username of a function's access entry (eks mode): `serverless-ccm:<function>`. */
export function kubernetesUsername(name: FunctionName): string {
  return `${APP_NAME}:${name}`;
}

/**
 * eks mode: the function role becomes an EKS access entry in its own Kubernetes group, so what it
 * may do in the cluster is plain RBAC (deploy/README-deploy.md lists the bindings). Needs the
 * cluster's authentication mode to be API or API_AND_CONFIG_MAP.
 * https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html
 */
export function eksAccessEntry(scope: Construct, config: StageConfig, name: FunctionName, role: IRole): void {
  if (!config.kubernetes.createAccessEntries) return;
  new CfnAccessEntry(scope, 'AccessEntry', {
    clusterName: config.kubernetes.eksClusterName,
    principalArn: role.roleArn,
    type: 'STANDARD',
    // A fixed username (instead of EKS's default, the assumed-role ARN with a generated role name), so the relay's
    // validating webhook can name the one identity allowed to write the Pod address annotation.
    username: kubernetesUsername(name),
    kubernetesGroups: [kubernetesGroup(name)],
  });
}
