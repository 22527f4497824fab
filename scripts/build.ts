/**
 * Bundles every Lambda: one minified ESM file per function under dist/functions/<name>/index.mjs,
 * with a metafile so the benchmark can report what went into each bundle.
 * Usage: npm run build [-- <function> ...]
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

export const LAMBDA_FUNCTIONS = readdirSync('functions').filter((name) =>
  existsSync(join('functions', name, 'handler.ts')),
);

export interface BundleInfo {
  name: string;
  file: string;
  bytes: number;
  inputs: string[];
}

export async function bundleFunction(name: string, outDir = 'dist/functions'): Promise<BundleInfo> {
  const dir = join(outDir, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'index.mjs');
  const result = await build({
    entryPoints: [join('functions', name, 'handler.ts')],
    outfile: file,
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
  return { name, file, bytes: statSync(file).size, inputs: Object.keys(result.metafile.inputs) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const wanted = process.argv.slice(2);
  for (const name of wanted.length > 0 ? wanted : LAMBDA_FUNCTIONS) {
    const info = await bundleFunction(name);
    console.log(`${name.padEnd(20)} ${(info.bytes / 1024).toFixed(0).padStart(6)} KiB  ${info.file}`);
  }
}
