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
import { buildCredentialProvider, executablePath } from '../../scripts/build-credential-provider.ts';

type BenchResult = { name: string; value: number; unit: string; target?: string; rerun: string };

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
async function executable(): Promise<string> {
  const path = executablePath('x64');
  const newestSource = Math.max(
    ...readdirSync(SOURCES)
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
      .map((name) => statSync(join(SOURCES, name)).mtimeMs),
  );
  if (!existsSync(path) || statSync(path).mtimeMs < newestSource) await buildCredentialProvider(['x64']);
  return path;
}

function answerOnce(path: string, args: string[], env: NodeJS.ProcessEnv, input: string): Promise<number> {
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
    // kubelet waits for the process to exit, not just for the JSON, so the clock stops at exit.
    child.on('close', (code) => {
      if (code !== 0 || stdout === '') {
        reject(new Error(`${path} exited ${code}: ${stderr.trim()}`));
        return;
      }
      resolve(performance.now() - started);
    });
    child.stdin.end(input);
  });
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)]!;
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));

export async function run(): Promise<BenchResult[]> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error('the credential provider bench runs the linux-x64 executable; run it on linux x64');
  }
  const path = await executable();
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
    const answer: number[] = [];
    const version: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const elapsed = await answerOnce(path, [], env, REQUEST);
      if (i >= WARMUP) answer.push(elapsed);
    }
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const elapsed = await answerOnce(path, ['--version'], env, '');
      if (i >= WARMUP) version.push(elapsed);
    }
    answer.sort((a, b) => a - b);
    version.sort((a, b) => a - b);
    const sizeMiB = statSync(path).size / 1024 / 1024;
    return [
      {
        name: `credential-provider: start-to-answer, median of ${RUNS} (ECR faked on 127.0.0.1)`,
        value: round(percentile(answer, 50)),
        unit: 'ms',
        target: '<= 60',
        rerun: RERUN,
      },
      {
        name: `credential-provider: start-to-answer, p95 of ${RUNS}`,
        value: round(percentile(answer, 95)),
        unit: 'ms',
        rerun: RERUN,
      },
      {
        name: `credential-provider: --version start-to-exit, median of ${RUNS} (Node.js startup floor)`,
        value: round(percentile(version, 50)),
        unit: 'ms',
        rerun: RERUN,
      },
      {
        name: 'credential-provider: executable size (linux-x64)',
        value: round(sizeMiB),
        unit: 'MiB',
        rerun: RERUN,
      },
    ];
  } finally {
    await server.close();
  }
}
