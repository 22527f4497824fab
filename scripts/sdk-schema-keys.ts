/**
 * An esbuild plugin that lets the bundler drop the AWS SDK schemas a function never uses.
 *
 * Each SDK v3 client ships every shape of its service in `dist-es/schemas/schemas_0.js` (EC2: 1.3 MB of source,
 * 547 KiB minified). The code generator writes shape traits as objects with computed keys whose names are
 * module constants (`{ [_xN]: _m }` with `const _xN = "xmlName"`), and esbuild keeps every statement holding a
 * computed key: converting a key to a property name could call `toString` on an object, so it counts as a side
 * effect. Every shape of the service then stays in the bundle, unused or not. The upstream fix (literal keys in
 * the generated code) is not released; until it is, this plugin writes the same keys as literals when the SDK's
 * file is loaded: `{ "xmlName": _m }`. The constants are string literals declared with `const` at the top of the
 * same module, so the object built is the same, and `test/build/sdk-schema-keys.test.ts` holds every schema
 * module of the clients we use to be structurally equal before and after. Once the SDK writes literal keys the
 * plugin finds nothing to replace and changes nothing.
 *
 * Measured (`npm run bench -- bundles`, docs/adr/0010-lambda-cold-start.md): the node function's cold-start
 * package 945 -> about 470 KiB.
 */
import { readFile } from 'node:fs/promises';
import type { Plugin } from 'esbuild';

/** The generated schema modules of the SDK's clients (ES module build). */
export const SDK_SCHEMA_FILE = /[\\/]@aws-sdk[\\/]client-[^\\/]+[\\/]dist-es[\\/]schemas[\\/]schemas_\d+\.js$/;

/** `const _xN = "xmlName";` at the top level of the module: a name that always holds that string. */
const STRING_CONSTANT = /^const (_\w+) = ("[^"\\\n]*");$/gm;
/** A computed key naming a constant, in a property position of an object literal (after `{` or `,`). */
const COMPUTED_KEY = /([{,]\s*)\[(_\w+)\]:/g;

export interface Rewritten {
  code: string;
  /** Computed keys written as literals. */
  replaced: number;
}

/** The module's source with each computed key that names a top-level string constant written as that string. */
export function literalTraitKeys(source: string): Rewritten {
  const constants = new Map<string, string>();
  for (const [, name, literal] of source.matchAll(STRING_CONSTANT)) constants.set(name!, literal!);
  let replaced = 0;
  const code = source.replace(COMPUTED_KEY, (whole, before: string, name: string) => {
    const literal = constants.get(name);
    if (literal === undefined) return whole;
    replaced++;
    return `${before}${literal}:`;
  });
  return { code, replaced };
}

export function sdkSchemaKeys(): Plugin {
  return {
    name: 'sdk-schema-keys',
    setup(build) {
      build.onLoad({ filter: SDK_SCHEMA_FILE }, async ({ path }) => ({
        contents: literalTraitKeys(await readFile(path, 'utf8')).code,
        loader: 'js',
      }));
    },
  };
}
