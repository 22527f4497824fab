/**
 * The credential provider's plugin script gets its V8 code cache after a warm-up against the stand-in AWS
 * (scripts/credential-provider-code-cache.ts): here with this machine's Node.js, as the build does for its own
 * architecture. A cache V8 rejects costs nothing visible but the start time, so its acceptance is checked here.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAIN_ASSET, SDK_ASSET, wrapCommonJs } from '../../functions/credential-provider/sea-assets.ts';
import { type FakeAwsServer, startFakeAwsServer } from '../../functions/credential-provider/testing/fake-aws-server.ts';
import { bundleScripts, type Scripts } from '../../scripts/build-credential-provider.ts';

let dir: string;
let scripts: Scripts;
let server: FakeAwsServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'credential-provider-code-cache-'));
  scripts = await bundleScripts('0.0.0-test', dir);
  server = await startFakeAwsServer();
}, 60_000);
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.requests.length = 0;
  server.imdsRequests.length = 0;
});

/** The build's code cache step, with an empty environment as the build runs it. */
function makeCache(kind: 'main' | 'sdk', output: string): Promise<{ code: number | null; output: string }> {
  const script = kind === 'main' ? scripts.main : scripts.sdk;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [scripts.codeCache, kind, script, output, server.url], {
      cwd: dir,
      env: {},
    });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk));
    child.stderr.on('data', (chunk: Buffer) => (text += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output: text }));
  });
}

describe("the plugin script's code cache", () => {
  it('is taken after answering a pull on each usual path, and V8 accepts it for the same script', async () => {
    const cache = join(dir, 'main.cache');
    const { code, output } = await makeCache('main', cache);
    expect(output).toBe('');
    expect(code).toBe(0);

    expect(server.requests.map((r) => r.operation)).toEqual([
      'ecr:GetAuthorizationToken',
      'ecr:GetAuthorizationToken',
      'sts:AssumeRoleWithWebIdentity',
      'ecr:GetAuthorizationToken',
      'ecr-public:GetAuthorizationToken',
    ]);
    expect(server.imdsRequests.map((r) => r.method)).toEqual(['PUT', 'GET', 'GET']);

    const source = wrapCommonJs(readFileSync(scripts.main, 'utf8'));
    const warm = readFileSync(cache);
    const script = new Script(source, { filename: MAIN_ASSET, cachedData: warm });
    expect(script.cachedDataRejected).toBe(false);
    // Without running, V8 caches the top level and little else; after the warm-up, every function that ran. (The
    // comment keeps V8 from answering this compile from the script above.)
    const cold = new Script(`${source}\n// cold`, { filename: MAIN_ASSET }).createCachedData();
    expect(warm.length).toBeGreaterThan(cold.length * 2);
  });

  it('fails the build, naming the run, when a warm-up pull fails', async () => {
    server.failNext({ status: 400, code: 'AccessDeniedException', message: 'not for the warm-up' });
    const { code, output } = await makeCache('main', join(dir, 'failed.cache'));
    expect(code).toBe(1);
    expect(output).toMatch(/warm-up run "keys in the environment" exited 1/);
  });
});

describe("the SDK adapter's code cache", () => {
  it('is taken after its three calls through the SDK clients, and V8 accepts it', async () => {
    const cache = join(dir, 'aws-ports.cache');
    const { code, output } = await makeCache('sdk', cache);
    expect(output).toBe('');
    expect(code).toBe(0);
    expect(server.requests.map((r) => r.operation)).toEqual([
      'ecr:GetAuthorizationToken',
      'sts:AssumeRoleWithWebIdentity',
      'ecr-public:GetAuthorizationToken',
    ]);
    // The SDK clients' user agent, with ours appended: these went through the clients, not the direct calls.
    expect(String(server.requests[0]?.headers['user-agent'])).toMatch(/aws-sdk-js.*ecr-credential-provider\/warm-up/);

    const source = wrapCommonJs(readFileSync(scripts.sdk, 'utf8'));
    const script = new Script(source, { filename: SDK_ASSET, cachedData: readFileSync(cache) });
    expect(script.cachedDataRejected).toBe(false);
  });
});
