/**
 * The build's own `strip` (scripts/build-credential-provider.ts): the executables are stripped copies of the
 * official Node.js binaries, for either architecture, without binutils for each.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stripElf } from '../../scripts/build-credential-provider.ts';

const dir = mkdtempSync(join(tmpdir(), 'strip-elf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(process.platform !== 'linux')('stripElf', () => {
  it('drops the unloaded sections of a Node.js binary, which still runs', () => {
    // Prepare: the Node.js running this test, an official, unstripped linux binary.
    const original = readFileSync(process.execPath);

    // Act
    const stripped = stripElf(original);
    const path = join(dir, 'node');
    writeFileSync(path, stripped);
    chmodSync(path, 0o755);

    // Assess
    expect(stripped.length).toBeLessThan(original.length);
    expect(stripped.subarray(0, 16)).toEqual(original.subarray(0, 16));
    expect(execFileSync(path, ['-p', '6 * 7'], { encoding: 'utf8' })).toBe('42\n');
  });

  it('refuses what is not a 64-bit little-endian ELF file', () => {
    expect(() => stripElf(Buffer.from('#!/bin/sh\necho not elf\n'.padEnd(128)))).toThrow(/not a 64-bit LSB ELF/);
  });
});
