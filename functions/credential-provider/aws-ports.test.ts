/**
 * Adapter tests: the real SDK clients against a local stand-in for ECR, ECR Public and STS, reached the way
 * the binary is pointed at it (AWS_ENDPOINT_URL_* and dummy credentials in the environment). Request shapes
 * are asserted here and only here.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { suiteProxy } from '../../shared/net/fakes/fake-proxy.ts';
import { createAwsPorts } from './aws-ports.ts';
import { type FakeAwsServer, startFakeAwsServer } from './testing/fake-aws-server.ts';

let server: FakeAwsServer;
const savedEnv = { ...process.env };
const ports = createAwsPorts({ userAgent: 'ecr-credential-provider/test' });
const EU_WEST_1 = { region: 'eu-west-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false };

beforeAll(async () => {
  server = await startFakeAwsServer({ password: 'adapter-password', expiresAt: new Date('2026-11-02T20:00:00Z') });
  for (const key of Object.keys(process.env)) if (key.startsWith('AWS_')) delete process.env[key];
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_ECR: server.url,
    AWS_ENDPOINT_URL_ECR_PUBLIC: server.url,
    AWS_ENDPOINT_URL_STS: server.url,
    AWS_ACCESS_KEY_ID: 'AKIDNODEROLE',
    AWS_SECRET_ACCESS_KEY: 'node-role-secret',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/nonexistent/config',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
  });
});

afterAll(async () => {
  process.env = savedEnv;
  await server.close();
});

beforeEach(() => {
  server.requests.length = 0;
});

describe('ECR adapter', () => {
  it('calls GetAuthorizationToken in the registry region, signed by the default chain', async () => {
    const token = await ports.ecr.getAuthorizationToken(EU_WEST_1);

    expect(token).toEqual({
      authorizationToken: Buffer.from('AWS:adapter-password').toString('base64'),
      expiresAt: new Date('2026-11-02T20:00:00Z'),
    });
    expect(server.requests).toHaveLength(1);
    const [call] = server.requests;
    expect(call?.operation).toBe('ecr:GetAuthorizationToken');
    expect(call?.body).toBe('{}'); // no registryIds: the token covers every registry the principal can read
    expect(call?.headers.authorization).toMatch(/Credential=AKIDNODEROLE\/\d{8}\/eu-west-1\/ecr\/aws4_request/);
    expect(call?.headers['user-agent']).toContain('ecr-credential-provider/test');
  });

  it('signs with the credentials it is given', async () => {
    await ports.ecr.getAuthorizationToken(EU_WEST_1, {
      accessKeyId: 'ASIAROLE',
      secretAccessKey: 'role-secret',
      sessionToken: 'role-session',
    });
    expect(server.requests[0]?.headers.authorization).toMatch(/Credential=ASIAROLE\//);
    expect(server.requests[0]?.headers['x-amz-security-token']).toBe('role-session');
  });

  it("lets the SDK's own retry absorb throttling", async () => {
    server.failNext({ status: 400, code: 'ThrottlingException', message: 'Rate exceeded' });
    server.failNext({ status: 500, code: 'ServerException', message: 'oops' });

    const token = await ports.ecr.getAuthorizationToken(EU_WEST_1);

    expect(token?.authorizationToken).toBeDefined();
    expect(server.requests).toHaveLength(3);
  });

  it('gives up after the SDK attempts and surfaces the AWS error code', async () => {
    const fast = createAwsPorts({ userAgent: 'test', maxAttempts: 1 });
    server.failNext({ status: 400, code: 'AccessDeniedException', message: 'not authorized' });

    await expect(fast.ecr.getAuthorizationToken(EU_WEST_1)).rejects.toMatchObject({
      name: 'AccessDeniedException',
      message: 'not authorized',
    });
  });

  // With a custom endpoint the SDK refuses the FIPS and dual-stack variants, which proves the flags reach it.
  it.each([
    [
      { region: 'us-east-1', dnsSuffix: 'amazonaws.com', fips: true, dualStack: false },
      /FIPS and custom endpoint are not supported/,
    ],
    [
      { region: 'us-east-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: true },
      /Dualstack and custom endpoint are not supported/,
    ],
  ])('asks the SDK for the endpoint variant of the registry host (%o)', async (endpoint, message) => {
    await expect(ports.ecr.getAuthorizationToken(endpoint)).rejects.toThrow(message);
    expect(server.requests).toHaveLength(0);
  });
});

describe('ECR Public adapter', () => {
  it('calls GetAuthorizationToken in us-east-1', async () => {
    const token = await ports.ecrPublic.getAuthorizationToken();

    expect(token?.expiresAt).toEqual(new Date('2026-11-02T20:00:00Z'));
    expect(server.requests[0]?.operation).toBe('ecr-public:GetAuthorizationToken');
    expect(server.requests[0]?.headers.authorization).toMatch(/\/us-east-1\/ecr-public\/aws4_request/);
  });
});

describe('STS adapter', () => {
  it('exchanges the token unsigned and returns the session credentials', async () => {
    const credentials = await ports.sts.assumeRoleWithWebIdentity({
      roleArn: 'arn:aws:iam::111122223333:role/pull',
      webIdentityToken: 'sa-token',
      roleSessionName: 'ecr-credential-provider-1',
      region: 'eu-west-1',
      dnsSuffix: 'amazonaws.com',
      fips: false,
      dualStack: false,
    });

    expect(credentials).toMatchObject({
      accessKeyId: 'ASIAFAKEROLEKEY',
      secretAccessKey: 'fake-role-secret',
      sessionToken: 'fake-role-session',
    });
    expect(credentials.expiration).toBeInstanceOf(Date);
    const [call] = server.requests;
    expect(call?.operation).toBe('sts:AssumeRoleWithWebIdentity');
    expect(call?.headers.authorization).toBeUndefined();
    const form = new URLSearchParams(call?.body);
    expect(form.get('RoleArn')).toBe('arn:aws:iam::111122223333:role/pull');
    expect(form.get('WebIdentityToken')).toBe('sa-token');
    expect(form.get('RoleSessionName')).toBe('ecr-credential-provider-1');
  });

  it('surfaces STS errors by code', async () => {
    const fast = createAwsPorts({ userAgent: 'test', maxAttempts: 1 });
    server.failNext({ status: 400, code: 'InvalidIdentityToken', message: 'No OpenIDConnect provider found' });
    await expect(
      fast.sts.assumeRoleWithWebIdentity({
        roleArn: 'arn:aws:iam::111122223333:role/pull',
        webIdentityToken: 'sa-token',
        roleSessionName: 's',
        region: 'eu-west-1',
        dnsSuffix: 'amazonaws.com',
        fips: false,
        dualStack: false,
      }),
      // The SDK names the modeled exception class; the wire code stays in `Code`, which awsErrorCode prefers.
    ).rejects.toMatchObject({ name: 'InvalidIdentityTokenException', Code: 'InvalidIdentityToken' });
  });
});

describe('through a proxy', () => {
  const proxy = suiteProxy();
  const proxied = () =>
    createAwsPorts({ userAgent: 'ecr-credential-provider/test', proxies: { HTTP_PROXY: proxy.url } });

  it("sends the clients' calls through the proxy it is given", async () => {
    await proxied().ecr.getAuthorizationToken(EU_WEST_1);
    await proxied().ecrPublic.getAuthorizationToken();

    expect(server.requests.map((r) => r.operation)).toEqual([
      'ecr:GetAuthorizationToken',
      'ecr-public:GetAuthorizationToken',
    ]);
    expect(proxy.seen).toEqual([`POST ${server.url}/`, `POST ${server.url}/`]);
  });

  it("sends the web identity chain's STS call through it too: the SDK gives its STS client the same handler", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aws-ports-web-identity-'));
    const saved = { ...process.env };
    try {
      writeFileSync(join(dir, 'token'), 'projected-token');
      delete process.env.AWS_ACCESS_KEY_ID;
      delete process.env.AWS_SECRET_ACCESS_KEY;
      Object.assign(process.env, {
        AWS_WEB_IDENTITY_TOKEN_FILE: join(dir, 'token'),
        AWS_ROLE_ARN: 'arn:aws:iam::111122223333:role/node-pulls',
      });
      await proxied().ecr.getAuthorizationToken(EU_WEST_1);

      expect(server.requests.map((r) => r.operation)).toEqual([
        'sts:AssumeRoleWithWebIdentity',
        'ecr:GetAuthorizationToken',
      ]);
      expect(proxy.seen).toEqual([`POST ${server.url}/`, `POST ${server.url}/`]);
    } finally {
      process.env = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
