/**
 * The SDK adapter (aws-ports.ts) inside the executable: a second CommonJS script stored as a SEA asset, compiled
 * only in the runs that need it (docs/credential-provider.md, "Start time"). The build produces the asset and,
 * where it can run the target's Node.js, a V8 code cache for it (scripts/build-credential-provider.ts); the
 * wrapper below is shared by both, since a code cache only fits the exact source it was made from.
 */
import type { AwsPortOptions } from './aws-ports.ts';
import type { AwsPorts } from './choose-ports.ts';

export const SDK_ASSET = 'aws-ports.cjs';
export const SDK_CODE_CACHE_ASSET = 'aws-ports.cache';

export type SdkModule = { createAwsPorts(options: AwsPortOptions): AwsPorts };

/** The CommonJS module wrapper. The asset needs Node.js built-ins only, which is all a SEA's require serves. */
export function wrapCommonJs(source: string): string {
  return `(function (exports, require, module) {${source}\n})`;
}

type Script = import('node:vm').Script;

/** Evaluates a wrapped script as a module; `require` serves Node.js built-ins only. */
export function evaluateCommonJs(script: Script): SdkModule {
  const module = { exports: {} as SdkModule };
  const requireBuiltin = (id: string) => process.getBuiltinModule(id);
  (script.runInThisContext() as (e: unknown, r: unknown, m: unknown) => void)(module.exports, requireBuiltin, module);
  return module.exports;
}

/** Runs in the executable only: what `import('./aws-ports.ts')` becomes there. */
export function loadSdkAsset(): SdkModule {
  const { getAsset } = process.getBuiltinModule('node:sea');
  const { Script } = process.getBuiltinModule('node:vm');
  let cachedData: Buffer | undefined;
  try {
    cachedData = Buffer.from(getAsset(SDK_CODE_CACHE_ASSET));
  } catch {
    // Built without a code cache (a foreign architecture without qemu): V8 compiles from source.
  }
  const script = new Script(wrapCommonJs(getAsset(SDK_ASSET, 'utf8')), {
    filename: SDK_ASSET,
    ...(cachedData ? { cachedData } : {}),
  });
  return evaluateCommonJs(script);
}
