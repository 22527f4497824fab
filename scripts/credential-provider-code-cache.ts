/**
 * Run by the target architecture's Node.js during `npm run build:credential-provider` (bundled to CommonJS
 * first): compiles the SDK asset exactly as the executable will (functions/credential-provider/sdk-asset.ts),
 * evaluates it so the functions its top level runs are compiled too, and writes V8's code cache for it.
 *
 *   node code-cache.cjs <aws-ports.cjs> <aws-ports.cache>
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Script } from 'node:vm';
import { evaluateCommonJs, SDK_ASSET, wrapCommonJs } from '../functions/credential-provider/sdk-asset.ts';

const [source, output] = process.argv.slice(2);
if (!source || !output) throw new Error('usage: code-cache.cjs <script> <cache>');
const script = new Script(wrapCommonJs(readFileSync(source, 'utf8')), { filename: SDK_ASSET });
const sdk = evaluateCommonJs(script);
if (typeof sdk.createAwsPorts !== 'function') throw new Error(`${source} does not export createAwsPorts`);
writeFileSync(output, script.createCachedData());
