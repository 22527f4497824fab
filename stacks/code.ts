import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code } from 'aws-cdk-lib/aws-lambda';
import type { FunctionName } from './config.ts';
import type { CodeSource } from './context.ts';

export const BUNDLE_DIR = 'dist/functions';

/**
 * The real deployment packages: `scripts/build.ts` bundles each function (minified ESM, one file at a
 * cold start, `index.mjs`, and `on-demand/` for what it imports on demand) exactly as `npm run build` does, and each directory becomes the function's asset.
 * The esbuild metafile beside the bundle is for the benchmark, not for Lambda, so it stays out.
 */
export async function bundledCode(names: readonly FunctionName[], outDir = BUNDLE_DIR): Promise<CodeSource> {
  // Imported here, not at the top: build.ts lists ./functions when loaded, which is only right
  // once SST has moved to the project root.
  const { bundleFunction } = await import('../scripts/build.ts');
  await Promise.all(names.map((name) => bundleFunction(name, outDir)));
  return (name) => Code.fromAsset(join(outDir, name), { exclude: ['meta.json'] });
}

/**
 * A placeholder package per function, for tests (bundling every function takes seconds) and for
 * `sst remove`, which deletes the stacks and never uploads code.
 */
export function stubCode(dir: string): CodeSource {
  return (name) => {
    const path = join(dir, name);
    mkdirSync(path, { recursive: true });
    writeFileSync(
      join(path, 'index.mjs'),
      `// placeholder for ${name}; npm run synth and sst deploy use the real bundle\nexport const handler = async () => ({ batchItemFailures: [] });\n`,
    );
    return Code.fromAsset(path);
  };
}
