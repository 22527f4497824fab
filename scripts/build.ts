/**
 * Bundles every Lambda: one minified ESM package per function under dist/functions/<name>/
 * (index.mjs, plus chunks/ for code loaded on demand),
 * with a metafile so the benchmark can report what went into each bundle.
 * Usage: npm run build [-- <function> ...]
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

export const LAMBDA_FUNCTIONS = readdirSync('functions').filter((name) =>
  existsSync(join('functions', name, 'handler.ts')),
);

export interface BundleInfo {
  name: string;
  file: string;
  /** Every file of the package: the entry and its on-demand chunks. */
  bytes: number;
  /** What a cold start loads: the entry file alone. */
  entryBytes: number;
  inputs: string[];
}

export async function bundleFunction(name: string, outDir = 'dist/functions'): Promise<BundleInfo> {
  const dir = join(outDir, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'index.mjs');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const result = await build({
    entryPoints: { index: join('functions', name, 'handler.ts') },
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    // Code reached only through import() (the SDK client of the Kubernetes auth mode not in use)
    // goes to chunks loaded on demand, so a cold start neither compiles nor evaluates it.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    minify: true,
    sourcemap: false,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    metafile: true,
    legalComments: 'none',
    // Some CommonJS dependencies call require() for Node built-ins; give the ESM bundle one.
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: 'warning',
  });
  writeFileSync(join(dir, 'meta.json'), JSON.stringify(result.metafile));
  const bytes = Object.keys(result.metafile.outputs).reduce((n, out) => n + statSync(out).size, 0);
  return { name, file, bytes, entryBytes: statSync(file).size, inputs: Object.keys(result.metafile.inputs) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const wanted = process.argv.slice(2);
  for (const name of wanted.length > 0 ? wanted : LAMBDA_FUNCTIONS) {
    const info = await bundleFunction(name);
    console.log(`${name.padEnd(20)} ${(info.bytes / 1024).toFixed(0).padStart(6)} KiB  ${info.file}`);
  }
}
