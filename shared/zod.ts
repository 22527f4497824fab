/**
 * zod for the Lambdas: the mini build, with English messages.
 *
 * `zod/mini` has the same parsers and checks as the classic `zod` API, as functions (`z.optional(s)`,
 * `s.check(z.minLength(1))`) instead of methods on every schema. A classic schema gets some fifty methods
 * attached when it is made, which is most of what building the config schema costs at a cold start: importing it
 * alone took 2.5x a bare `node -e 0` with classic zod, 1.2x with mini (docs/adr/0010-lambda-cold-start.md).
 * Unlike classic zod, mini loads no locale, so every message it writes itself ("Unrecognized key: \"extra\"")
 * would read "Invalid input": the English locale is set here, once, before any schema parses.
 * Import zod as `import * as z from '<path>/shared/zod.ts'` in code the Lambdas load, and name `z.core` only in
 * types: a value read from it keeps the whole of zod's core in the bundle.
 */

import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
/** The error `parse` throws; `z.core.$ZodError` would keep all of zod's core (every locale) in the bundle. */
export { $ZodError } from 'zod/v4/core';
