import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_NAME, FUNCTION_NAMES } from '../../stacks/config.ts';
import { differenceRow, hasTest } from '../contract/difference-rows.ts';
import {
  EMULATOR_AVAILABLE,
  EMULATOR_CREDENTIALS,
  EMULATOR_REGION,
  EMULATOR_SKIPPED_MESSAGE,
  type Emulator,
  startEmulator,
} from '../helpers/emulator.ts';
import { type Answer, type EmulatorAws, emulatorAws } from './emulator-aws.ts';
import {
  type Difference,
  describeDifference,
  differences,
  ESM_TAGS_LIST,
  READERS,
  type ReadBack,
  ROLE_POLICY_REPR,
  readBack,
  type StackInfo,
  type Template,
} from './read-back.ts';
import { copyProject, customResourceResponder, runSst, type SstRun } from './sst-run.ts';
import { unzip } from './zip.ts';

/**
 * `sst deploy`, as the README has a user install the control plane, run against the AWS API emulator (moto
 * server) standing in for a fresh account: SST's bootstrap (the CDK's `CDKToolkit` stack with the pinned CDK
 * CLI, npm forbidden to fetch anything, then SST's own `SSTBootstrap`), the bundling of every function, the
 * publishing of the assets and the CloudFormation deploy, for the example stage (stacks/example.env) and a
 * full stage (route, service with the reference's Services, interruption, IPAM, Ingress and TargetGroupBinding
 * controllers on). Every resource is then read back through
 * the services' ordinary describe and list calls and compared with what the template asked for; the example
 * stage is deployed again with one setting changed and the change read back; `sst remove` must leave nothing
 * of either stage behind.
 *
 * Where the emulator cannot do what AWS does, the test says so: each such gap is a row of
 * docs/emulator-differences.md (key below), met and checked here, and worked around in the test's own set-up,
 * never in the stack. A gap the emulator no longer has fails the test, so that its row and workaround go.
 */

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const SUITE = 'sst deploy onto the AWS API emulator (moto server)';

/** Keys of the rows of docs/emulator-differences.md this suite meets, and the test that meets each. */
const GAPS = {
  changeSetOutputs: 'cfn.change-set-outputs',
  customResource: 'cfn.lambda-custom-resource',
  alarm: 'cfn.alarm-not-created',
  queuePolicy: 'cfn.queue-policy-not-created',
  accessEntry: 'cfn.access-entry-not-created',
  podIdentity: 'cfn.pod-identity-association-not-created',
  architectures: 'cfn.lambda-architectures',
  loggingConfig: 'cfn.lambda-logging-config',
  functionTags: 'cfn.lambda-function-tags',
  logGroupArn: 'cfn.log-group-arn-attribute',
  rolePolicyText: ROLE_POLICY_REPR,
  esmTagsList: ESM_TAGS_LIST,
} as const;

const TESTS = {
  firstDeploy: 'first deploy of the example stage: bootstrap, bundling, assets, stack',
  readExample: 'reads back every resource of the example stage as its template asked',
  fullDeploy: 'deploys a full stage (route, service, interruption, IPAM, Ingress and TargetGroupBinding controllers)',
  readFull: 'reads back every resource of the full stage as its template asked',
  redeploy: 'deploys the example stage again with one setting changed, and reads the change back',
  removeFull: 'sst remove deletes the full stage and leaves nothing of it',
  removeExample: 'sst remove deletes the example stage and leaves only the bootstrap stacks',
} as const;

/** Which test meets each gap (the row's last column names it). */
const GAP_TESTS: Record<string, string[]> = {
  [GAPS.changeSetOutputs]: [TESTS.firstDeploy],
  [GAPS.customResource]: [TESTS.firstDeploy],
  [GAPS.alarm]: [TESTS.readExample, TESTS.readFull],
  [GAPS.queuePolicy]: [TESTS.readExample, TESTS.readFull],
  [GAPS.accessEntry]: [TESTS.readExample, TESTS.readFull],
  [GAPS.podIdentity]: [TESTS.readExample, TESTS.readFull],
  [GAPS.architectures]: [TESTS.readExample, TESTS.readFull],
  [GAPS.loggingConfig]: [TESTS.readExample, TESTS.readFull],
  [GAPS.functionTags]: [TESTS.readExample, TESTS.readFull],
  [GAPS.logGroupArn]: [TESTS.readExample, TESTS.readFull],
  [GAPS.rolePolicyText]: [TESTS.readExample, TESTS.readFull],
  [GAPS.esmTagsList]: [TESTS.readExample, TESTS.readFull],
};

/** Resource types the emulator's CloudFormation reports complete without creating anything. */
const NOT_CREATED: Record<string, string> = {
  'AWS::CloudWatch::Alarm': GAPS.alarm,
  'AWS::SQS::QueuePolicy': GAPS.queuePolicy,
  'AWS::EKS::AccessEntry': GAPS.accessEntry,
  'AWS::EKS::PodIdentityAssociation': GAPS.podIdentity,
};

/** Properties the emulator's CloudFormation leaves out or sets otherwise; each explains one kind of difference. */
const PROPERTY_GAPS: { key: string; types: string[]; explains(d: Difference): boolean }[] = [
  {
    key: GAPS.architectures,
    types: ['AWS::Lambda::Function'],
    explains: (d) => /\.Architectures\[0\]$/.test(d.path) && d.actual === 'x86_64',
  },
  {
    key: GAPS.loggingConfig,
    types: ['AWS::Lambda::Function'],
    explains: (d) => /\.LoggingConfig$/.test(d.path) && d.actual === undefined,
  },
  {
    key: GAPS.functionTags,
    types: ['AWS::Lambda::Function'],
    explains: (d) => /\.Tags\[[^\]]+\]$/.test(d.path) && d.actual === undefined,
  },
  {
    // Fn::GetAtt of a log group's Arn ends in `:*` on AWS; the emulator's drops it, so the policies built with it do.
    key: GAPS.logGroupArn,
    types: ['AWS::IAM::Role'],
    explains: (d) =>
      typeof d.expected === 'string' && /:log-group:.*:\*$/.test(d.expected) && d.expected === `${d.actual}:*`,
  },
];

/** The example stage is stacks/example.env; the full one adds the settings that deploy every controller. */
const EXAMPLE_STAGE = parseEnv(readFileSync(join(root, 'stacks', 'example.env'), 'utf8')) as Record<string, string>;
const FULL_STAGE: Record<string, string> = {
  ...EXAMPLE_STAGE,
  CCM_CLUSTER_NAME: 'full',
  CCM_CLUSTER_CIDRS: '10.244.0.0/16',
  CCM_VPC_ID: 'vpc-0123456789abcdef0',
  CCM_INTERRUPTION: 'true',
  CCM_IPAM: 'true',
  CCM_INGRESS: 'true',
  CCM_INGRESS_WAF: 'true',
  CCM_TARGET_GROUP_BINDING: 'true',
  CCM_LBC_SERVICES: 'true',
};
/** The setting the redeploy changes: the node controller's function timeout (and with it its queue's visibility). */
const CHANGED_SETTING = 'CCM_NODE_TIMEOUT_SECONDS';

const stackNameOf = (stage: string) => `${stage}-${APP_NAME}-control-plane`;

describe('docs/emulator-differences.md rows of the deploy suite', () => {
  const source = readFileSync(fileURLToPath(import.meta.url), 'utf8');
  it.each(Object.entries(GAP_TESTS))('row %s names this file and tests of it that exist', (key, tests) => {
    const row = differenceRow(key);
    expect(row, `docs/emulator-differences.md has no row \`${key}\``).toBeDefined();
    expect(row!.file).toBe('sst-deploy.emulator.test.ts');
    expect(row!.tests.sort()).toEqual([...tests].sort());
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});

describe.skipIf(!EMULATOR_AVAILABLE)(SUITE, () => {
  let emulator: Emulator;
  let aws: EmulatorAws;
  let work: string;
  let project: string;
  let home: string;
  let account: string;
  const timings: { step: string; seconds: number }[] = [];
  const gapsMet = new Set<string>();
  /** The last read of each stage, for the removal check. */
  const lastRead = new Map<string, { stack: StackInfo; template: Template; read: ReadBack }>();
  let runs = 0;
  /** The cloud assembly of each stage's last deploy. */
  const keptAssemblies = new Map<string, string>();

  const sst = async (stage: string, command: 'deploy' | 'remove', settings: Record<string, string>) => {
    const env: Record<string, string> = {
      // The project's Node.js and bins first, as npm scripts have them: SST runs `npx cdk`.
      PATH: [join(project, 'node_modules', '.bin'), dirname(process.execPath), process.env.PATH ?? ''].join(':'),
      HOME: home,
      TMPDIR: join(work, 'tmp'),
      LANG: 'C.UTF-8',
      CI: 'true',
      NO_COLOR: '1',
      AWS_ACCESS_KEY_ID: EMULATOR_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: EMULATOR_CREDENTIALS.secretAccessKey,
      AWS_REGION: EMULATOR_REGION,
      // Every AWS SDK client SST, the CDK toolkit and the CDK CLI make goes to the emulator.
      AWS_ENDPOINT_URL: emulator.endpoint,
      SST_TELEMETRY_DISABLED: '1',
      CDK_DISABLE_VERSION_CHECK: 'true',
      CDK_DISABLE_CLI_TELEMETRY: 'true',
      // `npx cdk bootstrap` must find everything installed: npm may not fetch.
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
      ...settings,
    };
    runs++;
    return runSst(
      project,
      [command, '--stage', stage, '--verbose'],
      env,
      join(work, `sst-${runs}-${command}-${stage}.log`),
      240_000,
    );
  };

  /** SST's debug log is long: what a failure needs is its end. */
  const tail = (run: SstRun) => run.output.split('\n').slice(-40).join('\n');

  /** The template and assets SST deployed for `stage`, kept before the next run overwrites `.sst/dist`. */
  const keepAssembly = (stage: string) => {
    const into = join(work, `assembly-${runs}-${stage}`);
    cpSync(join(project, '.sst', 'dist'), into, { recursive: true });
    return into;
  };

  const stackInfo = async (stage: string): Promise<StackInfo> => {
    const stackName = stackNameOf(stage);
    const stack = (await aws.cloudFormation.call('DescribeStacks', { StackName: stackName })).Stacks[0];
    const physicalIds = new Map<string, string>();
    let token: string | undefined;
    do {
      const page = await aws.cloudFormation.call('ListStackResources', { StackName: stackName, NextToken: token });
      for (const r of page.StackResourceSummaries ?? []) {
        if (r.LogicalResourceId) physicalIds.set(r.LogicalResourceId, r.PhysicalResourceId);
      }
      token = page.NextToken;
    } while (token);
    return {
      stackName,
      stackId: stack.StackId,
      region: EMULATOR_REGION,
      account,
      parameters: Object.fromEntries((stack.Parameters ?? []).map((p: Answer) => [p.ParameterKey, p.ParameterValue])),
      physicalIds,
      status: stack.StackStatus,
    };
  };

  /**
   * Reads `stage` back and compares it with the template SST deployed (from the kept cloud assembly): every
   * resource, its properties, and each function's code against the bundle SST built.
   */
  const readAndCompare = async (stage: string, assembly: string) => {
    const stackName = stackNameOf(stage);
    const template: Template = JSON.parse(readFileSync(join(assembly, `${stackName}.template.json`), 'utf8'));
    const stack = await stackInfo(stage);
    expect(['CREATE_COMPLETE', 'UPDATE_COMPLETE']).toContain(stack.status);
    // The emulator holds the very template SST synthesized.
    const held = (await aws.cloudFormation.call('GetTemplate', { StackName: stackName })).TemplateBody;
    expect(JSON.parse(held)).toEqual(template);

    const read = await readBack(aws, template, stack);
    lastRead.set(stage, { stack, template, read });
    const problems: string[] = [];
    for (const [id, message] of read.unresolved) problems.push(`${id}: ${message}`);
    for (const [id, resource] of Object.entries(template.Resources)) {
      const observed = read.observed.get(id);
      const gap = NOT_CREATED[resource.Type];
      for (const quirk of observed?.quirks ?? []) gapsMet.add(quirk);
      if (gap) {
        // The emulator's CloudFormation says it created these; it has nothing for them.
        if (observed)
          problems.push(`${id} (${resource.Type}): the emulator creates it now; compare it and drop ${gap}`);
        else gapsMet.add(gap);
        continue;
      }
      if (!observed) {
        problems.push(`${id} (${resource.Type}): not on the emulator`);
        continue;
      }
      const { Code: _code, ...asked } = read.expected.get(id) ?? {};
      for (const d of differences(asked, observed.props, id)) {
        const explained = PROPERTY_GAPS.find((g) => g.types.includes(resource.Type) && g.explains(d));
        if (explained) gapsMet.add(explained.key);
        else problems.push(`${resource.Type} ${describeDifference(d)}`);
      }
    }
    problems.push(...(await codeProblems(stage, assembly, template, read)));
    expect(problems).toEqual([]);
    return { stack, template, read };
  };

  /**
   * Each function runs the code SST bundled: the zip the assets step uploaded is what the function reports
   * (CodeSha256), and it holds exactly the files of the function's bundle in `dist/functions/<name>/`.
   */
  const codeProblems = async (stage: string, assembly: string, template: Template, read: ReadBack) => {
    const problems: string[] = [];
    const assets = JSON.parse(readFileSync(join(assembly, `${stackNameOf(stage)}.assets.json`), 'utf8'));
    const functions = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(0);
    for (const [id] of functions) {
      const props = read.expected.get(id) as Answer;
      const name = String(props.FunctionName).replace(`${stage}-${APP_NAME}-`, '');
      if (!(FUNCTION_NAMES as readonly string[]).includes(name)) {
        problems.push(`${id}: ${props.FunctionName} is no function of the project`);
        continue;
      }
      const object = await aws.s3.call('GetObject', { Bucket: props.Code.S3Bucket, Key: props.Code.S3Key });
      const zip = Buffer.from(await object.Body.transformToByteArray());
      const sha = createHash('sha256').update(zip).digest('base64');
      const running = (read.observed.get(id)?.props.Code as { CodeSha256?: string } | undefined)?.CodeSha256;
      if (sha !== running) problems.push(`${id}: runs ${running}, the published zip is ${sha}`);
      const asset = Object.values<Answer>(assets.files).find((f) =>
        Object.values<Answer>(f.destinations).some((d) => d.objectKey === props.Code.S3Key),
      );
      const bundle = filesOf(join(project, 'dist', 'functions', name));
      bundle.delete('meta.json'); // the build's metafile, which the stack leaves out of the package
      const packaged = unzip(zip);
      if (!asset) problems.push(`${id}: no asset of the assembly is ${props.Code.S3Key}`);
      if ([...packaged.keys()].sort().join() !== [...bundle.keys()].sort().join()) {
        problems.push(`${id}: the zip holds ${[...packaged.keys()].sort()}, the bundle ${[...bundle.keys()].sort()}`);
      }
      for (const [file, bytes] of bundle) {
        if (packaged.has(file) && !packaged.get(file)!.equals(bytes))
          problems.push(`${id}: ${file} is not the bundle's`);
      }
    }
    return problems;
  };

  /** The keys SST's bootstrap bucket holds for this app. */
  const sstMetadata = async () => {
    const outputs: Answer[] =
      (await aws.cloudFormation.call('DescribeStacks', { StackName: 'SSTBootstrap' })).Stacks[0].Outputs ?? [];
    const bucket = outputs.find((o) => o.OutputKey === 'BucketName')?.OutputValue;
    const listed = await aws.s3.call('ListObjectsV2', { Bucket: bucket });
    return ((listed.Contents ?? []) as Answer[])
      .map((o) => String(o.Key))
      .filter((k) => k.includes(`app.${APP_NAME}/`));
  };

  /** Every resource read at the stage's last read is gone: its describe call finds nothing. */
  const leftOf = async (stage: string) => {
    const last = lastRead.get(stage)!;
    const left: string[] = [];
    for (const [id, resource] of Object.entries(last.template.Resources)) {
      if (!last.read.observed.has(id)) continue;
      const still = await READERS[resource.Type]!(
        aws,
        last.stack.physicalIds.get(id),
        () => last.read.expected.get(id)!,
      );
      if (still) left.push(`${id} (${resource.Type} ${last.stack.physicalIds.get(id) ?? ''})`);
    }
    return left;
  };

  beforeAll(async () => {
    emulator = await startEmulator();
    aws = await emulatorAws({
      endpoint: emulator.endpoint,
      region: EMULATOR_REGION,
      credentials: EMULATOR_CREDENTIALS,
    });
    account = (await aws.sts.call('GetCallerIdentity', {})).Account;
    work = mkdtempSync(join(tmpdir(), 'sst-deploy-'));
    project = join(work, 'project');
    home = join(work, 'home');
    mkdirSync(join(work, 'tmp'));
    mkdirSync(home);
    copyProject(root, project);
  }, 60_000); // starting the emulator and copying the project, on a busy machine

  afterAll(async () => {
    aws?.destroy();
    await emulator?.stop();
    if (timings.length > 0) {
      console.log(
        `sst on the AWS API emulator:\n${timings.map((t) => `  ${t.step.padEnd(52)} ${t.seconds.toFixed(1)} s`).join('\n')}`,
      );
    }
    if (work) rmSync(work, { recursive: true, force: true });
  }, 30_000);

  it(TESTS.firstDeploy, async () => {
    // SST runs `npx cdk bootstrap` (the pinned CLI, offline). The CLI creates CDKToolkit through a change set,
    // and the emulator gives a stack created that way no outputs, so SST cannot find the bootstrap bucket.
    const first = await sst('example', 'deploy', EXAMPLE_STAGE);
    timings.push({ step: 'sst deploy (example): CDK bootstrap, then stops', seconds: first.seconds });
    expect(first.output, tail(first)).toContain('CDK bootstrap exited with code 0');
    const toolkit = (await aws.cloudFormation.call('DescribeStacks', { StackName: 'CDKToolkit' })).Stacks[0];
    expect(toolkit.StackStatus).toBe('CREATE_COMPLETE');
    if (first.code === 0) {
      throw new Error(
        `the emulator keeps a change-set stack's outputs now: drop ${GAPS.changeSetOutputs} and its workaround`,
      );
    }
    expect(first.output, tail(first)).toContain('Failed to load bootstrap stack status');
    expect(toolkit.Outputs ?? []).toEqual([]);
    gapsMet.add(GAPS.changeSetOutputs);

    // Set-up workaround: the same template sent again directly (UpdateStack), which the emulator does give
    // outputs; a trailing newline makes it a change in the emulator's eyes (it compares the text).
    const started = Date.now();
    const body = (await aws.cloudFormation.call('GetTemplate', { StackName: 'CDKToolkit' })).TemplateBody;
    await aws.cloudFormation.call('UpdateStack', {
      StackName: 'CDKToolkit',
      TemplateBody: `${body}\n`,
      Capabilities: ['CAPABILITY_NAMED_IAM'],
    });
    const outputs: Answer[] =
      (await aws.cloudFormation.call('DescribeStacks', { StackName: 'CDKToolkit' })).Stacks[0].Outputs ?? [];
    const output = (key: string) => outputs.find((o) => o.OutputKey === key)?.OutputValue;
    expect(output('BucketName')).toBe(`cdk-hnb659fds-assets-${account}-${EMULATOR_REGION}`);
    expect(Number(output('BootstrapVersion'))).toBeGreaterThanOrEqual(14); // what SST requires
    timings.push({ step: 'test set-up: CDKToolkit outputs', seconds: (Date.now() - started) / 1000 });

    // Deploy again: SST deploys SSTBootstrap, whose bucket's auto-delete is a Lambda-backed custom resource the
    // emulator cannot run; the responder answers for its function. Then the stage itself.
    const responder = customResourceResponder(aws, emulator.endpoint);
    const second = await sst('example', 'deploy', EXAMPLE_STAGE).finally(() => responder.stop());
    timings.push({ step: 'sst deploy (example): SSTBootstrap, bundling, assets, stack', seconds: second.seconds });
    expect(second.code, tail(second)).toBe(0);
    expect(responder.answered).toEqual([
      {
        stack: 'SSTBootstrap',
        logicalId: expect.stringMatching(/AutoDeleteObjectsCustomResource/),
        type: 'Custom::S3AutoDeleteObjects',
      },
    ]);
    gapsMet.add(GAPS.customResource);
    expect(second.output).toContain('Deployed:');
    // SST keeps what it knows of a stage in its bootstrap bucket (removed again by sst remove, below).
    expect(await sstMetadata()).toEqual([`appMetadata/app.${APP_NAME}/stage.example.json`]);
    keptAssemblies.set('example', keepAssembly('example'));
  }, 600_000);

  it(TESTS.readExample, async () => {
    await readAndCompare('example', keptAssemblies.get('example')!);
  }, 120_000);

  it(TESTS.fullDeploy, async () => {
    const run = await sst('full', 'deploy', FULL_STAGE);
    timings.push({ step: 'sst deploy (full)', seconds: run.seconds });
    expect(run.code, tail(run)).toBe(0);
    keptAssemblies.set('full', keepAssembly('full'));
    const template: Template = JSON.parse(
      readFileSync(join(keptAssemblies.get('full')!, `${stackNameOf('full')}.template.json`), 'utf8'),
    );
    // Every controller is in it: one function per reconciler the settings turn on.
    const functions = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::Lambda::Function')
      .map((r) => String(r.Properties?.FunctionName).replace(`full-${APP_NAME}-`, ''))
      .sort();
    expect(functions).toEqual([...FUNCTION_NAMES].sort());
  }, 300_000);

  it(TESTS.readFull, async () => {
    await readAndCompare('full', keptAssemblies.get('full')!);
  }, 120_000);

  it(TESTS.redeploy, async () => {
    const before = lastRead.get('example')!;
    const nodeFunction = [...before.read.expected].find(([, p]) => p.FunctionName === `example-${APP_NAME}-node`)?.[0];
    expect(nodeFunction).toBeDefined();
    const mapping = [...before.read.expected].find(
      ([, p]) => p.FunctionName === `example-${APP_NAME}-node` && p.EventSourceArn,
    )?.[1];
    const nodeQueue = [...before.read.observed].find(([, o]) => o.attrs.Arn === mapping?.EventSourceArn)?.[0];
    expect(nodeQueue).toBeDefined();
    const timeoutBefore = Number(before.read.observed.get(nodeFunction!)!.props.Timeout);
    const visibilityBefore = Number(before.read.observed.get(nodeQueue!)!.props.VisibilityTimeout);
    const changed = String(timeoutBefore + 30);

    const run = await sst('example', 'deploy', { ...EXAMPLE_STAGE, [CHANGED_SETTING]: changed });
    timings.push({ step: `sst deploy (example, ${CHANGED_SETTING}=${changed})`, seconds: run.seconds });
    expect(run.code, tail(run)).toBe(0);
    const assembly = keepAssembly('example');
    const after = await readAndCompare('example', assembly);
    // The setting reached the template, and the emulator holds the new values.
    expect(after.template.Resources[nodeFunction!]!.Properties!.Timeout).toBe(Number(changed));
    expect(after.read.observed.get(nodeFunction!)!.props.Timeout).toBe(Number(changed));
    const visibilityAfter = Number(after.read.observed.get(nodeQueue!)!.props.VisibilityTimeout);
    expect(visibilityAfter).not.toBe(visibilityBefore);
    expect(visibilityAfter).toBe(after.template.Resources[nodeQueue!]!.Properties!.VisibilityTimeout);
    // Nothing else was replaced: every physical ID is the one before.
    for (const [id, physical] of before.stack.physicalIds) expect(after.stack.physicalIds.get(id), id).toBe(physical);
  }, 300_000);

  it(TESTS.removeFull, async () => {
    const run = await sst('full', 'remove', FULL_STAGE);
    timings.push({ step: 'sst remove (full)', seconds: run.seconds });
    expect(run.code, tail(run)).toBe(0);
    expect(await leftOf('full')).toEqual([]);
    const error = await aws.cloudFormation.call('DescribeStacks', { StackName: stackNameOf('full') }).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(error).toMatch(/does not exist/);
  }, 300_000);

  it(TESTS.removeExample, async () => {
    const run = await sst('example', 'remove', EXAMPLE_STAGE);
    timings.push({ step: 'sst remove (example)', seconds: run.seconds });
    expect(run.code, tail(run)).toBe(0);
    expect(await leftOf('example')).toEqual([]);
    // What stays for the next app or stage: the two bootstrap stacks, and the assets in the CDK's bucket.
    const stacks: Answer[] = (await aws.cloudFormation.call('DescribeStacks', {})).Stacks ?? [];
    expect(stacks.map((s) => s.StackName).sort()).toEqual(['CDKToolkit', 'SSTBootstrap']);
    const assets = await aws.s3.call('ListObjectsV2', { Bucket: `cdk-hnb659fds-assets-${account}-${EMULATOR_REGION}` });
    expect(assets.KeyCount).toBeGreaterThan(0);
    console.log(`left in the CDK assets bucket: ${assets.KeyCount} objects (function zips and templates)`);
    expect(await sstMetadata()).toEqual([]);
    // Every gap this suite declares was met, or its row is stale.
    expect([...gapsMet].sort()).toEqual(Object.values(GAPS).sort());
  }, 300_000);
});

if (!EMULATOR_AVAILABLE) console.warn(`${SUITE}: ${EMULATOR_SKIPPED_MESSAGE}`);

/** The files under `dir`, by path relative to it. */
function filesOf(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path));
    }
  };
  walk(dir);
  return files;
}
