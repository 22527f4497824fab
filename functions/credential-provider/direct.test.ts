// The SDK's own endpoint rules and partition table, to check the direct calls' endpoint names against.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultEndpointResolver as ecrRules } from '@aws-sdk/client-ecr/dist-es/endpoint/endpointResolver.js';
import { defaultEndpointResolver as ecrPublicRules } from '@aws-sdk/client-ecr-public/dist-es/endpoint/endpointResolver.js';
import { defaultEndpointResolver as stsRules } from '@aws-sdk/client-sts/dist-es/endpoint/endpointResolver.js';
import { partition } from '@aws-sdk/core/client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { suiteProxy } from '../../shared/net/fakes/fake-proxy.ts';
import type { AwsPorts } from './choose-ports.ts';
import { createDirectPorts, REGIONAL_HOSTS } from './direct.ts';
import { xmlElement } from './direct-protocols.ts';
import { type DirectSetup, directSetup, type Env, type FileSystem, realFileSystem } from './direct-setup.ts';
import { parseEcrRegistry } from './registry.ts';
import { type FakeAwsServer, IMDS_ROLE, startFakeAwsServer } from './testing/fake-aws-server.ts';

const NO_FILES: FileSystem = { exists: () => false, home: () => '/home/kubelet', profiles: async () => ({}) };
const KEYS = { AWS_ACCESS_KEY_ID: 'AKIDNODE', AWS_SECRET_ACCESS_KEY: 'node-secret' };
const USER_AGENT = 'ecr-credential-provider/1.2.3';

async function setupFor(env: Env, fs: FileSystem = NO_FILES): Promise<DirectSetup> {
  const setup = await directSetup(env, fs);
  if ('sdkBecause' in setup) throw new Error(`expected the direct path, got: ${setup.sdkBecause}`);
  return setup;
}

describe('directSetup: which configurations the direct path serves', () => {
  it.each([
    ['no environment at all (the instance role, through IMDS)', {}],
    ['keys in the environment', KEYS],
    [
      'keys with a session token and the region variables',
      { ...KEYS, AWS_SESSION_TOKEN: 't', AWS_REGION: 'eu-west-1' },
    ],
    ['an endpoint override', { AWS_ENDPOINT_URL_ECR: 'http://127.0.0.1:1' }],
    ['IMDS settings the SDK provider reads', { AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE: 'IPv6' }],
    ['FIPS and dual-stack explicitly off', { AWS_USE_FIPS_ENDPOINT: 'false', AWS_USE_DUALSTACK_ENDPOINT: 'false' }],
    ['regional STS endpoints, the default', { AWS_STS_REGIONAL_ENDPOINTS: 'regional' }],
    ['IMDS disabled but keys given', { ...KEYS, AWS_EC2_METADATA_DISABLED: 'true' }],
    // AWS_PROFILE skips the environment's keys; with no such profile the SDK's chain goes on to IMDS.
    ['a profile that is not in any file', { ...KEYS, AWS_PROFILE: 'pulls' }],
  ])('%s', async (_, env) => {
    expect(await directSetup(env, NO_FILES)).not.toHaveProperty('sdkBecause');
  });

  it.each([
    [
      'a web identity token file',
      { AWS_WEB_IDENTITY_TOKEN_FILE: '/t', AWS_ROLE_ARN: 'arn' },
      'AWS_WEB_IDENTITY_TOKEN_FILE is set',
    ],
    [
      'container credentials',
      { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://x' },
      'AWS_CONTAINER_CREDENTIALS_FULL_URI is set',
    ],
    ['IMDS disabled and no keys', { AWS_EC2_METADATA_DISABLED: 'true' }, 'AWS_EC2_METADATA_DISABLED is set'],
    ['a retry mode', { ...KEYS, AWS_RETRY_MODE: 'adaptive' }, 'AWS_RETRY_MODE is set'],
    ['FIPS endpoints', { AWS_USE_FIPS_ENDPOINT: 'true' }, 'AWS_USE_FIPS_ENDPOINT is "true"'],
    ['dual-stack endpoints', { AWS_USE_DUALSTACK_ENDPOINT: 'true' }, 'AWS_USE_DUALSTACK_ENDPOINT is "true"'],
    ['an invalid FIPS flag', { AWS_USE_FIPS_ENDPOINT: 'yes' }, 'AWS_USE_FIPS_ENDPOINT is "yes"'],
    [
      'legacy STS endpoints',
      { ...KEYS, AWS_STS_REGIONAL_ENDPOINTS: 'legacy' },
      'AWS_STS_REGIONAL_ENDPOINTS is "legacy"',
    ],
    [
      'only half of the keys',
      { AWS_ACCESS_KEY_ID: 'AKID', AWS_EC2_METADATA_DISABLED: 'true' },
      'AWS_EC2_METADATA_DISABLED',
    ],
  ])('%s goes to the SDK', async (_, env, reason) => {
    const setup = await directSetup(env, NO_FILES);
    expect(setup).toHaveProperty('sdkBecause');
    expect((setup as { sdkBecause: string }).sdkBecause).toContain(reason);
  });

  /** Shared files at the given paths holding these merged profiles. */
  const files = (paths: string[], profiles: Record<string, Record<string, string>>): FileSystem => ({
    exists: (path) => paths.includes(path),
    home: () => '/root',
    profiles: async () => profiles,
  });
  const keysOf = async (env: Env, fs: FileSystem) => (await setupFor(env, fs)).credentials();

  it("takes a profile's static keys, from the default profile or AWS_PROFILE's, over the environment's", async () => {
    const fs = files(['/root/.aws/credentials'], {
      default: { aws_access_key_id: 'AKIDDEFAULT', aws_secret_access_key: 'default-secret' },
      pulls: { aws_access_key_id: 'AKIDPULLS', aws_secret_access_key: 'pulls-secret', aws_session_token: 't' },
    });

    expect(await keysOf({}, fs)).toEqual({ accessKeyId: 'AKIDDEFAULT', secretAccessKey: 'default-secret' });
    expect(await keysOf({ ...KEYS, AWS_PROFILE: 'pulls' }, fs)).toEqual({
      accessKeyId: 'AKIDPULLS',
      secretAccessKey: 'pulls-secret',
      sessionToken: 't',
    });
    // Without AWS_PROFILE the environment's keys come first, as in the SDK's chain.
    expect(await keysOf(KEYS, fs)).toEqual({ accessKeyId: 'AKIDNODE', secretAccessKey: 'node-secret' });
  });

  it('keeps the direct path for a config file that only sets a region (the instance role then)', async () => {
    const fs = files(['/root/.aws/config'], { default: { region: 'eu-west-1', output: 'json' } });
    expect(await directSetup({}, fs)).not.toHaveProperty('sdkBecause');
  });

  it.each([
    ['role_arn', { role_arn: 'arn:aws:iam::111122223333:role/r', source_profile: 'base' }],
    ['credential_process', { credential_process: '/usr/bin/creds' }],
    ['sso_session', { sso_session: 'corp', sso_account_id: '111122223333' }],
    ['endpoint_url', { endpoint_url: 'https://vpce.example', aws_access_key_id: 'A', aws_secret_access_key: 'S' }],
    ['use_fips_endpoint', { use_fips_endpoint: 'true' }],
  ])('sends a profile with %s to the SDK', async (key, profile) => {
    const fs = files(['/root/.aws/config'], { default: profile });
    expect(await directSetup(KEYS, fs)).toEqual({ sdkBecause: `profile default has ${key}` });
  });

  it('reads the files the SDK reads: the variables first, `~/` expanded, only when one exists', async () => {
    const read: string[] = [];
    const fs: FileSystem = {
      exists: (path) => path === '/root/custom/config',
      home: () => '/root',
      profiles: async (paths) => {
        read.push(paths.config, paths.credentials);
        return { default: { role_arn: 'arn' } };
      },
    };

    expect(await directSetup({ AWS_CONFIG_FILE: '~/custom/config' }, fs)).toHaveProperty('sdkBecause');
    expect(read).toEqual(['/root/custom/config', '/root/.aws/credentials']);
    expect(await directSetup({}, fs)).not.toHaveProperty('sdkBecause');
    expect(read).toHaveLength(2);
  });

  it("merges the two files' profiles with the SDK's own parser", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'direct-setup-'));
    try {
      const config = join(dir, 'config');
      const credentials = join(dir, 'credentials');
      writeFileSync(config, '[profile pulls]\nregion = eu-west-1\n[default]\nrole_arn = arn:aws:iam::1:role/r\n');
      writeFileSync(credentials, '[pulls]\naws_access_key_id = AKIDFILE\naws_secret_access_key = file-secret\n');
      const profiles = await realFileSystem.profiles({ config, credentials });
      expect(profiles.pulls).toEqual({
        region: 'eu-west-1',
        aws_access_key_id: 'AKIDFILE',
        aws_secret_access_key: 'file-secret',
      });
      expect(profiles.default).toEqual({ role_arn: 'arn:aws:iam::1:role/r' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts only files as shared files, as the SDK reads a directory or a missing path as empty', () => {
    const dir = mkdtempSync(join(tmpdir(), 'direct-setup-'));
    try {
      writeFileSync(join(dir, 'config'), '[default]\n');
      expect(realFileSystem.exists(join(dir, 'config'))).toBe(true);
      expect(realFileSystem.exists(dir)).toBe(false);
      expect(realFileSystem.exists(join(dir, 'missing'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes endpoint overrides per service, then the global one, unless told to ignore them', async () => {
    expect((await setupFor({ AWS_ENDPOINT_URL: 'http://all', AWS_ENDPOINT_URL_ECR: 'http://ecr' })).endpoints).toEqual({
      ecr: 'http://ecr',
      ecrPublic: 'http://all',
      sts: 'http://all',
    });
    expect(
      (await setupFor({ AWS_ENDPOINT_URL: 'http://all', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' })).endpoints,
    ).toEqual({});
  });
});

describe('direct ports against a stand-in AWS that checks signatures', () => {
  let server: FakeAwsServer;
  beforeAll(async () => {
    server = await startFakeAwsServer({
      password: 'direct-password',
      secrets: { AKIDNODE: 'node-secret', [IMDS_ROLE.accessKeyId]: IMDS_ROLE.secretAccessKey, ASIAROLE: 'role-secret' },
    });
  });
  afterAll(() => server.close());
  afterEach(() => {
    vi.unstubAllEnvs();
    sdkCalls.length = 0;
    server.requests.length = 0;
    server.imdsRequests.length = 0;
  });

  const endpoint = { region: 'eu-west-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false };
  const sdkCalls: string[] = [];
  const sdk = async (): Promise<AwsPorts> => ({
    ecr: {
      getAuthorizationToken: async (target) => {
        sdkCalls.push(`ecr ${target.region} fips=${target.fips} dualStack=${target.dualStack}`);
        return { authorizationToken: 'from-sdk' };
      },
    },
    ecrPublic: { getAuthorizationToken: async () => ({ authorizationToken: 'from-sdk' }) },
    sts: {
      assumeRoleWithWebIdentity: async (input) => {
        sdkCalls.push(`sts ${input.region} fips=${input.fips}`);
        return { accessKeyId: 'SDK', secretAccessKey: 'sdk' };
      },
    },
  });
  const ports = async (env: Env) =>
    createDirectPorts(await setupFor({ AWS_ENDPOINT_URL: server.url, ...env }), { userAgent: USER_AGENT }, sdk);
  const role = {
    roleArn: 'arn:aws:iam::111122223333:role/pull',
    webIdentityToken: "sa-token/with+odd*chars'()!",
    roleSessionName: 'ecr-credential-provider-1',
    region: 'eu-west-1',
    dnsSuffix: 'amazonaws.com',
    fips: false,
    dualStack: false,
  };

  it('gets an ECR token with keys from the environment, signed for ecr in the registry region', async () => {
    const token = await (await ports(KEYS)).ecr.getAuthorizationToken(endpoint);

    expect(Buffer.from(token!.authorizationToken, 'base64').toString()).toBe('AWS:direct-password');
    expect(token!.expiresAt).toEqual(server.expiresAt);
    expect(server.requests).toHaveLength(1);
    const [sent] = server.requests;
    expect(sent!.operation).toBe('ecr:GetAuthorizationToken');
    expect(sent!.body).toBe('{}');
    expect(sent!.headers).toMatchObject({
      'content-type': 'application/x-amz-json-1.1',
      'user-agent': USER_AGENT,
      'amz-sdk-request': 'attempt=1; max=3',
    });
    expect(sent!.headers['amz-sdk-invocation-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent!.headers.authorization).toMatch(/Credential=AKIDNODE\/\d{8}\/eu-west-1\/ecr\/aws4_request/);
  });

  it('gets an ECR Public token in us-east-1, signed for ecr-public', async () => {
    const token = await (await ports(KEYS)).ecrPublic.getAuthorizationToken();

    expect(token?.authorizationToken).toBe(Buffer.from('AWS:direct-password').toString('base64'));
    expect(server.requests.map((r) => r.operation)).toEqual(['ecr-public:GetAuthorizationToken']);
    expect(server.requests[0]!.headers.authorization).toMatch(/\/us-east-1\/ecr-public\/aws4_request/);
  });

  it('uses the instance role from IMDSv2 when the environment has no keys', async () => {
    // The SDK's IMDS provider reads its settings from the process environment itself.
    vi.stubEnv('AWS_EC2_METADATA_SERVICE_ENDPOINT', server.url);
    await (await ports({})).ecr.getAuthorizationToken(endpoint);

    expect(server.imdsRequests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'PUT /latest/api/token',
      'GET /latest/meta-data/iam/security-credentials/',
      `GET /latest/meta-data/iam/security-credentials/${IMDS_ROLE.name}`,
    ]);
    const [sent] = server.requests;
    expect(sent!.headers.authorization).toMatch(new RegExp(`Credential=${IMDS_ROLE.accessKeyId}/`));
    expect(sent!.headers['x-amz-security-token']).toBe(IMDS_ROLE.sessionToken);
  });

  describe('through a proxy named in the environment', () => {
    const proxy = suiteProxy();

    it('sends the calls through HTTP_PROXY, signed as without it', async () => {
      const direct = await ports({ ...KEYS, HTTP_PROXY: proxy.url });
      const token = await direct.ecr.getAuthorizationToken(endpoint);
      await direct.sts.assumeRoleWithWebIdentity(role);

      expect(Buffer.from(token!.authorizationToken, 'base64').toString()).toBe('AWS:direct-password');
      expect(proxy.seen).toEqual([`POST ${server.url}/`, `POST ${server.url}/`]);
      expect(server.requests.map((r) => r.operation)).toEqual([
        'ecr:GetAuthorizationToken',
        'sts:AssumeRoleWithWebIdentity',
      ]);
    });

    it('goes direct to a host NO_PROXY names', async () => {
      await (
        await ports({ ...KEYS, HTTP_PROXY: proxy.url, NO_PROXY: 'example.com,127.0.0.1' })
      ).ecr.getAuthorizationToken(endpoint);

      expect(server.requests).toHaveLength(1);
      expect(proxy.seen).toEqual([]);
    });

    it('keeps IMDS off the proxy: it is link-local', async () => {
      vi.stubEnv('AWS_EC2_METADATA_SERVICE_ENDPOINT', server.url);
      await (await ports({ HTTP_PROXY: proxy.url })).ecr.getAuthorizationToken(endpoint);

      expect(server.imdsRequests).toHaveLength(3);
      expect(proxy.seen).toEqual([`POST ${server.url}/`]);
    });
  });

  it("signs with the caller's credentials (a service account's role) instead of the node's", async () => {
    const credentials = { accessKeyId: 'ASIAROLE', secretAccessKey: 'role-secret', sessionToken: 'role-session' };
    vi.stubEnv('AWS_EC2_METADATA_SERVICE_ENDPOINT', server.url);
    await (await ports({})).ecr.getAuthorizationToken(endpoint, credentials);

    expect(server.imdsRequests).toEqual([]);
    expect(server.requests[0]!.headers.authorization).toMatch(/Credential=ASIAROLE\//);
    expect(server.requests[0]!.headers['x-amz-security-token']).toBe('role-session');
  });

  it('retries throttling with the standard strategy, then answers', async () => {
    server.failNext({ status: 400, code: 'ThrottlingException', message: 'Rate exceeded' });
    server.failNext({ status: 503, code: 'ServiceUnavailableException', message: 'busy' });

    const token = await (await ports(KEYS)).ecr.getAuthorizationToken(endpoint);

    expect(token).toBeDefined();
    expect(server.requests.map((r) => r.headers['amz-sdk-request'])).toEqual([
      'attempt=1; max=3',
      'attempt=2; max=3',
      'attempt=3; max=3',
    ]);
    // One invocation id for the whole call, as the SDK does.
    expect(new Set(server.requests.map((r) => r.headers['amz-sdk-invocation-id'])).size).toBe(1);
  });

  it('gives up after three attempts with the AWS code and message', async () => {
    for (let i = 0; i < 3; i++) server.failNext({ status: 400, code: 'ThrottlingException', message: 'Rate exceeded' });

    const failure = await (await ports(KEYS)).ecr.getAuthorizationToken(endpoint).catch((err: unknown) => err);

    expect(failure).toMatchObject({
      name: 'ThrottlingException',
      message: 'Rate exceeded',
      $fault: 'client',
      $metadata: { httpStatusCode: 400, attempts: 3 },
    });
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a client error', async () => {
    server.failNext({
      status: 400,
      code: 'com.amazonaws.ecr#AccessDeniedException:http://internal',
      message: 'not authorized',
    });

    const failure = await (await ports(KEYS)).ecr.getAuthorizationToken(endpoint).catch((err: unknown) => err);

    expect(failure).toMatchObject({ name: 'AccessDeniedException', message: 'not authorized' });
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a wrong secret with the signature check (the stand-in really verifies)', async () => {
    const failure = await (await ports({ ...KEYS, AWS_SECRET_ACCESS_KEY: 'wrong' })).ecr
      .getAuthorizationToken(endpoint)
      .catch((err: unknown) => err);

    expect(failure).toMatchObject({ name: 'InvalidSignatureException', $metadata: { httpStatusCode: 403 } });
  });

  it('re-signs with the server clock after a clock skew answer', async () => {
    const serverTime = new Date(Date.now() + 3 * 3600_000);
    server.failNext({
      status: 400,
      code: 'InvalidSignatureException',
      message: 'Signature expired',
      headers: { date: serverTime.toUTCString() },
    });

    await (await ports(KEYS)).ecr.getAuthorizationToken(endpoint);

    const dates = server.requests.map((r) => String(r.headers['x-amz-date']));
    expect(dates).toHaveLength(2);
    const hour = (amzDate: string) => Number(amzDate.slice(9, 11));
    expect(dates[1]!.slice(0, 8) + hour(dates[1]!)).toBe(
      serverTime.toISOString().replace(/[-:]/g, '').slice(0, 8) + serverTime.getUTCHours(),
    );
    expect(dates[0]).not.toBe(dates[1]);
  });

  it('exchanges a service account token with STS unsigned, form-encoded, and reads the XML answer', async () => {
    const credentials = await (await ports(KEYS)).sts.assumeRoleWithWebIdentity(role);

    expect(credentials).toMatchObject({
      accessKeyId: 'ASIAFAKEROLEKEY',
      secretAccessKey: 'fake-role-secret',
      sessionToken: 'fake-role-session',
    });
    expect(credentials.expiration).toBeInstanceOf(Date);
    const [sent] = server.requests;
    expect(sent!.operation).toBe('sts:AssumeRoleWithWebIdentity');
    expect(sent!.headers.authorization).toBeUndefined();
    expect(sent!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(sent!.body))).toEqual({
      Action: 'AssumeRoleWithWebIdentity',
      Version: '2011-06-15',
      RoleArn: role.roleArn,
      RoleSessionName: role.roleSessionName,
      WebIdentityToken: role.webIdentityToken,
    });
    expect(sent!.body).toContain('WebIdentityToken=sa-token%2Fwith%2Bodd%2Achars%27%28%29%21');
  });

  it("names an STS error by its Code element, as the plugin's hints expect", async () => {
    server.failNext({ status: 400, code: 'InvalidIdentityToken', message: 'No OpenIDConnect provider found' });

    const failure = await (await ports(KEYS)).sts.assumeRoleWithWebIdentity(role).catch((err: unknown) => err);

    expect(failure).toMatchObject({ name: 'InvalidIdentityToken', message: 'No OpenIDConnect provider found' });
    expect(server.requests).toHaveLength(1);
  });

  it('hands FIPS and dual-stack registries to the SDK, whose endpoint rules cover them', async () => {
    const direct = await ports(KEYS);
    await direct.ecr.getAuthorizationToken({ ...endpoint, fips: true });
    await direct.ecr.getAuthorizationToken({ ...endpoint, dualStack: true, dnsSuffix: 'on.aws' });
    await direct.sts.assumeRoleWithWebIdentity({ ...role, fips: true });

    expect(sdkCalls).toEqual([
      'ecr eu-west-1 fips=true dualStack=false',
      'ecr eu-west-1 fips=false dualStack=true',
      'sts eu-west-1 fips=true',
    ]);
    expect(server.requests).toEqual([]);
  });
});

/** Every region of the SDK's partition table (the package exports only the lookup, so the table is read here). */
function sdkRegions(): { region: string; dnsSuffix: string }[] {
  const entry = createRequire(import.meta.url).resolve('@aws-sdk/core/client');
  const root = entry.slice(0, entry.lastIndexOf(`${'/'}dist-`));
  const text = readFileSync(join(root, 'dist-es/submodules/client/util-endpoints/lib/aws/partitions.js'), 'utf8');
  const table = JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)) as {
    partitions: { outputs: { dnsSuffix: string }; regions: Record<string, unknown> }[];
  };
  return table.partitions.flatMap((p) =>
    Object.keys(p.regions)
      .filter((region) => !region.startsWith('aws-'))
      .map((region) => ({ region, dnsSuffix: p.outputs.dnsSuffix })),
  );
}

describe('endpoint names', () => {
  const regions = sdkRegions();

  it('knows every partition the SDK lists', () => {
    expect(regions.length).toBeGreaterThan(30);
    expect(new Set(regions.map((r) => r.dnsSuffix)).size).toBeGreaterThanOrEqual(5);
  });

  it.each(regions)("names the SDK's ECR and STS endpoints in $region", ({ region, dnsSuffix }) => {
    expect(partition(region).dnsSuffix).toBe(dnsSuffix);
    // The registry host of that region gives the suffix the direct calls use.
    const registry = parseEcrRegistry(`111122223333.dkr.ecr.${region}.${dnsSuffix}`);
    expect(registry).toMatchObject({ kind: 'private', region, dnsSuffix });
    const params = { Region: region, UseFIPS: false, UseDualStack: false };
    expect(`https://${REGIONAL_HOSTS.ecr(region, dnsSuffix)}/`).toBe(ecrRules(params).url.href);
    expect(`https://${REGIONAL_HOSTS.sts(region, dnsSuffix)}/`).toBe(
      stsRules({ ...params, UseGlobalEndpoint: false }).url.href,
    );
  });

  it("names the SDK's ECR Public endpoint", () => {
    expect(`https://${REGIONAL_HOSTS.ecrPublic('us-east-1', 'amazonaws.com')}/`).toBe(
      ecrPublicRules({ Region: 'us-east-1', UseFIPS: false, UseDualStack: false }).url.href,
    );
  });
});

describe('xmlElement', () => {
  it('reads the first element and decodes entities', () => {
    const xml = '<A><Code>Bad&amp;Worse</Code><Message>a &lt;b&gt; &#x41;&#66; &quot;q&quot; &apos;</Message></A>';
    expect(xmlElement(xml, 'Code')).toBe('Bad&Worse');
    expect(xmlElement(xml, 'Message')).toBe('a <b> AB "q" \'');
    expect(xmlElement(xml, 'Missing')).toBeUndefined();
    expect(xmlElement('<Credentials xmlns="x"><K>v</K></Credentials>', 'Credentials')).toBe('<K>v</K>');
  });
});
