import { Sha256 } from '@aws-crypto/sha256-js';
import { formatUrl } from '@aws-sdk/util-format-url';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

/*
 * The bearer token `eks` mode (lambda-access.ts) reaches the API server with, signed with the Lambda role's
 * credentials: no AWS call, only a signature.
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/**
 * EKS validates the token for 15 minutes after its signing time; a new one is minted after 14 so a
 * request never leaves with a token about to expire.
 * https://docs.aws.amazon.com/eks/latest/userguide/cluster-auth.html
 */
export const EKS_TOKEN_REFRESH_MS = 14 * 60 * 1000;

const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** The header that binds the presigned URL to one cluster: a token for cluster A is refused by cluster B. */
const CLUSTER_ID_HEADER = 'x-k8s-aws-id';

export interface EksTokenInput {
  clusterName: string;
  region: string;
  credentials: AwsCredentials;
  /** Signing time (ms since the epoch or a Date). */
  now: number | Date;
}

/**
 * An EKS bearer token: `k8s-aws-v1.` + unpadded base64url of a SigV4-presigned STS
 * `GetCallerIdentity` URL whose signed headers include `x-k8s-aws-id: <cluster>`. The API server's
 * authenticator calls that URL (sending the header) to learn the caller's IAM identity, then maps it
 * through the cluster's access entries.
 * https://docs.aws.amazon.com/eks/latest/userguide/cluster-auth.html
 * https://github.com/kubernetes-sigs/aws-iam-authenticator#api-authorization-from-outside-a-cluster
 */
export async function eksToken({ clusterName, region, credentials, now }: EksTokenInput): Promise<string> {
  const hostname = stsHostname(region);
  const signer = new SignatureV4({ credentials, region, service: 'sts', sha256: Sha256 });
  const request = new HttpRequest({
    method: 'GET',
    protocol: 'https:',
    hostname,
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { host: hostname, [CLUSTER_ID_HEADER]: clusterName },
  });
  // 60 s is what the authenticator expects of X-Amz-Expires; it accepts the token for 15 minutes
  // after X-Amz-Date regardless.
  const presigned = await signer.presign(request, { expiresIn: 60, signingDate: new Date(now) });
  return EKS_TOKEN_PREFIX + Buffer.from(formatUrl(presigned)).toString('base64url');
}

/**
 * Always the real regional STS host, never AWS_ENDPOINT_URL(_STS): the EKS API server, not this
 * Lambda, calls the URL, and its authenticator accepts only genuine STS hosts.
 * https://docs.aws.amazon.com/general/latest/gr/sts.html
 */
export function stsHostname(region: string): string {
  return region.startsWith('cn-') ? `sts.${region}.amazonaws.com.cn` : `sts.${region}.amazonaws.com`;
}
