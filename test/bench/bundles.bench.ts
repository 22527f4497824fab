import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { bundleFunction, LAMBDA_FUNCTIONS } from '../../scripts/build.ts';
import type { BenchResult } from './types.ts';

const RUNS = 7;
const RERUN = 'npm run bench -- bundles';

/**
 * Minified bundle size of each Lambda and its cold import time: a fresh Node 22 process imports the
 * bundle (module evaluation, handler construction, config validation; no client calls), median of
 * several runs. This is the part of a Lambda cold start the code controls.
 */
export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const name of LAMBDA_FUNCTIONS) {
    const info = await bundleFunction(name);
    const url = `file://${resolve(info.file)}`;
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const out = execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const t = performance.now(); const m = await import(${JSON.stringify(url)}); if (typeof m.handler !== 'function') throw new Error('no handler'); console.log(performance.now() - t);`,
        ],
        {
          env: {
            PATH: process.env.PATH,
            CLUSTER_NAME: 'bench',
            AWS_REGION: 'eu-west-1',
            NODE_LIFECYCLE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/000000000000/node-lifecycle.fifo',
            CLUSTER_CIDRS: '100.64.0.0/16',
            VPC_ID: 'vpc-0a1b2c3d',
            NODE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/000000000000/node.fifo',
            AWS_LAMBDA_FUNCTION_NAME: name,
          },
        },
      );
      times.push(Number(out.toString().trim()));
    }
    times.sort((a, b) => a - b);
    const bundlesK8s = info.inputs.some((f) => f.includes('@kubernetes/client-node'));
    results.push(
      {
        name: `${name}: bundle loaded at cold start (minified)`,
        value: Math.round(info.entryBytes / 1024),
        unit: 'KiB',
        rerun: RERUN,
        note: `${Math.round(info.bytes / 1024)} KiB with on-demand chunks; ${bundlesK8s ? 'includes' : 'no'} @kubernetes/client-node`,
      },
      {
        name: `${name}: cold import time (median of ${RUNS})`,
        value: Math.round(times[Math.floor(times.length / 2)]! * 10) / 10,
        unit: 'ms',
        rerun: RERUN,
      },
    );
  }
  return results;
}
