/**
 * What the executable's plugin script loads to answer: run as the executable runs it (wrapped as a CommonJS module,
 * `require` serving Node.js built-ins only) against the stand-in AWS, with the Node.js modules it loaded read at
 * exit. Loading a module Node.js does not need is time at every start (docs/credential-provider.md, "Size and
 * start time"), and nothing else would notice it coming back.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { wrapCommonJs } from '../../functions/credential-provider/sea-assets.ts';
import {
  type FakeAwsServer,
  LOOPBACK_TLS,
  startFakeAwsServer,
} from '../../functions/credential-provider/testing/fake-aws-server.ts';
import { bundleScripts } from '../../scripts/build-credential-provider.ts';

const REQUEST = JSON.stringify({
  apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
  kind: 'CredentialProviderRequest',
  image: '111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/api:1.4.2',
});

/** Runs the wrapped script as sea-assets.ts's `evaluateCommonJs` does, and writes the loaded modules to fd 3. */
const RUNNER = `
const { readFileSync, writeSync } = require('node:fs');
process.on('exit', () => writeSync(3, JSON.stringify(process.moduleLoadList)));
// The plugin reads its own arguments from argv[2] on, as in the executable.
const [path] = process.argv.splice(2, 1);
const plugin = { exports: {} };
require('node:vm').runInThisContext(readFileSync(path, 'utf8'))(plugin.exports, process.getBuiltinModule, plugin);
`;

let dir: string;
let wrapped: string;
let runner: string;
let server: FakeAwsServer;
let tlsServer: FakeAwsServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'credential-provider-start-'));
  const scripts = await bundleScripts('0.0.0-test', dir);
  wrapped = join(dir, 'main.wrapped.cjs');
  writeFileSync(wrapped, wrapCommonJs(readFileSync(scripts.main, 'utf8')));
  runner = join(dir, 'runner.cjs');
  writeFileSync(runner, RUNNER);
  server = await startFakeAwsServer();
  tlsServer = await startFakeAwsServer({ tls: true });
}, 60_000);
afterAll(async () => {
  await server?.close();
  await tlsServer?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.requests.length = 0;
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Node.js's built-in modules the run loaded (`NativeModule` entries of `process.moduleLoadList`). */
  modules: string[];
}

function answer(env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [runner, wrapped], {
      env: { HOME: '/nonexistent', ...env },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const text: Record<number, string> = { 1: '', 2: '', 3: '' };
    for (const fd of [1, 2, 3]) child.stdio[fd]!.on('data', (chunk: Buffer) => (text[fd] += String(chunk)));
    child.on('error', reject);
    child.on('close', (code) => {
      const loaded = text[3] ? (JSON.parse(text[3]) as string[]) : [];
      const modules = loaded.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length));
      resolve({ code, stdout: text[1]!, stderr: text[2]!, modules });
    });
    child.stdin.end(REQUEST);
  });
}

function expectAnswered(run: Run, by = server): void {
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expect(JSON.parse(run.stdout).auth['111122223333.dkr.ecr.eu-west-1.amazonaws.com'].password).toBe(by.password);
}

const KEYS = {
  AWS_ACCESS_KEY_ID: 'AKIDSTART',
  AWS_SECRET_ACCESS_KEY: 'start-secret',
  AWS_EC2_METADATA_DISABLED: 'true',
};

describe("the plugin script's start", () => {
  it('answers over TLS without node:https, trusting the roots Node.js trusts and checking the host name', async () => {
    const trusted = { ...KEYS, NODE_EXTRA_CA_CERTS: LOOPBACK_TLS.cert };
    // By IP address (no SNI), then by name (SNI, and the name checked against the certificate).
    for (const url of [tlsServer.url, tlsServer.url.replace('127.0.0.1', 'localhost')]) {
      tlsServer.requests.length = 0;
      const run = await answer({ ...trusted, AWS_ENDPOINT_URL_ECR: url });
      expectAnswered(run, tlsServer);
      expect(tlsServer.requests.map((r) => r.operation)).toEqual(['ecr:GetAuthorizationToken']);
      for (const unneeded of ['http', 'https']) expect(run.modules).not.toContain(unneeded);
    }
    // Without that root, the stand-in's certificate is refused, and the line kubelet shows says so.
    const untrusted = await answer({ ...KEYS, AWS_ENDPOINT_URL_ECR: tlsServer.url });
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(/: DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate\n$/);
    expect(untrusted.stdout).toBe('');
  });

  it('answers with keys in the environment without loading node:crypto or node:http', async () => {
    const run = await answer({ ...KEYS, AWS_ENDPOINT_URL_ECR: server.url });
    expectAnswered(run);
    expect(run.modules).toContain('net');
    for (const unneeded of ['crypto', 'http', 'os']) expect(run.modules).not.toContain(unneeded);
    // The SDK's invocation id, from lazy-crypto.ts's random bytes: a version 4 UUID.
    expect(server.requests[0]?.headers['amz-sdk-invocation-id']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  it("answers with the instance role, the SDK's IMDS provider on http1.ts, without node:crypto or node:http", async () => {
    server.imdsRequests.length = 0;
    const run = await answer({ AWS_EC2_METADATA_SERVICE_ENDPOINT: server.url, AWS_ENDPOINT_URL_ECR: server.url });
    expectAnswered(run);
    // IMDSv2 as the provider asks it: a token, then the role's name and its keys with that token.
    expect(server.imdsRequests).toEqual([
      { method: 'PUT', path: '/latest/api/token' },
      { method: 'GET', path: '/latest/meta-data/iam/security-credentials/', token: 'fake-imds-token' },
      { method: 'GET', path: '/latest/meta-data/iam/security-credentials/node-role', token: 'fake-imds-token' },
    ]);
    expect(server.requests[0]?.headers.authorization).toMatch(/Credential=ASIAFAKEIMDSKEY\//);
    for (const unneeded of ['crypto', 'http']) expect(run.modules).not.toContain(unneeded);
  });

  it("answers with a profile's keys without loading node:crypto (the SDK's ini parser imports it)", async () => {
    const credentials = join(dir, 'credentials');
    writeFileSync(credentials, '[pulls]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n');
    const run = await answer({
      AWS_PROFILE: 'pulls',
      AWS_SHARED_CREDENTIALS_FILE: credentials,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_ENDPOINT_URL_ECR: server.url,
    });
    expectAnswered(run);
    expect(server.requests[0]?.headers.authorization).toMatch(/Credential=AKIDPROFILE\//);
    expect(run.modules).not.toContain('crypto');
  });
});
