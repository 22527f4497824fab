import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The rows of docs/emulator-differences.md keyed `key`: the test names their last column quotes, and the file
 * it names. A contract test file checks with it that each difference it declares is documented and points at
 * its tests (the EC2/ELBv2 suite has its own check, emulator-differences.test.ts).
 */
export function differenceRow(key: string): { file: string; tests: string[] } | undefined {
  const table = readFileSync(join(import.meta.dirname, '../../docs/emulator-differences.md'), 'utf8');
  for (const line of table.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (!(cells[2] ?? '').startsWith(`\`${key}\`:`)) continue;
    const testCell = cells[5] ?? '';
    return {
      file: /^`([^`]+)`/.exec(testCell)?.[1] ?? '',
      tests: [...testCell.matchAll(/"([^"]+)"/g)].map((m) => m[1]!),
    };
  }
  return undefined;
}

/** Whether `source` has a test named exactly `name`, in any quotes. */
export function hasTest(source: string, name: string): boolean {
  return [`'${name}'`, `"${name}"`, `\`${name}\``].some((quoted) => source.includes(quoted));
}
