import type { SSTConfig } from 'sst';
import { bundledCode, stubCode } from './stacks/code.ts';
import { APP_NAME, FUNCTION_NAMES, loadStageConfig, stageEnvironment } from './stacks/config.ts';
import { defineControlPlane } from './stacks/control-plane.ts';

/**
 * `sst deploy --stage <name>` / `sst remove --stage <name>`. The stage's settings are `CCM_*`
 * variables, usually in `.env.<name>` (deploy/README-deploy.md). `npm run synth` builds the same
 * stacks offline through stacks/synth.ts.
 */
export default {
  config(input) {
    // SST loads the .env files only after this runs, so read them here for the region (the one
    // setting SST needs up front); stacks() validates everything, region included.
    const region = stageEnvironment(input.root ?? process.cwd(), input.stage).CCM_REGION;
    return { name: APP_NAME, ...(region ? { region } : {}) };
  },
  async stacks(app) {
    if (app.mode === 'dev') {
      // Live Lambda runs only SST Function constructs locally; these are plain Lambda functions, so
      // `sst dev` would quietly deploy them as `sst deploy` does. Local runs are `npm start`.
      throw new Error('sst dev is not supported: use `npm start` to run locally and `sst deploy` for AWS');
    }
    const config = loadStageConfig(process.env);
    // `sst remove` deletes the stack and never uploads code: no need to bundle.
    const code = app.mode === 'remove' ? stubCode('.sst/stub-functions') : await bundledCode(FUNCTION_NAMES);
    defineControlPlane(app, config, code);
  },
} satisfies SSTConfig;
