/**
 * The scripts inside the executable. The SEA's main script is only a loader (sea-main.ts); the plugin itself
 * (main.ts) and the SDK adapter (aws-ports.ts) are CommonJS scripts stored as SEA assets, each with a V8 code cache
 * the build makes with the target's Node.js (scripts/build-credential-provider.ts): the plugin's after answering
 * a few requests, so the functions a run calls are compiled already, and the adapter's only in the runs that need
 * it (docs/credential-provider.md, "Size and start time"). The wrapper below is shared by the executable and the
 * build, since a code cache only fits the exact source it was made from.
 */
import type { AwsPortOptions } from './aws-ports.ts';
import type { AwsPorts } from './choose-ports.ts';

export const MAIN_ASSET = 'main.cjs';
export const MAIN_CODE_CACHE_ASSET = 'main.cache';
export const SDK_ASSET = 'aws-ports.cjs';
export const SDK_CODE_CACHE_ASSET = 'aws-ports.cache';

export type SdkModule = { createAwsPorts(options: AwsPortOptions): AwsPorts };

/** The CommonJS module wrapper. The scripts need Node.js built-ins only, which is all a SEA's require serves. */
export function wrapCommonJs(source: string): string {
  return `(function (exports, require, module) {${source}\n})`;
}

type Script = import('node:vm').Script;

/** Runs a wrapped script as a module and returns its exports; `require` serves Node.js built-ins only. */
export function evaluateCommonJs<T>(script: Script): T {
  const module = { exports: {} as T };
  const requireBuiltin = (id: string) => process.getBuiltinModule(id);
  (script.runInThisContext() as (e: unknown, r: unknown, m: unknown) => void)(module.exports, requireBuiltin, module);
  return module.exports;
}

/** Runs in the executable only: one of its script assets, compiled with its code cache when it has one. */
export function compileAsset(name: string, codeCacheName: string): Script {
  const { getAsset } = process.getBuiltinModule('node:sea');
  const { Script } = process.getBuiltinModule('node:vm');
  let cachedData: Buffer | undefined;
  try {
    cachedData = Buffer.from(getAsset(codeCacheName));
  } catch {
    // Built without code caches (a foreign architecture without qemu): V8 compiles from source.
  }
  return new Script(wrapCommonJs(getAsset(name, 'utf8')), { filename: name, ...(cachedData ? { cachedData } : {}) });
}

/** What `import('./aws-ports.ts')` becomes in the executable. */
export function loadSdkAsset(): SdkModule {
  return evaluateCommonJs<SdkModule>(compileAsset(SDK_ASSET, SDK_CODE_CACHE_ASSET));
}
