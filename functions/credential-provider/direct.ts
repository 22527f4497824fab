/**
 * GetAuthorizationToken for ECR and ECR Public without the SDK's clients, for the configuration nearly every
 * node has: credentials from the instance role (IMDS) or from `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, no
 * shared config files, no profile. Anything else goes to the SDK clients (aws-ports.ts); `directSetup` decides.
 *
 * Why not the clients here too: kubelet starts this program for every image pull whose cached token expired, and
 * a client costs its whole runtime (middleware stack, schema serde, config resolution: about 1 MiB of code) to
 * load. That alone put the start at twice a bare Node.js start; see docs/credential-provider.md, "Start time".
 *
 * The parts that decide what goes on the wire are still the SDK's own: the clients' endpoint rules, SigV4
 * (`@smithy/signature-v4`), the retry middleware with the standard strategy (three attempts, the same backoff,
 * invocation id and `amz-sdk-request` headers) and the IMDS credential provider. Written here: which
 * configurations qualify, the one operation's JSON in and out, AWS JSON error parsing, the clock skew correction
 * the clients apply, and sending one request (`sendOnce`, instead of the SDK's `NodeHttpHandler`, which loads
 * `node:https` and TLS even for a plain-HTTP endpoint and keeps an agent per scheme).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { defaultEndpointResolver as ecrEndpoints } from '@aws-sdk/client-ecr/dist-es/endpoint/endpointResolver.js';
import { defaultEndpointResolver as ecrPublicEndpoints } from '@aws-sdk/client-ecr-public/dist-es/endpoint/endpointResolver.js';
import { HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { retryMiddleware, StandardRetryStrategy } from '@smithy/core/retry';
import { fromInstanceMetadata } from '@smithy/credential-provider-imds';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AuthorizationToken, AwsCredentials, EcrEndpoint, EcrPort, EcrPublicPort } from './ports.ts';
import { ECR_PUBLIC_REGION } from './registry.ts';

export type Env = Readonly<Record<string, string | undefined>>;

type CredentialSource = () => Promise<AwsCredentials>;

/** What the direct path needs from the environment, once `directSetup` found it can serve it. */
export interface DirectSetup {
  credentials: CredentialSource;
  /** `AWS_USE_FIPS_ENDPOINT` / `AWS_USE_DUALSTACK_ENDPOINT`, as the SDK reads them. */
  fips: boolean;
  dualStack: boolean;
  /** `AWS_ENDPOINT_URL_<SERVICE>` or `AWS_ENDPOINT_URL`, unless `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`. */
  endpoints: { ecr?: string; ecrPublic?: string };
}

/**
 * Variables the direct path reads, or that cannot change its two calls. Any other `AWS_*` variable (a retry
 * mode, an app id, a defaults mode, a setting added to the SDK later) sends the request to the SDK clients,
 * which know what it means.
 */
const UNDERSTOOD = new Set([
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_CREDENTIAL_EXPIRATION',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_ECR',
  'AWS_ENDPOINT_URL_ECR_PUBLIC',
  'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS',
  'AWS_USE_FIPS_ENDPOINT',
  'AWS_USE_DUALSTACK_ENDPOINT',
  // Read by the SDK's IMDS provider itself.
  'AWS_EC2_METADATA_DISABLED',
  'AWS_EC2_METADATA_SERVICE_ENDPOINT',
  'AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE',
  'AWS_EC2_METADATA_V1_DISABLED',
  // The region comes from the registry's host on both paths; STS settings only matter to the STS call, which
  // always goes through the SDK; AWS_ECR_ROLE_ARN is this program's own.
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_ENDPOINT_URL_STS',
  'AWS_STS_REGIONAL_ENDPOINTS',
  'AWS_ECR_ROLE_ARN',
  'AWS_EXECUTION_ENV',
  'AWS_NODEJS_CONNECTION_REUSE_ENABLED',
]);

export interface FileSystem {
  exists(path: string): boolean;
  home(): string;
}

/** The SDK's home directory rule (HOME first, then the account's) and a plain existence check. */
export const realFileSystem: FileSystem = {
  exists: existsSync,
  home: () => process.env.HOME || homedir(),
};

/**
 * Whether the direct path gives the same answer the SDK's default chain would, and how. The chain's order:
 * environment keys (skipped when `AWS_PROFILE` is set), the shared files (profiles, SSO, `credential_process`),
 * a web identity token file, container credentials, then IMDS. So the direct path takes environment keys, or
 * IMDS when none of the sources before it can exist; a shared file also rules it out because it can carry
 * endpoint, FIPS and retry settings.
 */
export function directSetup(env: Env, fs: FileSystem = realFileSystem): DirectSetup | { sdkBecause: string } {
  const foreign = Object.keys(env).find((name) => name.startsWith('AWS_') && env[name] && !UNDERSTOOD.has(name));
  if (foreign) return { sdkBecause: `${foreign} is set` };
  for (const [variable, fallback] of [
    ['AWS_CONFIG_FILE', '.aws/config'],
    ['AWS_SHARED_CREDENTIALS_FILE', '.aws/credentials'],
  ] as const) {
    const path = env[variable] || `${fs.home()}/${fallback}`;
    if (fs.exists(path)) return { sdkBecause: `shared file ${path} exists` };
  }
  const fips = booleanSetting(env, 'AWS_USE_FIPS_ENDPOINT');
  const dualStack = booleanSetting(env, 'AWS_USE_DUALSTACK_ENDPOINT');
  if (typeof fips === 'string') return { sdkBecause: fips };
  if (typeof dualStack === 'string') return { sdkBecause: dualStack };
  const credentials = credentialSource(env);
  if (typeof credentials === 'string') return { sdkBecause: credentials };
  const configured = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() === 'true';
  const endpoint = (service: string) =>
    configured ? undefined : env[`AWS_ENDPOINT_URL_${service}`] || env.AWS_ENDPOINT_URL || undefined;
  return {
    credentials,
    fips,
    dualStack,
    endpoints: {
      ...(endpoint('ECR') ? { ecr: endpoint('ECR') } : {}),
      ...(endpoint('ECR_PUBLIC') ? { ecrPublic: endpoint('ECR_PUBLIC') } : {}),
    },
  };
}

/** `true` / `false` like the SDK's boolean settings; anything else is the SDK's to reject, with its message. */
function booleanSetting(env: Env, name: string): boolean | string {
  const value = env[name];
  if (value === undefined || value === '') return false;
  if (value.toLowerCase() === 'true') return true;
  if (value.toLowerCase() === 'false') return false;
  return `${name} is ${JSON.stringify(value)}`;
}

function credentialSource(env: Env): CredentialSource | string {
  if (env.AWS_PROFILE) return 'AWS_PROFILE is set';
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = env;
  if (accessKeyId && secretAccessKey) {
    const credentials: AwsCredentials = {
      accessKeyId,
      secretAccessKey,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    };
    return async () => credentials;
  }
  for (const name of [
    'AWS_WEB_IDENTITY_TOKEN_FILE',
    'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
    'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  ]) {
    if (env[name]) return `${name} is set`;
  }
  const disabled = env.AWS_EC2_METADATA_DISABLED;
  // The SDK's own failure message for this case comes from its chain.
  if (disabled && disabled !== 'false') return 'AWS_EC2_METADATA_DISABLED is set and no keys are in the environment';
  // The provider reads its own settings (AWS_EC2_METADATA_*) from the process environment.
  const imds = fromInstanceMetadata();
  return async () => {
    const { accessKeyId: id, secretAccessKey: secret, sessionToken } = await imds();
    return { accessKeyId: id, secretAccessKey: secret, ...(sessionToken ? { sessionToken } : {}) };
  };
}

export interface DirectOptions {
  /** Sent as the user agent, so pulls are recognisable in CloudTrail. */
  userAgent: string;
  /** The standard retry strategy's attempts; 3, the SDK's default. */
  maxAttempts?: number;
}

/** The same bounds as the SDK clients get in aws-ports.ts. */
const TIMEOUTS = { connectionMs: 3_000, requestMs: 10_000 };

interface Operation {
  endpoint: { url: URL; properties?: Record<string, unknown> };
  service: string;
  region: string;
  target: string;
}

export function createDirectPorts(
  setup: DirectSetup,
  options: DirectOptions,
): { ecr: EcrPort; ecrPublic: EcrPublicPort } {
  const call = caller(setup, options);
  return {
    ecr: {
      async getAuthorizationToken(endpoint: EcrEndpoint, credentials?: AwsCredentials) {
        const output = await call(
          {
            endpoint: ecrEndpoints({
              Region: endpoint.region,
              UseFIPS: endpoint.fips || setup.fips,
              UseDualStack: endpoint.dualStack || setup.dualStack,
              ...(setup.endpoints.ecr ? { Endpoint: setup.endpoints.ecr } : {}),
            }),
            service: 'ecr',
            region: endpoint.region,
            target: 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken',
          },
          credentials,
        );
        const list = Array.isArray(output.authorizationData) ? output.authorizationData : [];
        return tokenOf(list.find((item) => isRecord(item) && item.authorizationToken));
      },
    },
    ecrPublic: {
      async getAuthorizationToken(credentials?: AwsCredentials) {
        const output = await call(
          {
            endpoint: ecrPublicEndpoints({
              Region: ECR_PUBLIC_REGION,
              UseFIPS: setup.fips,
              UseDualStack: setup.dualStack,
              ...(setup.endpoints.ecrPublic ? { Endpoint: setup.endpoints.ecrPublic } : {}),
            }),
            service: 'ecr-public',
            region: ECR_PUBLIC_REGION,
            target: 'SpencerFrontendService.GetAuthorizationToken',
          },
          credentials,
        );
        return tokenOf(output.authorizationData);
      },
    },
  };
}

/** `authorizationData` as the AWS JSON protocol carries it: the token, and `expiresAt` in epoch seconds. */
function tokenOf(data: unknown): AuthorizationToken | undefined {
  if (!isRecord(data) || typeof data.authorizationToken !== 'string' || !data.authorizationToken) return undefined;
  const expiresAt = typeof data.expiresAt === 'number' ? new Date(data.expiresAt * 1000) : undefined;
  return { authorizationToken: data.authorizationToken, ...(expiresAt ? { expiresAt } : {}) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

type Output = Record<string, unknown> & { $metadata: Record<string, unknown> };

/** One AWS JSON 1.1 call with an empty input: the SDK's retry middleware around signing and sending. */
function caller(setup: DirectSetup, options: DirectOptions) {
  const maxAttempts = options.maxAttempts ?? 3;
  const retry = retryMiddleware({
    maxAttempts: async () => maxAttempts,
    retryStrategy: async () => new StandardRetryStrategy(maxAttempts),
  });
  let clockOffset = 0;

  return async (operation: Operation, credentials?: AwsCredentials): Promise<Output> => {
    const { url, properties } = operation.endpoint;
    const scheme = signingScheme(properties);
    const signer = new SignatureV4({
      credentials: credentials ? async () => credentials : setup.credentials,
      region: scheme?.signingRegion ?? operation.region,
      service: scheme?.signingName ?? operation.service,
      sha256: Hash.bind(null, 'sha256'),
    });
    const body = '{}';
    const request = new HttpRequest({
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      method: 'POST',
      path: `${url.pathname.replace(/\/$/, '')}/`,
      headers: {
        host: url.host,
        'content-type': 'application/x-amz-json-1.1',
        'content-length': String(Buffer.byteLength(body)),
        'x-amz-target': operation.target,
        'user-agent': options.userAgent,
      },
      body,
    });
    const send = async (args: { request: unknown }) => {
      const signed = await signer.sign(args.request as HttpRequest, {
        signingDate: new Date(Date.now() + clockOffset),
      });
      try {
        const response = await sendOnce(signed as HttpRequest, TIMEOUTS);
        return { response, output: parseResponse(response) };
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

function signingScheme(properties: Record<string, unknown> | undefined) {
  const schemes = properties?.authSchemes;
  const first = Array.isArray(schemes) ? (schemes[0] as Record<string, unknown> | undefined) : undefined;
  if (!first) return undefined;
  return {
    signingName: typeof first.signingName === 'string' ? first.signingName : undefined,
    signingRegion: typeof first.signingRegion === 'string' ? first.signingRegion : undefined,
  };
}

/**
 * One HTTP exchange, the body read whole, as an `HttpResponse` (what the retry middleware reads `retry-after`
 * from). Only the scheme's module is loaded. Failures are shaped as the SDK's handler shapes them, which is what
 * the retry strategy classifies: socket errors keep their `code` (ECONNREFUSED, ECONNRESET, ...), and both
 * timeouts are a `TimeoutError`.
 */
export function sendOnce(
  request: HttpRequest,
  timeouts: { connectionMs: number; requestMs: number },
): Promise<HttpResponse> {
  const { request: open } = process.getBuiltinModule(request.protocol === 'https:' ? 'node:https' : 'node:http');
  return new Promise((resolve, reject) => {
    const timeout = (message: string) => Object.assign(new Error(message), { name: 'TimeoutError' });
    const outgoing = open(
      {
        protocol: request.protocol,
        hostname: request.hostname.replace(/^\[(.*)\]$/, '$1'),
        ...(request.port ? { port: request.port } : {}),
        method: request.method,
        path: request.path,
        headers: request.headers,
        // One request per process: no agent, so no keep-alive socket to close afterwards.
        agent: false,
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('error', reject);
        incoming.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(incoming.headers)) {
            if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve(new HttpResponse({ statusCode: incoming.statusCode ?? 0, headers, body: Buffer.concat(chunks) }));
        });
      },
    );
    outgoing.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => {
        outgoing.destroy(
          timeout(`Socket timed out without establishing a connection within ${timeouts.connectionMs} ms`),
        );
      }, timeouts.connectionMs);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    outgoing.setTimeout(timeouts.requestMs, () => {
      outgoing.destroy(timeout(`Connection timed out after ${timeouts.requestMs} ms`));
    });
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

/**
 * A 2xx answer's JSON, or the error the SDK would throw: named by its AWS code (from `x-amzn-errortype`, else the
 * body's `__type`, namespace and `:` suffix dropped), with `$fault`, `$metadata` and `$response` for the retry
 * strategy's throttling, transient and server-error checks.
 */
function parseResponse(response: HttpResponse): Output {
  const text = (response.body as Buffer).toString('utf8');
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = undefined;
  }
  const requestId = header(response, 'x-amzn-requestid');
  const $metadata = { httpStatusCode: response.statusCode, ...(requestId ? { requestId } : {}) };
  if (response.statusCode >= 200 && response.statusCode < 300 && isRecord(parsed)) return { ...parsed, $metadata };
  const body = isRecord(parsed) ? parsed : {};
  const rawCode = header(response, 'x-amzn-errortype') ?? body.__type ?? body.code;
  const code =
    typeof rawCode === 'string' && rawCode
      ? (rawCode.split(':')[0]!.split('#').pop() ?? rawCode)
      : response.statusCode >= 200 && response.statusCode < 300
        ? 'SerializationException'
        : 'UnknownError';
  const message = [body.message, body.Message, body.errorMessage].find((m) => typeof m === 'string') as
    | string
    | undefined;
  const error = new Error(
    message ?? (isRecord(parsed) || !text ? code : `HTTP ${response.statusCode}: ${text.slice(0, 200)}`),
  );
  throw Object.assign(error, {
    name: code,
    $fault: response.statusCode >= 500 ? 'server' : 'client',
    $metadata,
    $response: response,
  });
}

function header(response: HttpResponse, name: string): string | undefined {
  const found = Object.keys(response.headers).find((key) => key.toLowerCase() === name);
  return found === undefined ? undefined : response.headers[found];
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
  const date = response ? header(response, 'date') : undefined;
  const serverTime = date ? Date.parse(date) : Number.NaN;
  if (Number.isNaN(serverTime)) return offset;
  return Math.abs(Date.now() + offset - serverTime) >= SKEW_LIMIT_MS ? serverTime - Date.now() : offset;
}
