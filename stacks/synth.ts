/**
 * Synthesizes the control plane's CloudFormation without an AWS account or network.
 *
 * `sst build` / `sst deploy` synthesize through the SST CLI, which first asks STS who the caller is
 * and looks up the CDK bootstrap stack, so they need credentials. This builds the same SST `App`
 * in-process instead, with what the CLI would have provided (a project, a stage, the region from
 * the stage config, the account left as the `AWS::AccountId` pseudo parameter) and the same
 * `defineControlPlane` that `sst.config.ts` calls. The tests use it too.
 *
 * Usage: npm run synth [-- --stage <name>] [--env-file <path>] [--out <dir>] [--stub-code]
 *   no --stage: the `example` stage, configured by stacks/example.env
 */
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs, parseEnv } from 'node:util';
import { Aws } from 'aws-cdk-lib';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { App } from 'sst/constructs/App.js';
import type { Stack } from 'sst/constructs/Stack.js';
import { setProject } from 'sst/project.js';
import { bundledCode, stubCode } from './code.ts';
import { APP_NAME, FUNCTION_NAMES, loadStageConfig, type StageConfig, stageEnvironment } from './config.ts';
import type { CodeSource } from './context.ts';
import { defineControlPlane } from './control-plane.ts';
import { policyViolations } from './policy-rules.ts';

export interface OfflineSynthOptions {
  stage: string;
  /** The environment holding the `CCM_` settings (already merged with any .env files). */
  env: Record<string, string | undefined>;
  /** Where the cloud assembly (templates and assets) goes. */
  outdir: string;
  /** Default: bundle every function with esbuild, as `sst deploy` does. */
  code?: CodeSource;
  /** Project root: SST keeps generated types under `<root>/.sst`. Default: the current directory. */
  root?: string;
}

export interface OfflineSynthResult {
  config: StageConfig;
  stack: Stack;
  assembly: CloudAssembly;
  /** The stack's CloudFormation template. */
  template: Record<string, unknown>;
}

export async function synthesizeOffline(options: OfflineSynthOptions): Promise<OfflineSynthResult> {
  const config = loadStageConfig(options.env);
  const root = resolve(options.root ?? process.cwd());
  provideOfflineProject(root, options.stage, config.region);
  const app = new App(
    { mode: 'deploy', stage: options.stage, name: APP_NAME, region: config.region, account: Aws.ACCOUNT_ID },
    { outdir: options.outdir },
  );
  const code = options.code ?? (await bundledCode(FUNCTION_NAMES));
  const stack = defineControlPlane(app, config, code);
  await finishOffline(app);
  const assembly = app.synth();
  return { config, stack, assembly, template: assembly.getStackByName(stack.stackName).template };
}

/**
 * What `sst` would have set up from sst.config.ts. SST's constructs read it for the generated
 * types directory, the synthesizer settings (none: the default CDK bootstrap) and the SSM prefix.
 */
function provideOfflineProject(root: string, stage: string, region: string): void {
  const out = join(root, '.sst');
  mkdirSync(out, { recursive: true });
  setProject({
    version: 'offline',
    cdkVersion: 'offline',
    constructsVersion: 'offline',
    config: { name: APP_NAME, stage, region, ssmPrefix: `/sst/${APP_NAME}/${stage}/` },
    stacks: () => {},
    metafile: { inputs: {}, outputs: {} },
    paths: { root, config: join(root, 'sst.config.ts'), out, artifacts: join(out, 'artifacts') },
  });
}

/**
 * `App.finish()` tags the stacks, adds SST's metadata output and checks that stack names carry the
 * stage. It also asks the SST bootstrap stack (an AWS call) for a bucket to upload sourcemaps of
 * SST functions, unless SST believes it runs under test; this app has no SST functions and so no
 * sourcemaps, and `NODE_ENV=test` is SST's own switch for skipping that lookup.
 */
async function finishOffline(app: App): Promise<void> {
  const previous = process.env.NODE_ENV;
  process.env.NODE_ENV = 'test';
  try {
    await app.finish();
  } finally {
    if (previous === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = previous;
  }
}

interface LambdaResource {
  Type: string;
  Properties: { FunctionName: string; Code: { S3Key?: string } };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      stage: { type: 'string' },
      'env-file': { type: 'string', multiple: true },
      out: { type: 'string', default: 'cdk.out' },
      'stub-code': { type: 'boolean', default: false },
    },
  });
  const root = process.cwd();
  const stage = values.stage ?? 'example';
  const envFiles = values['env-file'] ?? (values.stage ? [] : ['stacks/example.env']);
  if (!values.stage) console.log('No --stage given: synthesizing the example stage configured by stacks/example.env.');
  const env = stageEnvironment(root, stage);
  for (const file of envFiles) Object.assign(env, parseEnv(readFileSync(file, 'utf8')));

  const outdir = resolve(values.out);
  rmSync(outdir, { recursive: true, force: true });
  const started = performance.now();
  const result = await synthesizeOffline({
    stage,
    env,
    outdir,
    root,
    ...(values['stub-code'] ? { code: stubCode(join(root, '.sst', 'stub-functions')) } : {}),
  });
  const artifact = result.assembly.getStackByName(result.stack.stackName);
  const resources = Object.values((result.template.Resources ?? {}) as Record<string, { Type: string }>);
  const counts = new Map<string, number>();
  for (const r of resources) counts.set(r.Type, (counts.get(r.Type) ?? 0) + 1);
  console.log(
    `${result.stack.stackName}: ${resources.length} resources in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  for (const [type, n] of [...counts].sort()) console.log(`  ${String(n).padStart(3)}  ${type}`);
  console.log(`template: ${relative(root, join(outdir, artifact.templateFile))}`);
  for (const [, r] of Object.entries(result.template.Resources as Record<string, LambdaResource>)) {
    if (r.Type !== 'AWS::Lambda::Function') continue;
    const dir = join(outdir, `asset.${r.Properties.Code.S3Key?.replace(/\.zip$/, '')}`);
    const kib = (statSync(join(dir, 'index.mjs')).size / 1024).toFixed(0);
    console.log(
      `code:     ${r.Properties.FunctionName.padEnd(40)} ${kib.padStart(6)} KiB  ${relative(root, dir)}/index.mjs`,
    );
  }

  const violations = policyViolations(result.template, result.config.clusterName);
  if (violations.length > 0) {
    console.error(`least-privilege checks failed:\n  - ${violations.join('\n  - ')}`);
    process.exitCode = 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
