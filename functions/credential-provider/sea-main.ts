/**
 * The executable's main script: it only runs the plugin's script (main.ts, bundled) from its SEA asset with the
 * code cache the build made after a warm-up (sea-assets.ts). Node.js's own code cache for a SEA main script is made
 * without running it, so every function a run calls would be compiled at every start: about 12 million of the 173
 * million instructions of an answer (docs/credential-provider.md, "Size and start time").
 */
import { compileAsset, evaluateCommonJs, MAIN_ASSET, MAIN_CODE_CACHE_ASSET } from './sea-assets.ts';

evaluateCommonJs(compileAsset(MAIN_ASSET, MAIN_CODE_CACHE_ASSET));
