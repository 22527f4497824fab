/**
 * Code reached only through `import()` (the SDK client of the Kubernetes auth mode not in use, the SDK's other
 * credential providers, the client-node adapters of kubeconfig mode), built as packages of their own, so that a
 * cold start loads one file.
 *
 * esbuild's own code splitting does the loading on demand too, but it moves what the entry shares with the
 * on-demand code into chunks the entry imports: ten to twelve files at each cold start, and each file costs the
 * ES module loader a resolve, a read, a compile and a link. The node function's import took 14% less time as one
 * file of the same code than as its entry and chunks (docs/adr/0010-lambda-cold-start.md). Here each module
 * imported on demand becomes a self-contained package in `on-demand/`, with its own copy of what it shares
 * with the entry: more bytes in the zip, none at a cold start.
 *
 * What that copy means: a module loaded on demand does not share module state (caches, classes for
 * `instanceof`) with the entry. The modules it applies to hold an SDK client or a credential provider of their own,
 * or need @kubernetes/client-node, which the Lambda packages leave out anyway (scripts/build.ts).
 */
import { createHash } from 'node:crypto';
import { basename, relative } from 'node:path';
import type { Plugin } from 'esbuild';

export const ON_DEMAND_DIR = 'on-demand';

/** The on-demand modules met so far: resolved source path -> file name in ON_DEMAND_DIR. */
export type OnDemandModules = Map<string, string>;

/**
 * Rewrites each `import()` esbuild can resolve to a bundled module into an import of that module's own package
 * (recorded in `modules` for the caller to build), relative to where the output being built sits: the entry at
 * the package's root, or a package in ON_DEMAND_DIR. Node built-ins and packages left out stay as they are.
 */
export function onDemand(modules: OnDemandModules, from: 'root' | 'on-demand'): Plugin {
  return {
    name: 'on-demand',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || args.pluginData === ON_DEMAND) return undefined;
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: ON_DEMAND,
        });
        if (resolved.errors.length > 0 || resolved.external || resolved.namespace !== 'file') return resolved;
        let file = modules.get(resolved.path);
        if (!file) {
          file = fileName(resolved.path);
          modules.set(resolved.path, file);
        }
        return { path: from === 'root' ? `./${ON_DEMAND_DIR}/${file}` : `./${file}`, external: true };
      });
    },
  };
}

/** Marks the resolve the plugin asks esbuild for, so it does not come back to the plugin. */
const ON_DEMAND = Symbol('on-demand');

/** `client-eks-1a2b3c4d.mjs`: the package (or source file) it comes from, and a hash of its path. */
function fileName(path: string): string {
  const inPackage = /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(path)?.[1];
  const stem = (inPackage ?? basename(path).replace(/\.[cm]?[jt]s$/, '')).replace(/^@/, '').replace(/[\\/]/g, '-');
  const hash = createHash('sha256').update(relative(process.cwd(), path)).digest('hex').slice(0, 8);
  return `${stem}-${hash}.mjs`;
}
