/**
 * The built single executable, run as kubelet runs it, against the local stand-in for AWS. Skipped (with the
 * reason in its name) until `npm run build:credential-provider` has produced one for this machine.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { executablePath, TARGET_ARCHES, type TargetArch } from '../../scripts/build-credential-provider.ts';
import { suiteProxy } from '../../shared/net/fakes/fake-proxy.ts';
import { request } from './in-memory.ts';
import { type FakeAwsServer, IMDS_ROLE, LOOPBACK_TLS, startFakeAwsServer } from './testing/fake-aws-server.ts';

const arch = TARGET_ARCHES.find((candidate) => candidate === process.arch) as TargetArch | undefined;
const binary = arch && process.platform === 'linux' ? executablePath(arch) : undefined;
const present = binary !== undefined && existsSync(binary);
const title = present
  ? `built executable ${binary}`
  : `built executable (skipped: no ${binary ?? `linux binary for ${process.platform}-${process.arch}`}; run npm run build:credential-provider)`;

const IMAGE = '111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/api:1.4.2';

describe.skipIf(!present)(title, () => {
  let server: FakeAwsServer;
  /** The same stand-in over HTTPS, as the real ECR and STS answer; the executable trusts it only when told to. */
  let tlsServer: FakeAwsServer;

  beforeAll(async () => {
    const options = {
      password: 'binary-password',
      // Every signature is checked, on both paths (the direct calls and the SDK asset).
      secrets: {
        AKIDNODEROLE: 'node-role-secret',
        AKIDFROMPROFILE: 'profile-secret',
        ASIAFAKEROLEKEY: 'fake-role-secret',
        [IMDS_ROLE.accessKeyId]: IMDS_ROLE.secretAccessKey,
      },
    };
    server = await startFakeAwsServer(options);
    tlsServer = await startFakeAwsServer({ ...options, tls: true });
  });
  afterAll(async () => {
    await server?.close();
    await tlsServer?.close();
  });
  beforeEach(() => {
    for (const standIn of [server, tlsServer]) {
      standIn.requests.length = 0;
      standIn.imdsRequests.length = 0;
    }
  });

  /** No keys in the environment: the node's instance role from the stand-in's IMDS, as on most nodes. */
  const instanceRole = () => ({
    AWS_ACCESS_KEY_ID: undefined,
    AWS_SECRET_ACCESS_KEY: undefined,
    AWS_EC2_METADATA_DISABLED: undefined,
    AWS_EC2_METADATA_SERVICE_ENDPOINT: server.url,
  });

  // The direct calls send the program's own user agent; the SDK clients put theirs first.
  const viaSdk = (index: number) => /aws-sdk-js/.test(String(server.requests[index]?.headers['user-agent']));

  function run(args: string[], stdin: string, extraEnv: Record<string, string | undefined> = {}) {
    // A clean environment, as on a node: only what kubelet's config would pass plus the fake endpoints.
    const env: Record<string, string | undefined> = {
      PATH: '/usr/bin:/bin',
      HOME: '/nonexistent',
      AWS_ACCESS_KEY_ID: 'AKIDNODEROLE',
      AWS_SECRET_ACCESS_KEY: 'node-role-secret',
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_ENDPOINT_URL_ECR: server.url,
      AWS_ENDPOINT_URL_ECR_PUBLIC: server.url,
      AWS_ENDPOINT_URL_STS: server.url,
      ...extraEnv,
    };
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(binary!, args, { env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(stdin);
    });
  }

  it('answers a v1 request for a private registry', async () => {
    const { code, stdout, stderr } = await run([], request(IMAGE));

    expect(stderr).toBe('');
    expect(code).toBe(0);
    const response = JSON.parse(stdout);
    expect(response).toMatchObject({
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
      kind: 'CredentialProviderResponse',
      cacheKeyType: 'Registry',
      auth: { '111122223333.dkr.ecr.eu-west-1.amazonaws.com': { username: 'AWS', password: 'binary-password' } },
    });
    expect(response.cacheDuration).toMatch(/^5h59m\d+s$|^6h0m0s$/);
    expect(server.requests.map((r) => r.operation)).toEqual(['ecr:GetAuthorizationToken']);
    expect(server.requests[0]?.headers['user-agent']).toMatch(/^ecr-credential-provider\/\d+\.\d+\.\d+$/);
    expect(viaSdk(0)).toBe(false);
  });

  describe('over HTTPS', () => {
    const overTls = (extra: Record<string, string | undefined> = {}) => ({
      AWS_ENDPOINT_URL_ECR: tlsServer.url,
      AWS_ENDPOINT_URL_STS: tlsServer.url,
      ...extra,
    });

    it('answers with the instance role from IMDS (plain HTTP) and ECR over TLS, as on a real node', async () => {
      const { code, stderr } = await run([], request(IMAGE), {
        ...overTls({ NODE_EXTRA_CA_CERTS: LOOPBACK_TLS.cert }),
        ...instanceRole(),
      });

      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(server.imdsRequests.map((r) => r.method)).toEqual(['PUT', 'GET', 'GET']);
      expect(tlsServer.requests.map((r) => r.operation)).toEqual(['ecr:GetAuthorizationToken']);
      expect(tlsServer.requests[0]?.headers.authorization).toMatch(new RegExp(`Credential=${IMDS_ROLE.accessKeyId}/`));
      expect(tlsServer.requests[0]?.headers['user-agent']).toMatch(/^ecr-credential-provider\//);
      expect(server.requests).toEqual([]);
    });

    it('answers over TLS through the SDK clients too', async () => {
      const { code, stderr } = await run(
        [],
        request(IMAGE),
        overTls({ NODE_EXTRA_CA_CERTS: LOOPBACK_TLS.cert, AWS_SDK_UA_APP_ID: 'pulls' }),
      );

      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(tlsServer.requests.map((r) => r.operation)).toEqual(['ecr:GetAuthorizationToken']);
      expect(tlsServer.requests[0]?.headers['user-agent']).toMatch(/aws-sdk-js/);
    });

    describe('through a proxy from the environment', () => {
      const proxy = suiteProxy();
      const tunnel = () => `CONNECT ${new URL(tlsServer.url).host}`;

      it('tunnels ECR through HTTPS_PROXY and asks IMDS directly, as on a node behind a proxy', async () => {
        const { code, stderr } = await run([], request(IMAGE), {
          ...overTls({ NODE_EXTRA_CA_CERTS: LOOPBACK_TLS.cert, HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url }),
          ...instanceRole(),
        });

        expect(stderr).toBe('');
        expect(code).toBe(0);
        expect(proxy.seen).toEqual([tunnel()]);
        expect(server.imdsRequests).toHaveLength(3);
        expect(tlsServer.requests.map((r) => r.operation)).toEqual(['ecr:GetAuthorizationToken']);
      });

      it('tunnels the SDK clients too', async () => {
        const { code, stderr } = await run(
          [],
          request(IMAGE),
          overTls({ NODE_EXTRA_CA_CERTS: LOOPBACK_TLS.cert, https_proxy: proxy.url, AWS_SDK_UA_APP_ID: 'pulls' }),
        );

        expect(stderr).toBe('');
        expect(code).toBe(0);
        expect(proxy.seen).toEqual([tunnel()]);
        expect(tlsServer.requests[0]?.headers['user-agent']).toMatch(/aws-sdk-js/);
      });

      it('goes direct to a host NO_PROXY names', async () => {
        const { code } = await run(
          [],
          request(IMAGE),
          overTls({ NODE_EXTRA_CA_CERTS: LOOPBACK_TLS.cert, HTTPS_PROXY: proxy.url, NO_PROXY: '127.0.0.1' }),
        );

        expect(code).toBe(0);
        expect(proxy.seen).toEqual([]);
        expect(tlsServer.requests).toHaveLength(1);
      });
    });

    it('refuses a certificate that no trusted root signed, on both paths, and sends nothing', async () => {
      for (const extra of [{}, { AWS_SDK_UA_APP_ID: 'pulls' }]) {
        const { code, stdout, stderr } = await run([], request(IMAGE), overTls(extra));

        expect(code).toBe(1);
        expect(stdout).toBe('');
        expect(stderr).toMatch(
          /^ecr-credential-provider: getting an ECR authorization token in eu-west-1 for 111122223333\.dkr\.ecr\.eu-west-1\.amazonaws\.com: .*self-signed certificate/,
        );
      }
      expect(tlsServer.requests).toEqual([]);
    });
  });

  it("answers with the node's instance role from IMDS, the usual case on a node", async () => {
    const { code, stderr } = await run([], request(IMAGE), instanceRole());

    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(server.imdsRequests.map((r) => r.method)).toEqual(['PUT', 'GET', 'GET']);
    expect(server.requests[0]?.headers.authorization).toMatch(new RegExp(`Credential=${IMDS_ROLE.accessKeyId}/`));
    expect(server.requests[0]?.headers['x-amz-security-token']).toBe(IMDS_ROLE.sessionToken);
    expect(viaSdk(0)).toBe(false);
  });

  it('answers a v1alpha1 request for ECR Public', async () => {
    const { code, stdout } = await run(
      [],
      request('public.ecr.aws/nginx/nginx:1.27', 'credentialprovider.kubelet.k8s.io/v1alpha1'),
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1alpha1',
      auth: { 'public.ecr.aws': { username: 'AWS', password: 'binary-password' } },
    });
  });

  it('assumes the service account role, then pulls with it', async () => {
    const { code } = await run(
      [],
      request(IMAGE, undefined, {
        serviceAccountToken: 'sa-token',
        serviceAccountAnnotations: { 'eks.amazonaws.com/ecr-role-arn': 'arn:aws:iam::111122223333:role/pull' },
      }),
    );
    expect(code).toBe(0);
    expect(server.requests.map((r) => r.operation)).toEqual([
      'sts:AssumeRoleWithWebIdentity',
      'ecr:GetAuthorizationToken',
    ]);
    expect(server.requests[1]?.headers.authorization).toMatch(/Credential=ASIAFAKEROLEKEY\//);
    // Both through the direct calls: STS unsigned, the token signed with the role's keys.
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
    expect([viaSdk(0), viaSdk(1)]).toEqual([false, false]);
  });

  it('fails with exit 1 and one stderr line on an AWS error', async () => {
    // Throttling is retried (the SDK's standard strategy): fail every attempt.
    for (let i = 0; i < 3; i++) server.failNext({ status: 400, code: 'ThrottlingException', message: 'Rate exceeded' });
    const { code, stdout, stderr } = await run([], request(IMAGE));

    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'ecr-credential-provider: getting an ECR authorization token in eu-west-1 for ' +
        '111122223333.dkr.ecr.eu-west-1.amazonaws.com: ThrottlingException: Rate exceeded\n',
    );
  });

  it('prints its version', async () => {
    const { code, stdout } = await run(['--version'], '');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^ecr-credential-provider \d+\.\d+\.\d+\n$/);
  });

  it('answers with static keys from a profile in a shared credentials file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'credential-provider-profile-'));
    try {
      const credentials = join(dir, 'credentials');
      writeFileSync(
        credentials,
        '[pulls]\naws_access_key_id = AKIDFROMPROFILE\naws_secret_access_key = profile-secret\n',
      );
      const image = '111122223333.dkr.ecr.us-east-1.amazonaws.com/team/api:1.4.2';
      const { code, stderr } = await run([], request(image), {
        AWS_ACCESS_KEY_ID: undefined,
        AWS_SECRET_ACCESS_KEY: undefined,
        AWS_PROFILE: 'pulls',
        AWS_SHARED_CREDENTIALS_FILE: credentials,
        AWS_CONFIG_FILE: join(dir, 'config'),
      });

      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(server.requests.map((r) => r.operation)).toEqual(['ecr:GetAuthorizationToken']);
      expect(server.requests[0]?.headers.authorization).toMatch(
        /Credential=AKIDFROMPROFILE\/\d{8}\/us-east-1\/ecr\/aws4_request/,
      );
      expect(viaSdk(0)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // A setting only the SDK knows: the request goes through the SDK asset, compiled from its code cache.
  it('answers through the SDK clients when the environment has a setting only they know', async () => {
    const { code, stderr } = await run([], request(IMAGE), { AWS_SDK_UA_APP_ID: 'pulls' });

    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(server.requests.map((r) => r.operation)).toEqual(['ecr:GetAuthorizationToken']);
    expect(viaSdk(0)).toBe(true);
    expect(server.requests[0]?.headers['user-agent']).toContain('app/pulls');
  });

  it('sends a fresh invocation id on every run', async () => {
    await run([], request(IMAGE));
    await run([], request(IMAGE));

    const ids = server.requests.map((r) => r.headers['amz-sdk-invocation-id']);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids[1]).not.toBe(ids[0]);
  });

  it("ignores the host's NODE_OPTIONS", async () => {
    const { code } = await run([], request(IMAGE), { NODE_OPTIONS: '--require /nonexistent/preload.js' });
    expect(code).toBe(0);
  });
});
