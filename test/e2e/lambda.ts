import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';

/**
 * A built Lambda bundle in an execution environment of its own (lambda-runtime.mjs): one process per function,
 * kept warm across invocations as Lambda keeps a container, with exactly the environment given (the stack's, the
 * runtime's region and credentials), so two functions never see each other's settings. What it writes to
 * stdout and stderr (its log lines, its EMF metrics) is kept for a failing test's message.
 */
export interface LocalLambda {
  readonly name: string;
  invoke(event: SQSEvent): Promise<SQSBatchResponse | null>;
  /** The function's output so far (log lines and EMF metrics), newest last. */
  output(): string;
  stop(): Promise<void>;
}

const RUNTIME = fileURLToPath(new URL('./lambda-runtime.mjs', import.meta.url));
/** Kept of each function's output: enough for the lines around a failure. */
const OUTPUT_LIMIT = 200_000;

export async function startLambda(
  name: string,
  bundle: string,
  environment: Record<string, string>,
  timeoutSeconds = 60,
): Promise<LocalLambda> {
  // Nothing of the test process's environment: Lambda gives a function its own variables and the runtime's.
  const child: ChildProcess = fork(RUNTIME, [bundle, name, String(timeoutSeconds)], {
    env: {
      PATH: process.env.PATH ?? '',
      // What the Node.js runtime sets that the bundles read (Powertools: the function's name, and cold starts).
      AWS_LAMBDA_FUNCTION_NAME: name,
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      ...environment,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const pending = new Map<number, { resolve: (r: SQSBatchResponse | null) => void; reject: (e: Error) => void }>();
  let exited: Error | undefined;
  child.on('exit', (code, signal) => {
    exited = new Error(`lambda ${name} exited (${code ?? signal}): ${output.slice(-4_000)}`);
    for (const { reject } of pending.values()) reject(exited);
    pending.clear();
  });
  await new Promise<void>((ready, failed) => {
    child.once('message', () => ready());
    child.once('exit', () => failed(exited));
  });
  child.on('message', (message: { id: number; result?: SQSBatchResponse | null; error?: string }) => {
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    if (message.error !== undefined) waiting.reject(new Error(`lambda ${name}: ${message.error}`));
    else waiting.resolve(message.result ?? null);
  });
  let next = 0;
  return {
    name,
    invoke(event) {
      if (exited) return Promise.reject(exited);
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ id, event });
      });
    },
    output: () => output,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}
