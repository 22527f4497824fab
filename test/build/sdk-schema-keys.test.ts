import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { literalTraitKeys, SDK_SCHEMA_FILE, sdkSchemaKeys } from '../../scripts/sdk-schema-keys.ts';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
const CLIENTS = Object.keys(pkg.dependencies).filter((name) => name.startsWith('@aws-sdk/client-'));
const out = mkdtempSync(join(tmpdir(), 'sdk-schema-keys-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** One ES module of `entry`'s code and what it imports, with or without the plugin. */
async function bundle(entry: string, literalKeys: boolean): Promise<string> {
  const result = await build({
    stdin: { contents: entry, resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    mainFields: ['module', 'main'],
    plugins: literalKeys ? [sdkSchemaKeys()] : [],
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

async function load(code: string, name: string): Promise<Record<string, unknown>> {
  const file = join(out, `${name}.mjs`);
  writeFileSync(file, code);
  return import(pathToFileURL(file).href);
}

/**
 * Where `a` and `b` first differ (a path), or undefined when they are the same structure: primitives equal,
 * arrays, maps and objects member by member, arrow functions (the schemas' `() => Shape` references) by what
 * they return, other functions (error classes) by their source. Pairs already compared are not compared again,
 * so shapes that refer to each other terminate.
 */
function difference(a: unknown, b: unknown, path: string, seen: Map<unknown, unknown>): string | undefined {
  if (typeof a !== typeof b) return `${path}: ${typeof a} vs ${typeof b}`;
  if (typeof a === 'function' && typeof b === 'function') {
    if (String(a) !== String(b)) return `${path}: functions differ`;
    if (Object.hasOwn(a, 'prototype') || seen.get(a) === b) return undefined;
    seen.set(a, b);
    return difference(a(), b(), `${path}()`, seen);
  }
  if (typeof a !== 'object' || a === null || b === null)
    return Object.is(a, b) ? undefined : `${path}: ${String(a)} vs ${String(b)}`;
  if (seen.get(a) === b) return undefined;
  seen.set(a, b);
  if (Object.getPrototypeOf(a)?.constructor?.name !== Object.getPrototypeOf(b)?.constructor?.name)
    return `${path}: prototypes differ`;
  const entries = (x: object): [string, unknown][] =>
    x instanceof Map ? [...x.entries()].map(([k, v]) => [String(k), v]) : Object.entries(x);
  const left = entries(a);
  const right = new Map(entries(b as object));
  if (left.length !== right.size) return `${path}: ${left.length} vs ${right.size} members`;
  for (const [key, value] of left) {
    if (!right.has(key)) return `${path}.${key}: missing`;
    const found = difference(value, right.get(key), `${path}.${key}`, seen);
    if (found) return found;
  }
  return undefined;
}

describe('literalTraitKeys', () => {
  it('writes computed keys naming top-level string constants as literals, and nothing else', () => {
    const source = [
      'const _xN = "xmlName";',
      'const _m = "min";',
      'let _v = "changes";',
      'export var A$ = [3, n0, _m, 0, [_xN, _m], [[1, { [_xN]: _m,',
      '    [_xN]: `Max` }], { [_v]: 1, [other]: 2 }]];',
    ].join('\n');
    const { code, replaced } = literalTraitKeys(source);
    expect(replaced).toBe(2);
    expect(code).toContain('[[1, { "xmlName": _m,\n    "xmlName": `Max` }]');
    expect(code).toContain('[_xN, _m]'); // an array element, not a key
    expect(code).toContain('{ [_v]: 1, [other]: 2 }'); // not a const string, not a constant
  });

  it('changes nothing in a module without computed keys', () => {
    const source = 'const _a = "A";\nexport var S = [0, n0, _a, { "xmlName": _a }];\n';
    expect(literalTraitKeys(source)).toEqual({ code: source, replaced: 0 });
  });
});

describe.each(CLIENTS)('the schemas of %s with literal keys', (client) => {
  const dir = join('node_modules', client, 'dist-es', 'schemas');
  const files = readdirSync(dir).filter((f) => SDK_SCHEMA_FILE.test(join(dir, f)));

  it.each(files)('%s builds the same shapes', async (file) => {
    const path = join(process.cwd(), dir, file);
    expect(literalTraitKeys(readFileSync(path, 'utf8')).replaced).toBeGreaterThan(0);
    const entry = `export * from ${JSON.stringify(path)};`;
    const tag = `${client.replace(/\W/g, '_')}-${file}`;
    const before = await load(await bundle(entry, false), `${tag}-before`);
    const after = await load(await bundle(entry, true), `${tag}-after`);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    expect(difference(before, after, client, new Map())).toBeUndefined();
  });
});

describe('tree shaking with literal keys', () => {
  it('leaves out the shapes of EC2 operations a bundle does not use', async () => {
    const entry = `import { EC2Client, DescribeInstancesCommand } from '@aws-sdk/client-ec2'; export { EC2Client, DescribeInstancesCommand };`;
    const without = await bundle(entry, false);
    const withKeys = await bundle(entry, true);
    // A shape of an operation the entry never names; the one it uses stays.
    expect(without).toContain('"AcceptAddressTransferRequest"');
    expect(withKeys).not.toContain('"AcceptAddressTransferRequest"');
    expect(withKeys).toContain('"DescribeInstancesRequest"');
    expect(withKeys.length).toBeLessThan(without.length / 2);
  });
});
