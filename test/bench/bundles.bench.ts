import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { type BundleInfo, bundleFunction, LAMBDA_FUNCTIONS } from '../../scripts/build.ts';
import type { BenchResult } from './types.ts';

const RUNS = 7;
const RERUN = 'npm run bench -- bundles';
const KiB = 1024;
/** Targets of the "cost at scale" issue (docs/adr/0010-lambda-cold-start.md). */
const MAX_IMPORT_RATIO = 3;
const MAX_KIB = { kubernetes: 1536, other: 1024 };

const ENV = {
  PATH: process.env.PATH,
  CLUSTER_NAME: 'bench',
  AWS_REGION: 'eu-west-1',
  NODE_LIFECYCLE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/000000000000/node-lifecycle.fifo',
  CLUSTER_CIDRS: '100.64.0.0/16',
  VPC_ID: 'vpc-0a1b2c3d',
  NODE_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/000000000000/node.fifo',
};

interface Run {
  ms: number;
  rssMiB: number;
}

/** One fresh Node 22 process, timed from spawn to exit; it reports its own peak RSS. */
function processRun(args: string[], env: Record<string, string | undefined>): Run {
  const start = process.hrtime.bigint();
  const out = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (out.status !== 0) throw new Error(`node ${args.join(' ')}: ${out.stderr}`);
  return { ms, rssMiB: Number(out.stdout.trim()) / KiB };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * What a Lambda cold start costs in the code's part: the package a cold start loads (the entry; what it
 * imports on demand is in packages of its own, scripts/on-demand.ts), and a whole Node 22 process that imports it
 * (module evaluation, handler construction, config validation; no client calls) against a bare
 * `node -e 0` measured in the same run, interleaved so a busy machine slows both alike. Ratios, not
 * milliseconds, carry the targets: they travel between machines. Peak RSS is the process's maxRSS.
 */
export async function run(): Promise<BenchResult[]> {
  const bundles: (BundleInfo & { kubernetes: boolean })[] = [];
  for (const name of LAMBDA_FUNCTIONS) {
    const info = await bundleFunction(name);
    bundles.push({ ...info, kubernetes: info.coldInputs.some((f) => f.startsWith('shared/k8s/')) });
  }
  const bare: Run[] = [];
  const imports = new Map<string, Run[]>(bundles.map((b) => [b.name, []]));
  for (let i = 0; i < RUNS; i++) {
    for (const b of bundles) {
      bare.push(processRun(['-e', 'console.log(process.resourceUsage().maxRSS)'], ENV));
      const url = `file://${resolve(b.file)}`;
      const script = `const m = await import(${JSON.stringify(url)}); if (typeof m.handler !== 'function') throw new Error('no handler'); console.log(process.resourceUsage().maxRSS);`;
      imports
        .get(b.name)!
        .push(processRun(['--input-type=module', '-e', script], { ...ENV, AWS_LAMBDA_FUNCTION_NAME: b.name }));
    }
  }
  const bareMs = median(bare.map((r) => r.ms));
  const bareRss = median(bare.map((r) => r.rssMiB));
  const results: BenchResult[] = [
    {
      name: 'bare node -e 0 (whole process)',
      value: round(bareMs),
      unit: 'ms',
      rerun: RERUN,
      note: `median of ${bare.length}, interleaved with the imports below; peak RSS ${round(bareRss)} MiB`,
    },
  ];
  for (const b of bundles) {
    const runs = imports.get(b.name)!;
    const ms = median(runs.map((r) => r.ms));
    const ratio = ms / bareMs;
    const kib = b.entryBytes / KiB;
    const maxKib = b.kubernetes ? MAX_KIB.kubernetes : MAX_KIB.other;
    const verdict = (ok: boolean) => (ok ? 'ok' : 'OVER');
    results.push(
      {
        name: `${b.name}: package loaded at cold start (minified)`,
        value: Math.round(kib),
        unit: 'KiB',
        target: `<= ${maxKib} KiB`,
        rerun: RERUN,
        note: `${verdict(kib <= maxKib)}; ${b.kubernetes ? 'talks to' : 'no'} Kubernetes; ${Math.round(b.bytes / KiB)} KiB with what loads on demand`,
      },
      {
        name: `${b.name}: cold import, whole process / bare node`,
        value: round(ratio),
        unit: 'x',
        target: `<= ${MAX_IMPORT_RATIO}x`,
        rerun: RERUN,
        note: `${verdict(ratio <= MAX_IMPORT_RATIO)}; ${round(ms)} vs ${round(bareMs)} ms (median of ${RUNS})`,
      },
      {
        name: `${b.name}: peak RSS of the import`,
        value: round(median(runs.map((r) => r.rssMiB))),
        unit: 'MiB',
        target: 'quoted',
        rerun: RERUN,
        note: `bare node -e 0: ${round(bareRss)} MiB`,
      },
    );
  }
  return results;
}
