/**
 * Bundles every Lambda: one minified ESM package per function under dist/functions/<name>/
 * (index.mjs, plus on-demand/ for code loaded on demand: scripts/on-demand.ts),
 * with a metafile so the benchmark can report what went into each bundle.
 * Usage: npm run build [-- <function> ...]
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile, type Plugin } from 'esbuild';
import { ON_DEMAND_DIR, type OnDemandModules, onDemand } from './on-demand.ts';
import { sdkSchemaKeys } from './sdk-schema-keys.ts';

export const LAMBDA_FUNCTIONS = readdirSync('functions').filter((name) =>
  existsSync(join('functions', name, 'handler.ts')),
);

export interface BundleInfo {
  name: string;
  file: string;
  /** Every file of the package: the entry and the packages it loads on demand. */
  bytes: number;
  /** What a cold start loads: the entry (and any file it imports statically; none since scripts/on-demand.ts). */
  entryBytes: number;
  inputs: string[];
  /** The source files of what a cold start loads. */
  coldInputs: string[];
}

export async function bundleFunction(name: string, outDir = 'dist/functions'): Promise<BundleInfo> {
  const dir = join(outDir, name);
  const file = join(dir, 'index.mjs');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const modules: OnDemandModules = new Map();
  const entry = await bundle(join('functions', name, 'handler.ts'), file, onDemand(modules, 'root'));
  // What the entry imports on demand, and what that imports on demand, each a package of its own.
  const metafiles = [entry];
  for (const built = new Set<string>(); built.size < modules.size; ) {
    const pending = [...modules].filter(([path]) => !built.has(path));
    for (const [path] of pending) built.add(path);
    const results = await Promise.all(
      pending.map(([path, out]) => bundle(path, join(dir, ON_DEMAND_DIR, out), onDemand(modules, 'on-demand'))),
    );
    metafiles.push(...results);
  }
  const metafile: Metafile = {
    inputs: Object.assign({}, ...metafiles.map((m) => m.inputs)),
    outputs: Object.assign({}, ...metafiles.map((m) => m.outputs)),
  };
  writeFileSync(join(dir, 'meta.json'), JSON.stringify(metafile));
  const bytes = Object.keys(metafile.outputs).reduce((n, out) => n + statSync(out).size, 0);
  const cold = coldStartFiles(metafile, file);
  const entryBytes = cold.reduce((n, out) => n + statSync(out).size, 0);
  const coldInputs = cold.flatMap((out) => Object.keys(metafile.outputs[out]?.inputs ?? {}));
  return { name, file, bytes, entryBytes, inputs: Object.keys(metafile.inputs), coldInputs };
}

/** One self-contained ES module: `entry` and everything it imports statically (scripts/on-demand.ts). */
async function bundle(entry: string, outfile: string, onDemandImports: Plugin): Promise<Metafile> {
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    // ESM builds first (the SDK's dist-es, per command and schema) so esbuild can drop what is unused;
    // the single-file dist-cjs of a client keeps all of it.
    mainFields: ['module', 'main'],
    // sdkSchemaKeys: without it every shape of EC2's API stays in the bundle (scripts/sdk-schema-keys.ts).
    plugins: [leftOut(LEFT_OUT), onDemandImports, sdkSchemaKeys()],
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
  return result.metafile;
}

/**
 * Packages the Lambdas never load, left out of the package: client-node serves kubeconfig mode (local
 * runs, which the stacks never configure) and the relay; the Lambdas reach the API server through
 * `shared/k8s/rest-client.ts`. Marked side-effect free too, so an import nothing uses (lambda-access.ts
 * names KubeConfig for createPort and tokenKubeConfig) is dropped rather than kept as a bare import.
 * https://esbuild.github.io/plugins/#on-resolve-results (external, sideEffects)
 */
export const LEFT_OUT = ['@kubernetes/client-node'];

function leftOut(packages: string[]): Plugin {
  const filter = new RegExp(`^(${packages.map((p) => p.replace(/[/.]/g, '\\$&')).join('|')})(/.*)?$`);
  return {
    name: 'left-out',
    setup(b) {
      b.onResolve({ filter }, ({ path }) => ({ path, external: true, sideEffects: false }));
    },
  };
}

/**
 * The files a cold start loads: the entry and any file it imports statically, transitively (what is reached
 * only through import() loads on demand). Throws when one of them imports a left-out package.
 */
function coldStartFiles(metafile: Metafile, entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const { path, kind, external } of metafile.outputs[file]?.imports ?? []) {
      if (kind !== 'import-statement') continue;
      if (external && LEFT_OUT.some((p) => path === p || path.startsWith(`${p}/`))) {
        throw new Error(`bundling ${entry}: ${file} loads ${path} at start, which the package leaves out`);
      }
      if (!external) visit(path);
    }
  };
  visit(entry);
  return [...seen];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const wanted = process.argv.slice(2);
  for (const name of wanted.length > 0 ? wanted : LAMBDA_FUNCTIONS) {
    const info = await bundleFunction(name);
    console.log(`${name.padEnd(20)} ${(info.bytes / 1024).toFixed(0).padStart(6)} KiB  ${info.file}`);
  }
}
