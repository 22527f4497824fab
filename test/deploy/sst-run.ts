import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, openSync, readFileSync, symlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Answer, EmulatorAws } from './emulator-aws.ts';

/**
 * Running the SST CLI as a user would, against the AWS API emulator, from a copy of the working tree: SST
 * writes `.sst/` (its build, the cloud assembly, outputs) and the build writes `dist/` in the project it runs
 * in, and other work in the same tree must neither see nor disturb them.
 */

/** Top-level entries a copy of the project leaves out: build output, VCS, and local settings (`.env*`). */
const NOT_COPIED = new Set(['node_modules', '.git', 'dist', '.sst', '.build', 'cdk.out', 'bench-report.json']);

/** Copies the project at `root` into `into`, with its node_modules linked rather than copied. */
export function copyProject(root: string, into: string): void {
  mkdirSync(into, { recursive: true });
  cpSync(root, into, {
    recursive: true,
    filter: (source) => {
      if (dirname(source) !== root) return true;
      const name = basename(source);
      // A developer's .env files would change the stages under test.
      return !NOT_COPIED.has(name) && !name.startsWith('.env');
    },
  });
  symlinkSync(join(root, 'node_modules'), join(into, 'node_modules'), 'dir');
}

export interface SstRun {
  code: number | null;
  /** What SST printed (stdout and stderr, with --verbose its debug log). */
  output: string;
  seconds: number;
}

/**
 * `sst <args>` in `project` with exactly `env` (nothing of the test's own environment leaks in: no AWS profile,
 * no ~/.aws), its output written to `logFile` (a new file per run). Killed, with everything it started, after `timeoutMs`.
 */
export function runSst(
  project: string,
  args: string[],
  env: Record<string, string>,
  logFile: string,
  timeoutMs: number,
): Promise<SstRun> {
  const started = Date.now();
  const log = openSync(logFile, 'w');
  writeSync(log, `$ sst ${args.join(' ')}\n`);
  // The CLI's own entry run by this Node.js (22), in a process group of its own so a timeout stops `npx cdk` too.
  const child = spawn(process.execPath, [join(project, 'node_modules', 'sst', 'cli', 'sst.js'), ...args], {
    cwd: project,
    env,
    stdio: ['ignore', log, log],
    detached: true,
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({
        code,
        output: readFileSync(logFile, 'utf8'),
        seconds: (Date.now() - started) / 1000,
      });
    });
  });
}

/**
 * Stands in for the Lambda functions behind custom resources, which the emulator cannot run (it has no
 * Docker): while running, it answers every `Custom::` resource of a stack still being created with SUCCESS on
 * the emulator's response URL, as the function would have. Returns what it answered.
 */
export function customResourceResponder(aws: EmulatorAws, endpoint: string) {
  const answered: { stack: string; logicalId: string; type: string }[] = [];
  const done = new Set<string>();
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const stacks: Answer[] = (await aws.cloudFormation.call('DescribeStacks', {})).Stacks ?? [];
        for (const stack of stacks.filter((s) => s.StackStatus === 'CREATE_IN_PROGRESS')) {
          const resources: Answer[] =
            (await aws.cloudFormation.call('ListStackResources', { StackName: stack.StackId }))
              .StackResourceSummaries ?? [];
          for (const r of resources.filter((r) => String(r.ResourceType).startsWith('Custom::'))) {
            const key = `${stack.StackId} ${r.LogicalResourceId}`;
            if (done.has(key)) continue;
            // The answer a custom resource's function PUTs to its ResponseURL. The emulator's URL is its own
            // endpoint; the request is unsigned, so the region is in the user agent, where the emulator looks.
            const response = await fetch(
              `${endpoint}/cloudformation_${aws.region}/cfnresponse?stack=${encodeURIComponent(stack.StackId)}`,
              {
                method: 'PUT',
                headers: { 'content-type': '', 'user-agent': `deploy-test region/${aws.region}` },
                body: JSON.stringify({
                  Status: 'SUCCESS',
                  StackId: stack.StackId,
                  LogicalResourceId: r.LogicalResourceId,
                  RequestId: key,
                  PhysicalResourceId: r.PhysicalResourceId,
                  Data: {},
                }),
              },
            );
            if (!response.ok) throw new Error(`custom resource answer: ${response.status} ${await response.text()}`);
            done.add(key);
            answered.push({ stack: stack.StackName, logicalId: r.LogicalResourceId, type: r.ResourceType });
          }
        }
      } catch (err) {
        // The emulator answers one request at a time; try again on the next round.
        if (running) console.warn(`custom resource responder: ${(err as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    answered,
    async stop() {
      running = false;
      await loop;
    },
  };
}
