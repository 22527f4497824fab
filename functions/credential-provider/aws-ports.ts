import { ECRClient, GetAuthorizationTokenCommand } from '@aws-sdk/client-ecr';
import {
  ECRPUBLICClient,
  GetAuthorizationTokenCommand as GetPublicAuthorizationTokenCommand,
} from '@aws-sdk/client-ecr-public';
import { AssumeRoleWithWebIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { type ProxyEnv, proxyAgents } from '../../shared/net/proxy.ts';
import { type AwsCredentials, CALL_BOUNDS, type EcrPort, type EcrPublicPort, type StsPort } from './ports.ts';
import { ECR_PUBLIC_REGION } from './registry.ts';

export interface AwsPortOptions {
  /** Appended to the SDK user agent so pulls are recognisable in CloudTrail. */
  userAgent: string;
  /** The SDK's standard retry mode does the retrying; this only caps it. Default 3, the SDK's own default. */
  maxAttempts?: number;
  /** The proxy variables, when a proxy is set (shared/net/proxy.ts): the clients' own calls go through it. */
  proxies?: ProxyEnv;
}

const REQUEST_HANDLER = {
  connectionTimeout: CALL_BOUNDS.connectionTimeoutMs,
  requestTimeout: CALL_BOUNDS.requestTimeoutMs,
};

function clientConfig(region: string, options: AwsPortOptions, credentials: AwsCredentials | undefined) {
  return {
    region,
    maxAttempts: options.maxAttempts ?? CALL_BOUNDS.maxAttempts,
    customUserAgent: options.userAgent,
    requestHandler: options.proxies ? { ...REQUEST_HANDLER, ...proxyAgents(options.proxies) } : REQUEST_HANDLER,
    // Without explicit credentials the client resolves the default chain (env, profile, web identity, IMDS).
    ...(credentials ? { credentials } : {}),
  };
}

export function createAwsPorts(options: AwsPortOptions): { ecr: EcrPort; ecrPublic: EcrPublicPort; sts: StsPort } {
  // One client per call: a process answers exactly one request, so there is nothing to reuse. (Loading the
  // clients lazily with import() was measured: it made the bundle larger and the common ECR path slower.)
  const ecr: EcrPort = {
    async getAuthorizationToken(endpoint, credentials) {
      const client = new ECRClient({
        ...clientConfig(endpoint.region, options, credentials),
        // Only force the variants the host asked for; otherwise AWS_USE_FIPS_ENDPOINT etc. still apply.
        ...(endpoint.fips ? { useFipsEndpoint: true } : {}),
        ...(endpoint.dualStack ? { useDualstackEndpoint: true } : {}),
      });
      try {
        const output = await client.send(new GetAuthorizationTokenCommand({}));
        const data = output.authorizationData?.find((item) => item.authorizationToken);
        if (!data?.authorizationToken) return undefined;
        return {
          authorizationToken: data.authorizationToken,
          ...(data.expiresAt ? { expiresAt: data.expiresAt } : {}),
        };
      } finally {
        client.destroy();
      }
    },
  };

  const ecrPublic: EcrPublicPort = {
    async getAuthorizationToken(credentials) {
      const client = new ECRPUBLICClient(clientConfig(ECR_PUBLIC_REGION, options, credentials));
      try {
        const output = await client.send(new GetPublicAuthorizationTokenCommand({}));
        const data = output.authorizationData;
        if (!data?.authorizationToken) return undefined;
        return {
          authorizationToken: data.authorizationToken,
          ...(data.expiresAt ? { expiresAt: data.expiresAt } : {}),
        };
      } finally {
        client.destroy();
      }
    },
  };

  const sts: StsPort = {
    async assumeRoleWithWebIdentity(input) {
      const client = new STSClient(clientConfig(input.region, options, undefined));
      try {
        const output = await client.send(
          new AssumeRoleWithWebIdentityCommand({
            RoleArn: input.roleArn,
            WebIdentityToken: input.webIdentityToken,
            RoleSessionName: input.roleSessionName,
          }),
        );
        const credentials = output.Credentials;
        if (!credentials?.AccessKeyId || !credentials.SecretAccessKey) {
          throw new Error('STS returned no credentials');
        }
        return {
          accessKeyId: credentials.AccessKeyId,
          secretAccessKey: credentials.SecretAccessKey,
          ...(credentials.SessionToken ? { sessionToken: credentials.SessionToken } : {}),
          ...(credentials.Expiration ? { expiration: credentials.Expiration } : {}),
        };
      } finally {
        client.destroy();
      }
    },
  };

  return { ecr, ecrPublic, sts };
}
