/**
 * Run by the target architecture's Node.js during `npm run build:credential-provider` (bundled to CommonJS
 * first), with an empty environment. Compiles one of the executable's scripts exactly as the executable will
 * (functions/credential-provider/sea-assets.ts), runs it, and writes V8's code cache for it: a code cache taken
 * after running holds the bytecode of every function that ran, so the executable does not compile them again.
 *
 *   node code-cache.cjs main <main.cjs> <main.cache> <stand-in AWS URL>
 *   node code-cache.cjs sdk <aws-ports.cjs> <aws-ports.cache> <stand-in AWS URL>
 *
 * Both warm up against the build's stand-in AWS (fake-aws-server.ts). The plugin answers the requests of
 * `warmUpExchanges`, one after the other in this process: an ECR pull with keys in the environment, one with the
 * instance role from IMDS, a service-account pull (STS, then ECR) and an ECR Public pull; each gets its own
 * environment, stdin and stdout. The SDK adapter makes its three calls (ECR, STS, ECR Public) with keys in the
 * environment. Every call must succeed, which also proves the scripts run on the target; nothing of the build
 * machine reaches them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { Script } from 'node:vm';
import { request } from '../functions/credential-provider/in-memory.ts';
import {
  evaluateCommonJs,
  MAIN_ASSET,
  SDK_ASSET,
  type SdkModule,
  wrapCommonJs,
} from '../functions/credential-provider/sea-assets.ts';

const PRIVATE_IMAGE = '111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/api:1';

/** The warm-up requests and the environment each runs in; `url` is the stand-in for every AWS endpoint. */
function warmUpExchanges(url: string): { name: string; env: Record<string, string>; stdin: string }[] {
  const endpoints = {
    HOME: '/nonexistent',
    AWS_ENDPOINT_URL_ECR: url,
    AWS_ENDPOINT_URL_ECR_PUBLIC: url,
    AWS_ENDPOINT_URL_STS: url,
  };
  const keys = {
    ...endpoints,
    AWS_ACCESS_KEY_ID: 'AKIDWARMUP',
    AWS_SECRET_ACCESS_KEY: 'warm-up',
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  return [
    { name: 'keys in the environment', env: keys, stdin: request(PRIVATE_IMAGE) },
    {
      name: 'the instance role (IMDS)',
      env: { ...endpoints, AWS_EC2_METADATA_SERVICE_ENDPOINT: url },
      stdin: request(PRIVATE_IMAGE),
    },
    {
      name: 'a service-account pull',
      env: keys,
      stdin: request(PRIVATE_IMAGE, undefined, {
        serviceAccountToken: 'warm-up-token',
        serviceAccountAnnotations: { 'eks.amazonaws.com/ecr-role-arn': 'arn:aws:iam::111122223333:role/pull' },
      }),
    },
    { name: 'an ECR Public pull', env: keys, stdin: request('public.ecr.aws/team/app:1') },
  ];
}

/** This process's environment replaced by `env` alone. */
function useEnvironment(env: Record<string, string>): void {
  for (const key of Object.keys(process.env)) delete process.env[key];
  Object.assign(process.env, env);
}

/** One run of the plugin's script as the executable runs it, with this exchange's environment, stdin and stdout. */
async function answer(script: Script, exchange: ReturnType<typeof warmUpExchanges>[number]): Promise<void> {
  const stdout = new PassThrough();
  let written = '';
  stdout.on('data', (chunk: Buffer) => {
    written += chunk.toString();
  });
  const exit = process.exit;
  const streams = { stdin: Readable.from([Buffer.from(exchange.stdin)]), stdout };
  useEnvironment(exchange.env);
  process.argv.splice(2);
  for (const [name, stream] of Object.entries(streams)) {
    Object.defineProperty(process, name, { configurable: true, get: () => stream });
  }
  try {
    const code = await new Promise<number | undefined>((resolve) => {
      process.exit = ((code?: number) => resolve(code)) as typeof process.exit;
      evaluateCommonJs(script);
    });
    if (code !== 0 || !written.includes('"CredentialProviderResponse"')) {
      throw new Error(`warm-up run "${exchange.name}" exited ${code} with ${JSON.stringify(written)}`);
    }
  } finally {
    process.exit = exit;
  }
}

/**
 * The SDK adapter's three calls through the clients. A code cache taken after them holds the clients' middleware,
 * serializers and endpoint rules, which a run compiles otherwise (30 million instructions, 13 ms here).
 */
async function callThroughSdk(sdk: SdkModule, url: string): Promise<void> {
  useEnvironment(warmUpExchanges(url)[0]!.env);
  const ports = sdk.createAwsPorts({ userAgent: 'ecr-credential-provider/warm-up' });
  const endpoint = { region: 'eu-west-1', dnsSuffix: 'amazonaws.com', fips: false, dualStack: false };
  const answers = [
    await ports.ecr.getAuthorizationToken(endpoint),
    await ports.sts.assumeRoleWithWebIdentity({
      ...endpoint,
      roleArn: 'arn:aws:iam::111122223333:role/pull',
      webIdentityToken: 'warm-up-token',
      roleSessionName: 'warm-up',
    }),
    await ports.ecrPublic.getAuthorizationToken(),
  ];
  if (answers.some((answer) => !answer)) throw new Error('a warm-up call through the SDK clients returned nothing');
}

async function main(): Promise<void> {
  const [kind, source, output, url] = process.argv.slice(2);
  if (!source || !output || !url || (kind !== 'sdk' && kind !== 'main')) {
    throw new Error('usage: code-cache.cjs main|sdk <script> <cache> <stand-in URL>');
  }
  const script = new Script(wrapCommonJs(readFileSync(source, 'utf8')), {
    filename: kind === 'sdk' ? SDK_ASSET : MAIN_ASSET,
  });
  if (kind === 'sdk') {
    const sdk = evaluateCommonJs<SdkModule>(script);
    if (typeof sdk.createAwsPorts !== 'function') throw new Error(`${source} does not export createAwsPorts`);
    await callThroughSdk(sdk, url);
  } else {
    for (const exchange of warmUpExchanges(url)) await answer(script, exchange);
  }
  writeFileSync(output, script.createCachedData());
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
