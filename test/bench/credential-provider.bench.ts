/**
 * Start-to-answer time of the built credential provider executable, as kubelet experiences it: spawn, write
 * one request on stdin, wait for the response on stdout. The AWS call goes to a local fake ECR endpoint
 * (`AWS_ENDPOINT_URL_ECR`) with dummy credentials in the environment, so the binary runs its production code
 * path, SDK signing and HTTP included, and the figure excludes only AWS's own latency.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeAwsServer } from '../../functions/credential-provider/fake-aws-server.ts';
import {
  buildCredentialProvider,
  executablePath,
  TARGET_ARCHES,
  type TargetArch,
} from '../../scripts/build-credential-provider.ts';

type BenchResult = { name: string; value: number; unit: string; target?: string; rerun: string; note?: string };

const RUNS = 20;
const WARMUP = 2;
const RERUN = 'npm run bench -- credential-provider';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SOURCES = join(ROOT, 'functions', 'credential-provider');
const REQUEST = JSON.stringify({
  apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
  kind: 'CredentialProviderRequest',
  image: '111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/api:1.4.2',
});

/** Rebuild only when a source file is newer than the executable; a build takes tens of seconds. */
async function executable(arch: TargetArch): Promise<string> {
  const path = executablePath(arch);
  const newestSource = Math.max(
    ...readdirSync(SOURCES)
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
      .map((name) => statSync(join(SOURCES, name)).mtimeMs),
  );
  if (!existsSync(path) || statSync(path).mtimeMs < newestSource) await buildCredentialProvider([arch]);
  return path;
}

/** Wall time from spawn to exit: kubelet waits for the process to exit, not only for the JSON. */
function timeOnce(
  path: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input: string,
): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(path, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      if (code !== 0) reject(new Error(`${path} ${args.join(' ')} exited ${code}: ${stderr.trim()}`));
      else resolve({ ms, stdout });
    });
    child.stdin.end(input);
  });
}

/** Sorted timings of RUNS runs after WARMUP discarded ones; `check` vets every answer. */
async function timings(
  path: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  input: string,
  check: (stdout: string) => void = () => {},
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const { ms, stdout } = await timeOnce(path, args, env, input);
    check(stdout);
    if (i >= WARMUP) times.push(ms);
  }
  return times.sort((a, b) => a - b);
}

function checkAnswer(stdout: string): void {
  const response = JSON.parse(stdout) as { kind?: string; auth?: Record<string, unknown> };
  if (response.kind !== 'CredentialProviderResponse' || !response.auth) throw new Error(`unexpected answer: ${stdout}`);
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)]!;
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));

export async function run(): Promise<BenchResult[]> {
  const arch = TARGET_ARCHES.find((candidate) => candidate === process.arch);
  if (process.platform !== 'linux' || arch === undefined) {
    throw new Error(
      `the credential provider is built for linux x64 and arm64; this is ${process.platform}-${process.arch}`,
    );
  }
  const path = await executable(arch);
  const server = await startFakeAwsServer();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: '/nonexistent',
    AWS_ACCESS_KEY_ID: 'AKIDBENCHFAKE',
    AWS_SECRET_ACCESS_KEY: 'bench-fake-secret',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_ENDPOINT_URL_ECR: server.url,
  };
  try {
    const answer = await timings(path, [], env, REQUEST, checkAnswer);
    const version = await timings(path, ['--version'], env, '');
    // The same pinned Node.js doing nothing: the part of the figure no code change can remove.
    const floor = await timings(process.execPath, ['-e', '0'], env, '');
    const sizeMiB = statSync(path).size / 1024 / 1024;
    return [
      {
        name: `credential-provider: start-to-answer, median of ${RUNS} (ECR faked on 127.0.0.1)`,
        value: round(percentile(answer, 50)),
        unit: 'ms',
        target: '<= 60',
        rerun: RERUN,
        note: 'spawn to exit, SigV4 and HTTP included',
      },
      {
        name: `credential-provider: start-to-answer, p95 of ${RUNS}`,
        value: round(percentile(answer, 95)),
        unit: 'ms',
        rerun: RERUN,
      },
      {
        name: `credential-provider: --version start-to-exit, median of ${RUNS}`,
        value: round(percentile(version, 50)),
        unit: 'ms',
        rerun: RERUN,
        note: 'Node.js start plus compiling and running the bundle, no AWS call',
      },
      {
        name: `credential-provider: bare Node.js start (node -e 0), median of ${RUNS}`,
        value: round(percentile(floor, 50)),
        unit: 'ms',
        rerun: RERUN,
        note: 'the floor on this machine, for reading the figures above',
      },
      {
        name: `credential-provider: executable size (linux-${arch})`,
        value: round(sizeMiB),
        unit: 'MiB',
        rerun: RERUN,
      },
    ];
  } finally {
    await server.close();
  }
}
