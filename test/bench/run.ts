/**
 * The project's one benchmark harness: runs every test/bench/*.bench.ts (or those named on the
 * command line: `npm run bench -- node-init bundles`), prints a table and writes bench-report.json.
 * Figures are measurements, never assertions: tests assert behaviour, this reports cost.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import type { BenchResult } from './types.ts';

const dir = new URL('./', import.meta.url);
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace('.bench.ts', '')));

const report: { bench: string; results: BenchResult[]; error?: string }[] = [];
for (const file of files) {
  const bench = file.replace('.bench.ts', '');
  process.stderr.write(`running ${bench}...\n`);
  try {
    const module = (await import(new URL(file, dir).href)) as { run: () => Promise<BenchResult[]> };
    report.push({ bench, results: await module.run() });
  } catch (err) {
    report.push({ bench, results: [], error: err instanceof Error ? err.message : String(err) });
  }
}

const rows = report.flatMap((r) =>
  r.error
    ? [[r.bench, 'FAILED', '', '', r.error]]
    : r.results.map((x) => [x.name, String(x.value), x.unit, x.target ?? '', x.note ?? '']),
);
const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((row) => row[i]!.length), 6));
const line = (row: string[]) =>
  `${row[0]!.padEnd(widths[0]!)}  ${row[1]!.padStart(widths[1]!)} ${row[2]!.padEnd(widths[2]!)}  ${row[3]!.padEnd(widths[3]!)}  ${row[4]}`;
console.log(line(['figure', 'value', 'unit', 'target', 'note']));
console.log('-'.repeat(widths.reduce((a, b) => a + b, 0) + 12));
for (const row of rows) console.log(line(row));

const machine = {
  node: process.version,
  cpus: availableParallelism(),
  cpu: cpus()[0]?.model,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
};
writeFileSync('bench-report.json', `${JSON.stringify({ date: new Date().toISOString(), machine, report }, null, 2)}\n`);
console.log('\nwrote bench-report.json; re-run one benchmark with `npm run bench -- <name>`');
if (report.some((r) => r.error)) process.exitCode = 1;
