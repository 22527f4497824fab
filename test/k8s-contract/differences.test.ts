import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { differenceRow, hasTest } from '../contract/difference-rows.ts';
import { KUBE_DIFFERENCES } from './contract.ts';

/**
 * The "Kubernetes API server" section of docs/emulator-differences.md and the Kubernetes contract suite stay in
 * step: every difference the suite declares has its row naming tests that exist, every `k8s.` row is declared, and
 * every declared key is used by a test. Needs no API server.
 */

const here = import.meta.dirname;
const suite = new Map(
  readdirSync(here)
    .filter((file) => file.endsWith('.contract.test.ts'))
    .map((file) => [file, readFileSync(join(here, file), 'utf8')]),
);
const table = readFileSync(join(here, '../../docs/emulator-differences.md'), 'utf8');
const keys = Object.keys(KUBE_DIFFERENCES);

describe('docs/emulator-differences.md and the Kubernetes contract suite', () => {
  it('has a row for every declared difference, and no k8s row the suite does not declare', () => {
    const rows = [...table.matchAll(/^\|[^|]*\| `(k8s\.[a-z0-9-]+)`:/gm)].map((m) => m[1]);
    expect(rows.sort()).toEqual([...keys].sort());
  });

  it.each(keys)('row %s names tests of its file that exist, and the key is used there', (key) => {
    const row = differenceRow(key);
    expect(row, `no row for ${key}`).toBeDefined();
    const source = suite.get(row!.file);
    expect(source, `no contract test file ${row!.file}`).toBeDefined();
    expect(row!.tests.length).toBeGreaterThan(0);
    for (const name of row!.tests) expect(hasTest(source!, name), `${row!.file} has no test "${name}"`).toBe(true);
    expect(source).toContain(`'${key}'`);
  });
});
