import { statSync } from 'node:fs';
import { type ProxyEnv, proxyEnv } from '../../shared/net/proxy.ts';
import type { AwsCredentials } from './ports.ts';

/*
 * Whether the direct calls (direct.ts) can serve this run's environment, and with which credentials and endpoints:
 * any setting they do not follow sends the run to the SDK clients (aws-ports.ts).
 */

export type Env = Readonly<Record<string, string | undefined>>;

export type CredentialSource = () => Promise<AwsCredentials>;

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
