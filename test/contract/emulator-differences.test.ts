import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMULATOR_DIFFERENCES } from './contract.ts';

/**
 * docs/emulator-differences.md and the EC2/ELBv2/Classic ELB contract suite stay in step: every difference the suite
 * declares has its row, every keyed row names tests that exist, and every key is used by a test. Needs no emulator.
 */

const here = import.meta.dirname;
const table = readFileSync(join(here, '../../docs/emulator-differences.md'), 'utf8');
const suite = new Map(
  readdirSync(here)
    .filter((file) => file.endsWith('.contract.test.ts'))
    .map((file) => [file, readFileSync(join(here, file), 'utf8')]),
);

interface Row {
  key: string;
  file: string;
  tests: string[];
}

/** Rows whose behaviour column starts with a key in backticks; the test column is `file` "name", "name"... */
function keyedRows(markdown: string): Row[] {
  const rows: Row[] = [];
  for (const line of markdown.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const key = /^`((?:ec2|elbv2|elb)\.[a-z0-9-]+)`/.exec(cells[2] ?? '')?.[1];
    if (!key) continue;
    const testCell = cells[5] ?? '';
    rows.push({
      key,
      file: /^`([^`]+)`/.exec(testCell)?.[1] ?? '',
      tests: [...testCell.matchAll(/"([^"]+)"/g)].map((m) => m[1]!),
    });
  }
  return rows;
}

describe('docs/emulator-differences.md and the EC2/ELBv2/Classic ELB contract suite', () => {
  const rows = keyedRows(table);

  it('has one row per declared difference, and no row the suite does not declare', () => {
    expect(rows.map((r) => r.key).sort()).toEqual(Object.keys(EMULATOR_DIFFERENCES).sort());
  });

  it.each(rows)('row $key names tests of its file that exist', ({ file, tests }) => {
    const source = suite.get(file);
    expect(source, `no contract test file ${file}`).toBeDefined();
    expect(tests.length).toBeGreaterThan(0);
    for (const name of tests) {
      const quoted = [`'${name}'`, `"${name}"`, `\`${name}\``];
      expect(
        quoted.some((q) => source!.includes(q)),
        `${file} has no test "${name}"`,
      ).toBe(true);
    }
  });

  it.each(Object.keys(EMULATOR_DIFFERENCES))('difference %s is used by a test', (key) => {
    const used = [...suite.values()].some((source) => source.includes(`'${key}'`));
    expect(used).toBe(true);
  });
});
