import type { KubeConfig } from '@kubernetes/client-node';
import { FakeClock } from '../../clock.ts';
import type { AwsCredentials } from '../eks-token.ts';
import type { ClusterAccess, KubernetesAccessDeps } from '../lambda-access.ts';

/**
 * The AWS side of `lambda-access.ts` for tests: one Secrets Manager secret whose successive reads answer
 * `secretValues` in turn (the last one from then on), fixed role credentials, and one EKS cluster. Unknown
 * secrets and clusters fail as AWS does, with a `ResourceNotFoundException`. Counters say how often each
 * was called. test/contract/credentials.contract.test.ts runs the same behaviours against it and against
 * `awsKubernetesAccessDeps` over an AWS API emulator.
 */
export class FakeAccessDeps implements KubernetesAccessDeps {
  readonly clock: FakeClock;
  /** The secret's name or ARN, as KUBERNETES_TOKEN_SECRET_ID gives it. */
  secretId: string;
  secretValues: string[] = [];
  secretReads = 0;
  credentialCalls = 0;
  describeCalls = 0;
  /** What DescribeCluster answers for `clusterName` (any name when unset); no cluster: not found. */
  cluster?: ClusterAccess;
  clusterName?: string;
  loadDefaultKubeConfig?: () => KubeConfig;

  constructor(
    private readonly credentials: AwsCredentials,
    options: { now?: number; secretId?: string } = {},
  ) {
    this.clock = new FakeClock(options.now);
    this.secretId = options.secretId ?? 'ccm/kubernetes';
  }

  async readSecret(secretId: string): Promise<string> {
    this.secretReads += 1;
    if (secretId !== this.secretId) throw notFound("Secrets Manager can't find the specified secret.");
    const value = this.secretValues.length > 1 ? this.secretValues.shift()! : this.secretValues[0];
    if (value === undefined) throw new Error('FakeAccessDeps: no secret value queued');
    return value;
  }

  async awsCredentials(): Promise<AwsCredentials> {
    this.credentialCalls += 1;
    return this.credentials;
  }

  async describeCluster(name: string): Promise<ClusterAccess> {
    this.describeCalls += 1;
    if (!this.cluster || (this.clusterName !== undefined && name !== this.clusterName)) {
      throw notFound(`No cluster found for name: ${name}.`);
    }
    return this.cluster;
  }
}

/** Shaped like the SDK's service exceptions: the AWS error code is the name. */
function notFound(message: string): Error {
  return Object.assign(new Error(message), { name: 'ResourceNotFoundException' });
}
