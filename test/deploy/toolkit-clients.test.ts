import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `sst deploy` hands the stack to the CDK toolkit library SST depends on (`@aws-cdk/toolkit-lib`), whose SDK
 * class builds every AWS client with a `ConfiguredRetryStrategy` of its own `@smithy/util-retry` and the
 * client packages it resolves from its own folder (most of them SST's pinned 3.699.0 clients, hoisted). If
 * the retry package and a client's retry middleware are of generations that do not agree, every call fails
 * before a request is made, so `sst deploy` dies on its first AWS call whatever the account or endpoint.
 *
 * These tests build those clients the way the toolkit does, resolving every package from the folder the
 * toolkit resolves it from, and send one command each to a stub request handler: nothing leaves the process.
 * A second group goes through the toolkit's own SDK class, so a toolkit that builds its clients differently
 * is exercised as it is.
 *
 * package.json's `overrides` give the toolkit `@smithy/util-retry` 3.0.11, the version SST's 3.699.0 clients
 * carry with their retry middleware (the toolkit's own range would take a 4.x whose strategy reads the
 * retry token scope those clients leave undefined). The newer clients the toolkit also uses (S3, STS) are
 * checked with it here too.
 */

const here = createRequire(import.meta.url);
/** Resolves as SST's own modules do (SST imports the toolkit by name). */
const fromSst = createRequire(here.resolve('sst/package.json'));
const toolkitEntry = fromSst.resolve('@aws-cdk/toolkit-lib');
/** Resolves as the toolkit's modules do (`require('@smithy/util-retry')` in its SDK class). */
const fromToolkit = createRequire(toolkitEntry);

/** The version of the package `name` as `req` resolves it, read from the package.json above its entry. */
function versionOf(req: NodeRequire, name: string): string {
  let dir = dirname(req.resolve(name));
  while (dir !== dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name) return pkg.version ?? '?';
    }
    dir = dirname(dir);
  }
  throw new Error(`no package.json of ${name} above ${req.resolve(name)}`);
}

interface HttpRequestSeen {
  hostname: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}
interface StubAnswer {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A request handler in place of the SDK's HTTP one: records every request and answers each with `answer`,
 * as the service would. The SDK calls `handle` only once its middleware (retry included) has run.
 */
function stubHandler(answer: StubAnswer) {
  const seen: HttpRequestSeen[] = [];
  return {
    seen,
    handler: {
      metadata: { handlerProtocol: 'http/1.1' },
      async handle(request: HttpRequestSeen) {
        seen.push({ hostname: request.hostname, path: request.path, headers: request.headers, body: request.body });
        return {
          response: { statusCode: answer.statusCode, headers: answer.headers, body: Buffer.from(answer.body) },
        };
      },
      updateHttpClientConfig() {},
      httpHandlerConfigs: () => ({}),
    },
  };
}

type Client = { send(command: unknown): Promise<Record<string, unknown>>; destroy(): void };
type ClientClass = new (config: Record<string, unknown>) => Client;
type CommandClass = new (input: Record<string, unknown>) => unknown;
type RetryStrategyClass = new (maxAttempts: number, delay: (attempt: number) => number) => unknown;

const { ConfiguredRetryStrategy } = fromToolkit('@smithy/util-retry') as {
  ConfiguredRetryStrategy: RetryStrategyClass;
};

const CREDENTIALS = { accessKeyId: 'AKIDSTUB', secretAccessKey: 'stub-secret' };
const REGION = 'eu-west-1';
const ACCOUNT = '123456789012';
const XML = { 'content-type': 'text/xml' };
/** An error answer of the query protocol (CloudFormation, STS). */
const queryError = (code: string) =>
  `<ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>try again</Message></Error><RequestId>e1</RequestId></ErrorResponse>`;

/** One call per client the deploy path uses, with the service's answer and what the SDK must read from it. */
const CALLS = [
  {
    service: 'CloudFormation',
    pkg: '@aws-sdk/client-cloudformation',
    client: 'CloudFormationClient',
    command: 'DescribeStacksCommand',
    input: { StackName: 'CDKToolkit' },
    // The toolkit gives CloudFormation its own strategy: 11 attempts, 1 s doubling.
    retry: () => new ConfiguredRetryStrategy(11, (attempt) => 1000 * 2 ** attempt),
    answer: {
      statusCode: 200,
      headers: XML,
      body:
        '<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult>' +
        '<Stacks><member><StackName>CDKToolkit</StackName><StackStatus>CREATE_COMPLETE</StackStatus>' +
        '<CreationTime>2025-01-01T00:00:00Z</CreationTime><Outputs><member><OutputKey>BootstrapVersion</OutputKey>' +
        '<OutputValue>29</OutputValue></member></Outputs></member></Stacks></DescribeStacksResult>' +
        '<ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></DescribeStacksResponse>',
    },
    failure: { statusCode: 400, headers: XML, body: queryError('Throttling') },
    read: (out: Record<string, unknown>) => {
      const stack = (out.Stacks as { StackStatus: string; Outputs: { OutputValue: string }[] }[])[0];
      return [stack?.StackStatus, stack?.Outputs[0]?.OutputValue];
    },
    expected: ['CREATE_COMPLETE', '29'],
  },
  {
    service: 'SSM',
    pkg: '@aws-sdk/client-ssm',
    client: 'SSMClient',
    command: 'GetParameterCommand',
    input: { Name: '/cdk-bootstrap/hnb659fds/version' },
    // Every client but CloudFormation and STS gets the SDK class's default: 7 attempts, 300 ms doubling.
    retry: () => new ConfiguredRetryStrategy(7, (attempt) => 300 * 2 ** attempt),
    answer: {
      statusCode: 200,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({
        Parameter: { Name: '/cdk-bootstrap/hnb659fds/version', Type: 'String', Value: '29', Version: 1 },
      }),
    },
    failure: {
      statusCode: 500,
      headers: { 'content-type': 'application/x-amz-json-1.1' },
      body: JSON.stringify({ __type: 'InternalServerError', message: 'try again' }),
    },
    read: (out: Record<string, unknown>) => [(out.Parameter as { Value: string }).Value],
    expected: ['29'],
  },
  {
    service: 'S3',
    pkg: '@aws-sdk/client-s3',
    client: 'S3Client',
    command: 'GetBucketLocationCommand',
    input: { Bucket: `cdk-hnb659fds-assets-${ACCOUNT}-${REGION}` },
    retry: () => new ConfiguredRetryStrategy(7, (attempt) => 300 * 2 ** attempt),
    answer: {
      statusCode: 200,
      headers: { 'content-type': 'application/xml' },
      body: `<?xml version="1.0" encoding="UTF-8"?><LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${REGION}</LocationConstraint>`,
    },
    failure: {
      statusCode: 503,
      headers: { 'content-type': 'application/xml' },
      body: '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>try again</Message></Error>',
    },
    read: (out: Record<string, unknown>) => [out.LocationConstraint],
    expected: [REGION],
  },
  {
    service: 'STS',
    pkg: '@aws-sdk/client-sts',
    client: 'STSClient',
    command: 'GetCallerIdentityCommand',
    input: {},
    // STS only checks the credentials: 3 attempts, 100 ms doubling.
    retry: () => new ConfiguredRetryStrategy(3, (attempt) => 100 * 2 ** attempt),
    answer: {
      statusCode: 200,
      headers: XML,
      body:
        '<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>' +
        `<Arn>arn:aws:iam::${ACCOUNT}:user/deployer</Arn><UserId>AIDASTUB</UserId><Account>${ACCOUNT}</Account>` +
        '</GetCallerIdentityResult><ResponseMetadata><RequestId>r2</RequestId></ResponseMetadata></GetCallerIdentityResponse>',
    },
    failure: { statusCode: 400, headers: XML, body: queryError('Throttling') },
    read: (out: Record<string, unknown>) => [out.Account],
    expected: [ACCOUNT],
  },
] as const;

const retryVersion = versionOf(fromToolkit, '@smithy/util-retry');

describe(`the CDK toolkit's AWS clients (@aws-cdk/toolkit-lib ${versionOf(fromSst, '@aws-cdk/toolkit-lib')}, its @smithy/util-retry ${retryVersion})`, () => {
  for (const call of CALLS) {
    const clientVersion = versionOf(fromToolkit, call.pkg);
    it(`${call.service} (${call.pkg} ${clientVersion}) sends one request and reads the answer`, async () => {
      const sdk = fromToolkit(call.pkg) as Record<string, ClientClass & CommandClass>;
      const Client = sdk[call.client] as ClientClass;
      const Command = sdk[call.command] as CommandClass;
      const stub = stubHandler(call.answer);
      const client = new Client({
        region: REGION,
        credentials: CREDENTIALS,
        requestHandler: stub.handler,
        retryStrategy: call.retry(),
      });
      try {
        const out = await client.send(new Command(call.input));
        expect(call.read(out)).toEqual(call.expected);
        // One attempt, no retry: the answer was a success.
        expect(stub.seen).toHaveLength(1);
      } finally {
        client.destroy();
      }
    });

    it(`${call.service} tries a retryable failure as often as the toolkit's strategy says`, async () => {
      const sdk = fromToolkit(call.pkg) as Record<string, ClientClass & CommandClass>;
      const Client = sdk[call.client] as ClientClass;
      const Command = sdk[call.command] as CommandClass;
      const stub = stubHandler(call.failure);
      // 4 attempts (the SDK's default is 3, so a strategy the client ignored would show) and 1 ms apart.
      const client = new Client({
        region: REGION,
        credentials: CREDENTIALS,
        requestHandler: stub.handler,
        retryStrategy: new ConfiguredRetryStrategy(4, () => 1),
      });
      try {
        const failure = await client.send(new Command(call.input)).then(
          () => undefined,
          (err: { $metadata?: { attempts?: number }; message?: string }) => err,
        );
        expect(failure?.$metadata?.attempts, failure?.message).toBe(4);
        expect(stub.seen).toHaveLength(4);
      } finally {
        client.destroy();
      }
    });
  }
});

/** The toolkit's SDK class, loaded from its file as SST loads the toolkit's deploy modules. */
interface ToolkitSdk {
  cloudFormation(): { describeStacks(input: Record<string, unknown>): Promise<Record<string, unknown>> };
  ssm(): { getParameter(input: Record<string, unknown>): Promise<Record<string, unknown>> };
  s3(): { getBucketLocation(input: Record<string, unknown>): Promise<Record<string, unknown>> };
  validateCredentials(): Promise<void>;
}
type ToolkitSdkClass = new (
  credentials: () => Promise<typeof CREDENTIALS>,
  region: string,
  requestHandler: unknown,
  ioHelper: unknown,
  logger: unknown,
) => ToolkitSdk;

describe("the CDK toolkit's own SDK class", () => {
  const lib = dirname(toolkitEntry);
  const { SDK } = fromToolkit(join(lib, 'api', 'aws-auth', 'sdk.js')) as { SDK: ToolkitSdkClass };
  const { IoHelper } = fromToolkit(join(lib, 'api', 'io', 'private', 'io-helper.js')) as {
    IoHelper: { fromActionAwareIoHost(host: unknown): unknown };
  };
  // What SST gives the toolkit: a host that drops the toolkit's messages.
  const ioHelper = IoHelper.fromActionAwareIoHost({ notify: async () => {}, requestResponse: async () => undefined });
  const silent = { debug() {}, info() {}, warn() {}, error() {}, trace() {} };
  const sdkFor = (answer: StubAnswer) => {
    const stub = stubHandler(answer);
    return { stub, sdk: new SDK(async () => CREDENTIALS, REGION, stub.handler, ioHelper, silent) };
  };
  const answerOf = (service: string) => {
    const call = CALLS.find((c) => c.service === service);
    if (!call) throw new Error(`no call for ${service}`);
    return call;
  };

  it('reads the bootstrap stack (CloudFormation DescribeStacks)', async () => {
    const call = answerOf('CloudFormation');
    const { stub, sdk } = sdkFor(call.answer);
    expect(call.read(await sdk.cloudFormation().describeStacks(call.input))).toEqual(call.expected);
    expect(stub.seen).toHaveLength(1);
  });

  it('reads the bootstrap version (SSM GetParameter)', async () => {
    const call = answerOf('SSM');
    const { stub, sdk } = sdkFor(call.answer);
    expect(call.read(await sdk.ssm().getParameter(call.input))).toEqual(call.expected);
    expect(stub.seen).toHaveLength(1);
  });

  it("finds the assets bucket's region (S3 GetBucketLocation)", async () => {
    const call = answerOf('S3');
    const { stub, sdk } = sdkFor(call.answer);
    expect(call.read(await sdk.s3().getBucketLocation(call.input))).toEqual(call.expected);
    expect(stub.seen).toHaveLength(1);
  });

  it('checks the credentials (STS GetCallerIdentity)', async () => {
    const { stub, sdk } = sdkFor(answerOf('STS').answer);
    await sdk.validateCredentials();
    expect(stub.seen).toHaveLength(1);
    expect(stub.seen[0]?.body).toContain('Action=GetCallerIdentity');
  });
});
