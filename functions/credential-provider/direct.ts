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
 * skew correction the clients apply; sending one request (`sendOnce` and http1.ts, instead of the SDK's
 * `NodeHttpHandler`, which loads `node:https` and TLS even for a plain-HTTP endpoint, and `node:http` at all).
 */
import { statSync } from 'node:fs';
import { Sha256 } from '@aws-crypto/sha256-js';
import { extendedEncodeURIComponent, HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { retryMiddleware, StandardRetryStrategy } from '@smithy/core/retry';
import { SignatureV4 } from '@smithy/signature-v4';
import { type ProxyEnv, proxyAgent, proxyEnv } from '../../shared/net/proxy.ts';
import type { AwsPorts } from './choose-ports.ts';
import { type Answer, bareHost, exchangeOnce, type Timeouts, timeoutError } from './http1.ts';
import {
  type AssumeRoleWithWebIdentityInput,
  type AuthorizationToken,
  type AwsCredentials,
  CALL_BOUNDS,
  type EcrEndpoint,
  type EcrPort,
  type EcrPublicPort,
  type StsPort,
} from './ports.ts';
import { ECR_PUBLIC_DNS_SUFFIX, ECR_PUBLIC_REGION } from './registry.ts';

export type Env = Readonly<Record<string, string | undefined>>;

type CredentialSource = () => Promise<AwsCredentials>;

/** What the direct path needs from the environment, once `directSetup` found it can serve it. */
export interface DirectSetup {
  credentials: CredentialSource;
  /** `AWS_ENDPOINT_URL_<SERVICE>` or `AWS_ENDPOINT_URL`, unless `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`. */
  endpoints: { ecr?: string; ecrPublic?: string; sts?: string };
  /** The proxy variables, when a proxy is set (shared/net/proxy.ts). */
  proxies?: ProxyEnv;
}

/**
 * Variables the direct path reads, or that cannot change its calls. Any other `AWS_*` variable (a retry mode, an
 * app id, a defaults mode, a setting added to the SDK later) sends the run to the SDK clients, which know what it
 * means. That is also how the chain's sources between the profile and IMDS (`AWS_WEB_IDENTITY_TOKEN_FILE`,
 * `AWS_CONTAINER_CREDENTIALS_*`) reach the SDK: they are left out on purpose.
 */
const UNDERSTOOD = new Set([
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_CREDENTIAL_EXPIRATION',
  'AWS_PROFILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_ECR',
  'AWS_ENDPOINT_URL_ECR_PUBLIC',
  'AWS_ENDPOINT_URL_STS',
  'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS',
  // Only at their defaults; other values send everything to the SDK's endpoint rules (see `directSetup`).
  'AWS_USE_FIPS_ENDPOINT',
  'AWS_USE_DUALSTACK_ENDPOINT',
  'AWS_STS_REGIONAL_ENDPOINTS',
  // Read by the SDK's IMDS provider itself.
  'AWS_EC2_METADATA_DISABLED',
  'AWS_EC2_METADATA_SERVICE_ENDPOINT',
  'AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE',
  'AWS_EC2_METADATA_V1_DISABLED',
  // The region comes from the registry's host on both paths; AWS_ECR_ROLE_ARN is this program's own.
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_ECR_ROLE_ARN',
  'AWS_EXECUTION_ENV',
  'AWS_NODEJS_CONNECTION_REUSE_ENABLED',
]);

export type Profile = Readonly<Record<string, string | undefined>>;

export interface FileSystem {
  exists(path: string): boolean;
  home(): string;
  /** The profiles of both shared files, merged as the SDK merges them (its own parser). */
  profiles(paths: { config: string; credentials: string }): Promise<Record<string, Profile>>;
}

/**
 * The SDK's home directory rule (HOME first, then the account's); whether a path is a file (the SDK reads a
 * directory or a missing file as an empty config); and the SDK's own ini parser, loaded only when a file exists.
 */
export const realFileSystem: FileSystem = {
  exists: (path) => statSync(path, { throwIfNoEntry: false })?.isFile() === true,
  // node:os only when HOME is unset: a usual run does not load it.
  home: () => process.env.HOME || process.getBuiltinModule('node:os').homedir(),
  async profiles({ config, credentials }) {
    const { parseKnownFiles } = await import('@smithy/core/config');
    return parseKnownFiles({ configFilepath: config, filepath: credentials, ignoreCache: true });
  },
};

/**
 * Keys a profile may hold and still leave the calls to the direct path: static keys (read like the SDK's
 * `fromIni` reads them), the settings the SDK's IMDS provider reads itself, and the AWS CLI's own. Any other key
 * (`role_arn`, `credential_process`, `sso_session`, `endpoint_url`, `use_fips_endpoint`, `retry_mode`, ...)
 * sends the run to the SDK clients.
 */
const PROFILE_KEYS = new Set([
  'aws_access_key_id',
  'aws_secret_access_key',
  'aws_session_token',
  'region',
  'output',
  'ec2_metadata_service_endpoint',
  'ec2_metadata_service_endpoint_mode',
  'ec2_metadata_v1_disabled',
]);

/**
 * Whether the direct path gives the same answer the SDK's default chain would, and how. The chain's order:
 * environment keys (skipped when `AWS_PROFILE` is set), the profile in the shared files (static keys, or a role,
 * SSO, `credential_process`: the SDK's), a web identity token file, container credentials, then IMDS. A profile
 * also carries client settings, so one with keys outside `PROFILE_KEYS` goes to the SDK as a whole.
 */
export async function directSetup(
  env: Env,
  fs: FileSystem = realFileSystem,
): Promise<DirectSetup | { sdkBecause: string }> {
  const foreign = Object.keys(env).find((name) => name.startsWith('AWS_') && env[name] && !UNDERSTOOD.has(name));
  if (foreign) return { sdkBecause: `${foreign} is set` };
  // Settings the direct calls follow only at their default: FIPS and dual-stack off, regional STS.
  for (const [name, usual] of [
    ['AWS_USE_FIPS_ENDPOINT', 'false'],
    ['AWS_USE_DUALSTACK_ENDPOINT', 'false'],
    ['AWS_STS_REGIONAL_ENDPOINTS', 'regional'],
  ] as const) {
    const value = env[name];
    if (value && value.toLowerCase() !== usual) return { sdkBecause: `${name} is ${JSON.stringify(value)}` };
  }
  const profileName = env.AWS_PROFILE || 'default';
  const profile = await sharedProfile(env, fs, profileName);
  const outside = Object.keys(profile).find((key) => !PROFILE_KEYS.has(key));
  if (outside) return { sdkBecause: `profile ${profileName} has ${outside}` };
  const credentials = credentialSource(env, profile);
  if (typeof credentials === 'string') return { sdkBecause: credentials };
  const proxies = proxyEnv(env);
  return { credentials, endpoints: configuredEndpoints(env), ...(proxies ? { proxies } : {}) };
}

/**
 * The profile the SDK would use, from the files it would read (`~/` expanded as it does), or nothing when
 * neither file exists. A profile missing from existing files is nothing to the SDK either: its chain goes on.
 */
async function sharedProfile(env: Env, fs: FileSystem, name: string): Promise<Profile> {
  const home = fs.home();
  const path = (value: string | undefined, fallback: string) => {
    const chosen = value || `~/${fallback}`;
    return chosen.startsWith('~/') ? `${home}/${chosen.slice(2)}` : chosen;
  };
  const paths = {
    config: path(env.AWS_CONFIG_FILE, '.aws/config'),
    credentials: path(env.AWS_SHARED_CREDENTIALS_FILE, '.aws/credentials'),
  };
  if (!fs.exists(paths.config) && !fs.exists(paths.credentials)) return {};
  return (await fs.profiles(paths))[name] ?? {};
}

function configuredEndpoints(env: Env): DirectSetup['endpoints'] {
  const ignored = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() === 'true';
  const endpoints: DirectSetup['endpoints'] = {};
  for (const [key, service] of [
    ['ecr', 'ECR'],
    ['ecrPublic', 'ECR_PUBLIC'],
    ['sts', 'STS'],
  ] as const) {
    const url = ignored ? undefined : env[`AWS_ENDPOINT_URL_${service}`] || env.AWS_ENDPOINT_URL;
    if (url) endpoints[key] = url;
  }
  return endpoints;
}

function staticCredentials(id: string, secret: string, token: string | undefined): CredentialSource {
  const credentials: AwsCredentials = {
    accessKeyId: id,
    secretAccessKey: secret,
    ...(token ? { sessionToken: token } : {}),
  };
  return async () => credentials;
}

function credentialSource(env: Env, profile: Profile): CredentialSource | string {
  const { AWS_ACCESS_KEY_ID: envId, AWS_SECRET_ACCESS_KEY: envSecret } = env;
  if (!env.AWS_PROFILE && envId && envSecret) return staticCredentials(envId, envSecret, env.AWS_SESSION_TOKEN);
  // The SDK takes a profile's keys when both are strings, even empty ones.
  const { aws_access_key_id: id, aws_secret_access_key: secret } = profile;
  if (typeof id === 'string' && typeof secret === 'string') {
    return staticCredentials(id, secret, profile.aws_session_token);
  }
  const disabled = env.AWS_EC2_METADATA_DISABLED;
  // The SDK's own failure message for this case comes from its chain.
  if (disabled && disabled !== 'false') return 'AWS_EC2_METADATA_DISABLED is set and no keys were found';
  return async () => {
    // Loaded here, not at the top: with keys in the environment a run never needs it (nor the config file
    // loader and file system modules it brings). It reads its own settings (AWS_EC2_METADATA_*, and the
    // profile's ec2_metadata_* keys) itself.
    const { fromInstanceMetadata } = await import('@smithy/credential-provider-imds');
    const { accessKeyId: id, secretAccessKey: secret, sessionToken } = await fromInstanceMetadata()();
    return { accessKeyId: id, secretAccessKey: secret, ...(sessionToken ? { sessionToken } : {}) };
  };
}

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

interface Exchange {
  url: URL;
  headers: Record<string, string>;
  body: string;
  parse(text: string): Record<string, unknown>;
  /** The AWS error code and message of a non-2xx answer. */
  error(text: string, response: HttpResponse): { code?: string; message?: string };
}

/** AWS JSON 1.1 with an empty input, the ECR operations' protocol. */
function jsonRequest(url: URL, target: string): Exchange {
  return {
    url,
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target },
    body: '{}',
    parse(text) {
      const parsed = text ? (JSON.parse(text) as unknown) : {};
      if (!isRecord(parsed)) throw new Error('not a JSON object');
      return parsed;
    },
    error(text, response) {
      let body: Record<string, unknown> = {};
      try {
        const parsed = JSON.parse(text) as unknown;
        if (isRecord(parsed)) body = parsed;
      } catch {
        // Not JSON (a proxy's page, say): the status and the text speak for it.
      }
      const raw = response.headers['x-amzn-errortype'] ?? body.__type ?? body.code;
      const message = [body.message, body.Message, body.errorMessage].find((m) => typeof m === 'string');
      return {
        // `com.amazonaws.ecr#AccessDeniedException:http://...` -> AccessDeniedException, as the SDK trims it.
        ...(typeof raw === 'string' && raw ? { code: raw.split(':')[0]!.split('#').pop() } : {}),
        ...(typeof message === 'string' ? { message } : {}),
      };
    },
  };
}

/** The query protocol (form-encoded input, XML output), STS's. */
function queryRequest(url: URL, input: Record<string, string>): Exchange {
  return {
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: Object.entries(input)
      // RFC 3986, with the SDK's own encoder (the one its query serializer uses).
      .map(([key, value]) => `${extendedEncodeURIComponent(key)}=${extendedEncodeURIComponent(value)}`)
      .join('&'),
    parse(text) {
      const credentials = xmlElement(text, 'Credentials');
      if (credentials === undefined) throw new Error('no Credentials element');
      return Object.fromEntries(
        ['AccessKeyId', 'SecretAccessKey', 'SessionToken', 'Expiration'].map((name) => [
          name,
          xmlElement(credentials, name),
        ]),
      );
    },
    error(text) {
      const code = xmlElement(text, 'Code');
      const message = xmlElement(text, 'Message');
      return { ...(code ? { code } : {}), ...(message ? { message } : {}) };
    },
  };
}

/** The text of the first `<name>` element, entities decoded; STS answers are flat and attribute-free here. */
export function xmlElement(xml: string, name: string): string | undefined {
  const match = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`).exec(xml);
  if (!match) return undefined;
  return match[1]!.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, entity: string) => {
    const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
    if (entity[0] !== '#') return named[entity.toLowerCase()]!;
    return String.fromCodePoint(
      entity[1] === 'x' || entity[1] === 'X' ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1)),
    );
  });
}

function credentialsOf(output: Record<string, unknown>): AwsCredentials {
  const { AccessKeyId, SecretAccessKey, SessionToken, Expiration } = output;
  if (typeof AccessKeyId !== 'string' || typeof SecretAccessKey !== 'string' || !AccessKeyId || !SecretAccessKey) {
    throw new Error('STS returned no credentials');
  }
  const expiration = typeof Expiration === 'string' ? new Date(Expiration) : undefined;
  return {
    accessKeyId: AccessKeyId,
    secretAccessKey: SecretAccessKey,
    ...(typeof SessionToken === 'string' && SessionToken ? { sessionToken: SessionToken } : {}),
    ...(expiration && !Number.isNaN(expiration.getTime()) ? { expiration } : {}),
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

/**
 * One HTTP exchange, the body read whole, as an `HttpResponse` (what the retry middleware reads `retry-after`
 * from): on a socket of its own (http1.ts) or, when a proxy is set, through `node:http(s)` and the proxy agent.
 * Failures are shaped as the SDK's handler shapes them, which is what the retry strategy classifies: socket errors
 * keep their `code` (ECONNREFUSED, ECONNRESET, ...), and both timeouts are a `TimeoutError`.
 */
export async function sendOnce(request: HttpRequest, timeouts: Timeouts, proxies?: ProxyEnv): Promise<HttpResponse> {
  if (proxies) return new HttpResponse(await sendThroughProxy(request, timeouts, proxies));
  const { protocol, hostname, port, method, path, headers, body } = request;
  const one = { protocol, hostname, method, path, headers, body: body as string | undefined };
  return new HttpResponse(await exchangeOnce(port ? { ...one, port } : one, timeouts));
}

/** `node:http(s)` with the proxy agent (shared/net/proxy.ts), which does the proxying. */
function sendThroughProxy(request: HttpRequest, timeouts: Timeouts, proxies: ProxyEnv): Promise<Answer> {
  const { request: open } = process.getBuiltinModule(request.protocol === 'https:' ? 'node:https' : 'node:http');
  return new Promise((resolve, reject) => {
    const outgoing = open(
      {
        protocol: request.protocol,
        hostname: bareHost(request.hostname),
        ...(request.port ? { port: request.port } : {}),
        method: request.method,
        path: request.path,
        headers: request.headers,
        agent: proxyAgent(request.protocol, proxies),
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
          resolve({ statusCode: incoming.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
        });
      },
    );
    outgoing.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => {
        outgoing.destroy(timeoutError('connect', timeouts));
      }, timeouts.connectionTimeoutMs);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    outgoing.setTimeout(timeouts.requestTimeoutMs, () => {
      outgoing.destroy(timeoutError('idle', timeouts));
    });
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

/**
 * A 2xx answer's output, or the error the SDK would throw: named by its AWS code, with `$fault`, `$metadata` and
 * `$response` for the retry strategy's throttling, transient and server-error checks. An answer that does not
 * parse is a `SerializationException` (2xx) or `UnknownError`, with the status and the start of the text.
 */
function parseResponse(response: HttpResponse, exchange: Exchange): Output {
  const text = (response.body as Buffer).toString('utf8');
  const requestId = response.headers['x-amzn-requestid'];
  const $metadata = { httpStatusCode: response.statusCode, ...(requestId ? { requestId } : {}) };
  const ok = response.statusCode >= 200 && response.statusCode < 300;
  let problem: { code?: string; message?: string };
  if (ok) {
    try {
      return { ...exchange.parse(text), $metadata };
    } catch (err) {
      problem = { code: 'SerializationException', message: `unreadable answer (${(err as Error).message})` };
    }
  } else {
    problem = exchange.error(text, response);
  }
  const code = problem.code ?? 'UnknownError';
  const message = problem.message ?? (text ? `HTTP ${response.statusCode}: ${text.slice(0, 200)}` : code);
  throw Object.assign(new Error(message), {
    name: code,
    $fault: response.statusCode >= 500 ? 'server' : 'client',
    $metadata,
    $response: response,
  });
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
