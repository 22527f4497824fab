/**
 * The plugin's three AWS calls (ECR and ECR Public GetAuthorizationToken, STS AssumeRoleWithWebIdentity) without
 * the SDK's clients, for the configuration nearly every node has: credentials from the instance role (IMDS) or
 * from `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, no shared config files, no profile, a registry on the
 * partition's regular endpoints. Anything else goes to the SDK clients (aws-ports.ts): `directSetup` decides for
 * the environment, each call for its registry (FIPS and dual-stack hosts).
 *
 * Why not the clients here too: kubelet starts this program for every image pull whose cached token expired, and
 * the clients cost their whole runtime (middleware stack, schema serde, config resolution, endpoint rules: about
 * 1 MiB of code) to load and run, which alone put the start at about twice a bare Node.js start; see
 * docs/credential-provider.md, "Start time".
 *
 * What decides what goes on the wire is still the SDK's where it can be loaded cheaply: SigV4
 * (`@smithy/signature-v4`), the retry middleware with the standard strategy (three attempts, the same backoff,
 * invocation id and `amz-sdk-request` headers) and the IMDS credential provider. Written here, each checked
 * against the SDK in direct.test.ts: which configurations qualify; the regional endpoint names (the clients'
 * endpoint rules give the same URL for every region the SDK knows); the three operations' requests and
 * responses (AWS JSON 1.1 for ECR, the query protocol with XML answers for STS), error parsing and the clock
 * skew correction the clients apply; sending one request (`sendOnce` in direct-send.ts and http1.ts, instead of the SDK's
 * `NodeHttpHandler`, which loads `node:https` and TLS even for a plain-HTTP endpoint, and `node:http` at all).
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest, type HttpResponse } from '@smithy/core/protocols';
import { retryMiddleware, StandardRetryStrategy } from '@smithy/core/retry';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsPorts } from './choose-ports.ts';
import {
  credentialsOf,
  type Exchange,
  isRecord,
  jsonRequest,
  type Output,
  parseResponse,
  queryRequest,
  tokenOf,
} from './direct-protocols.ts';
import { sendOnce } from './direct-send.ts';
import type { DirectSetup } from './direct-setup.ts';
import {
  type AssumeRoleWithWebIdentityInput,
  type AwsCredentials,
  CALL_BOUNDS,
  type EcrEndpoint,
  type EcrPort,
  type EcrPublicPort,
  type StsPort,
} from './ports.ts';
import { ECR_PUBLIC_DNS_SUFFIX, ECR_PUBLIC_REGION } from './registry.ts';

export interface DirectOptions {
  /** Sent as the user agent, so pulls are recognisable in CloudTrail. */
  userAgent: string;
  /** The standard retry strategy's attempts; 3, the SDK's default. */
  maxAttempts?: number;
}

/**
 * The regular regional endpoints, as the clients' endpoint rules name them outside FIPS and dual-stack (checked
 * for every region of every partition the SDK knows, in direct.test.ts). The DNS suffix is the registry host's.
 */
export const REGIONAL_HOSTS = {
  ecr: (region: string, dnsSuffix: string) => `api.ecr.${region}.${dnsSuffix}`,
  ecrPublic: (region: string, dnsSuffix: string) => `api.ecr-public.${region}.${dnsSuffix}`,
  sts: (region: string, dnsSuffix: string) => `sts.${region}.${dnsSuffix}`,
};

/** Registries whose calls need the SDK's endpoint rules: FIPS, dual-stack, or a dual-stack-only DNS suffix. */
function needsEndpointRules(target: { fips: boolean; dualStack: boolean; dnsSuffix: string }): boolean {
  return target.fips || target.dualStack || target.dnsSuffix.startsWith('on.');
}

export function createDirectPorts(
  setup: DirectSetup,
  options: DirectOptions,
  sdk: () => Promise<AwsPorts>,
): { ecr: EcrPort; ecrPublic: EcrPublicPort; sts: StsPort } {
  const call = caller(setup, options);
  const url = (configured: string | undefined, host: string) => new URL(configured ?? `https://${host}`);
  return {
    ecr: {
      async getAuthorizationToken(endpoint: EcrEndpoint, credentials?: AwsCredentials) {
        if (needsEndpointRules(endpoint)) return (await sdk()).ecr.getAuthorizationToken(endpoint, credentials);
        const output = await call(
          jsonRequest(
            url(setup.endpoints.ecr, REGIONAL_HOSTS.ecr(endpoint.region, endpoint.dnsSuffix)),
            'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken',
          ),
          { service: 'ecr', region: endpoint.region, credentials },
        );
        const list = Array.isArray(output.authorizationData) ? output.authorizationData : [];
        return tokenOf(list.find((item) => isRecord(item) && item.authorizationToken));
      },
    },
    ecrPublic: {
      async getAuthorizationToken(credentials?: AwsCredentials) {
        const output = await call(
          jsonRequest(
            url(setup.endpoints.ecrPublic, REGIONAL_HOSTS.ecrPublic(ECR_PUBLIC_REGION, ECR_PUBLIC_DNS_SUFFIX)),
            'SpencerFrontendService.GetAuthorizationToken',
          ),
          { service: 'ecr-public', region: ECR_PUBLIC_REGION, credentials },
        );
        return tokenOf(output.authorizationData);
      },
    },
    sts: {
      async assumeRoleWithWebIdentity(input: AssumeRoleWithWebIdentityInput) {
        if (needsEndpointRules(input)) return (await sdk()).sts.assumeRoleWithWebIdentity(input);
        // AssumeRoleWithWebIdentity is not signed: the web identity token is the credential.
        const output = await call(
          queryRequest(url(setup.endpoints.sts, REGIONAL_HOSTS.sts(input.region, input.dnsSuffix)), {
            Action: 'AssumeRoleWithWebIdentity',
            Version: '2011-06-15',
            RoleArn: input.roleArn,
            RoleSessionName: input.roleSessionName,
            WebIdentityToken: input.webIdentityToken,
          }),
          undefined,
        );
        return credentialsOf(output);
      },
    },
  };
}

/** Who signs a call: the service and region of the SigV4 scope, and keys other than the node's when given. */
interface Signing {
  service: string;
  region: string;
  credentials: AwsCredentials | undefined;
}

/** One call: the SDK's retry middleware around signing (unless `signing` is undefined) and sending. */
function caller(setup: DirectSetup, options: DirectOptions) {
  const maxAttempts = options.maxAttempts ?? CALL_BOUNDS.maxAttempts;
  const retry = retryMiddleware({
    maxAttempts: async () => maxAttempts,
    retryStrategy: async () => new StandardRetryStrategy(maxAttempts),
  });
  let clockOffset = 0;

  return async (exchange: Exchange, signing: Signing | undefined): Promise<Output> => {
    const signer =
      signing &&
      new SignatureV4({
        credentials: signing.credentials ? async () => signing.credentials! : setup.credentials,
        region: signing.region,
        service: signing.service,
        // The SDK's JavaScript SHA-256, not `node:crypto`'s: see lazy-crypto.ts.
        sha256: Sha256,
      });
    const { url, body } = exchange;
    const request = new HttpRequest({
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      method: 'POST',
      path: `${url.pathname.replace(/\/$/, '')}/`,
      headers: {
        ...exchange.headers,
        host: url.host,
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': options.userAgent,
      },
      body,
    });
    const send = async (args: { request: HttpRequest }) => {
      const signed = signer
        ? await signer.sign(args.request, { signingDate: new Date(Date.now() + clockOffset) })
        : args.request;
      try {
        const response = await sendOnce(signed as HttpRequest, CALL_BOUNDS, setup.proxies);
        return { response, output: parseResponse(response, exchange) };
      } catch (err) {
        const corrected = correctedOffset(err, clockOffset);
        if (corrected !== clockOffset) {
          clockOffset = corrected;
          // Only parsed answers carry a Date, and they all have $metadata.
          const metadata = (err as { $metadata?: Record<string, unknown> }).$metadata;
          if (metadata) metadata.clockSkewCorrected = true;
        }
        throw err;
      }
    };
    // The middleware only reads `request` and fills in `output.$metadata`; the context is unused without a logger.
    const { output } = await retry(send as never, {})({ request, input: {} } as never);
    return output as Output;
  };
}

/** Five minutes: the skew beyond which the clients re-sign with the server's clock (and retry). */
const SKEW_LIMIT_MS = 300_000;

/**
 * The clients' correction: when an error answer carries a `Date` more than five minutes from this machine's clock
 * (plus the offset so far), later signatures use the server's time. Marking the error `clockSkewCorrected` makes
 * the retry strategy treat it as transient.
 */
function correctedOffset(err: unknown, offset: number): number {
  const response = (err as { $response?: HttpResponse })?.$response;
  const date = response?.headers.date;
  const serverTime = date ? Date.parse(date) : Number.NaN;
  if (Number.isNaN(serverTime)) return offset;
  return Math.abs(Date.now() + offset - serverTime) >= SKEW_LIMIT_MS ? serverTime - Date.now() : offset;
}
