/**
 * AWS as the plugin needs it, shaped for the caller: one call per port, plain values in and out, every SDK
 * detail (clients per region, endpoints, retries, pagination of `authorizationData`) behind the adapter.
 */

/** Credentials from AssumeRoleWithWebIdentity; absent means "use the SDK's default credential chain". */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/**
 * The bounds of every AWS call, for the SDK clients and the direct calls alike. kubelet kills the plugin after
 * one minute; with three attempts these keep a dead or black-holed endpoint (no IMDS, no VPC endpoint, wrong
 * proxy) well inside that, so the user sees our error instead of kubelet's timeout.
 */
export const CALL_BOUNDS = { maxAttempts: 3, connectionTimeoutMs: 3_000, requestTimeoutMs: 10_000 } as const;

export interface AuthorizationToken {
  /** base64 of `user:password`, exactly as AWS returned it. */
  authorizationToken: string;
  expiresAt?: Date;
}

export interface EcrEndpoint {
  region: string;
  /** The registry host's partition DNS suffix (`amazonaws.com`, ...). */
  dnsSuffix: string;
  fips: boolean;
  dualStack: boolean;
}

export interface EcrPort {
  /**
   * GetAuthorizationToken in the registry's region. No registry IDs are sent: the token is valid for every
   * registry the principal may pull from, including other accounts'. Undefined when AWS returned no data.
   */
  getAuthorizationToken(endpoint: EcrEndpoint, credentials?: AwsCredentials): Promise<AuthorizationToken | undefined>;
}

export interface EcrPublicPort {
  /** GetAuthorizationToken against ECR Public in us-east-1. Undefined when AWS returned no data. */
  getAuthorizationToken(credentials?: AwsCredentials): Promise<AuthorizationToken | undefined>;
}

export interface AssumeRoleWithWebIdentityInput {
  roleArn: string;
  webIdentityToken: string;
  roleSessionName: string;
  /** STS is called in the registry's region so the call stays in the registry's partition. */
  region: string;
  /** That partition's DNS suffix, from the registry host. */
  dnsSuffix: string;
  /** The registry is reached over FIPS or dual-stack endpoints; STS then is too. */
  fips: boolean;
  dualStack: boolean;
}

export interface StsPort {
  assumeRoleWithWebIdentity(input: AssumeRoleWithWebIdentityInput): Promise<AwsCredentials>;
}
