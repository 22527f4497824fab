import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { freePort } from './free-port.ts';

/**
 * The AWS API emulator (moto server) for the contract suite: started on a free loopback port by the test
 * setup and stopped after it, never left running. It is part of the machine image the project is developed
 * and checked on, not of a user's fresh machine: where `moto_server` is not on PATH the emulator half of the
 * suite is skipped, and says so.
 */

/** Whether `moto_server` can be started here. */
export const EMULATOR_AVAILABLE: boolean = (() => {
  try {
    execFileSync('sh', ['-c', 'command -v moto_server'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

export const EMULATOR_SKIPPED_MESSAGE =
  "AWS API emulator suite skipped: moto_server is not on PATH (pip install 'moto[server]' to run it)";

/** Credentials and region the emulator accepts; nothing here reaches AWS. */
export const EMULATOR_REGION = 'eu-west-1';
export const EMULATOR_CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };

export interface Emulator {
  endpoint: string;
  /** SDK client configuration pointed at the emulator. */
  clientConfig: {
    endpoint: string;
    region: string;
    credentials: typeof EMULATOR_CREDENTIALS;
    maxAttempts: number;
  };
  /** Forget every resource (moto's reset API): each test starts from an empty account. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

async function waitUntilUp(endpoint: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited) throw new Error('moto_server exited before it answered');
    try {
      const response = await fetch(`${endpoint}/moto-api/`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`moto_server did not answer on ${endpoint} within ${timeoutMs} ms`);
}

export async function startEmulator(timeoutMs = 20_000): Promise<Emulator> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  try {
    await waitUntilUp(endpoint, child, timeoutMs);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    endpoint,
    clientConfig: { endpoint, region: EMULATOR_REGION, credentials: EMULATOR_CREDENTIALS, maxAttempts: 1 },
    async reset() {
      await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
      }),
  };
}
