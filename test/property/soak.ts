import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { DEFAULT_SIZE, engineProperty } from './property.ts';

/**
 * `npm run test:soak [-- --runs <n>] [-- --seed=<n> --path <p>]`: the engine property over many schedules, or the
 * replay of one failure (the seed and path a failure prints; with PROP_LOG=1 the replay prints the controllers' log
 * lines). Reports schedules per second.
 */
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    path: { type: 'string' },
    steps: { type: 'string' },
  },
});

const runs = Number(values.runs);
const size = { ...DEFAULT_SIZE, ...(values.steps ? { maxSteps: Number(values.steps) } : {}) };
const started = performance.now();
let done = 0;
const property = engineProperty(size).afterEach(() => {
  done += 1;
  if (done % 500 === 0) {
    const seconds = (performance.now() - started) / 1000;
    console.log(`${done} schedules, ${(done / seconds).toFixed(1)}/s`);
  }
});

const result = await fc.check(property, {
  numRuns: values.path ? 1 : runs,
  ...(values.seed !== undefined ? { seed: Number(values.seed) } : {}),
  ...(values.path !== undefined ? { path: values.path } : {}),
  endOnFailure: false,
});
const seconds = (performance.now() - started) / 1000;
console.log(`${result.numRuns} schedules in ${seconds.toFixed(1)} s: ${(result.numRuns / seconds).toFixed(1)}/s`);
if (result.failed) {
  console.error(fc.defaultReportMessage(result));
  console.error(String((result.errorInstance as Error | undefined)?.message ?? ''));
  console.error(`replay: npm run test:soak -- --seed=${result.seed} --path ${result.counterexamplePath}`);
  process.exit(1);
}
