import { createRequire } from 'node:module';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EKSClient } from '@aws-sdk/client-eks';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * The AWS calls the deploy test reads the emulator back with. The project's own SDK clients (SQS, EventBridge,
 * EKS) are imported as usual. It has no use at run time for CloudFormation, Lambda, IAM, S3 or CloudWatch Logs
 * clients, so those are the ones SST and the CDK toolkit ship, loaded from their folders as the toolkit test
 * does: no extra packages in the lockfile for a test. No package here speaks CloudWatch, so its two calls are
 * signed query-protocol requests (`cloudWatch`).
 */

// biome-ignore lint/suspicious/noExplicitAny: answers of clients loaded by path, read field by field.
export type Answer = any;

export interface AwsCall {
  /** Sends `<command>Command` of the client with `input`; the answer as the SDK parsed it. */
  call(command: string, input: Record<string, unknown>): Promise<Answer>;
  destroy(): void;
}

const here = createRequire(import.meta.url);
const fromSst = createRequire(here.resolve('sst/package.json'));
const fromToolkit = createRequire(fromSst.resolve('@aws-cdk/toolkit-lib'));

type ClientClass = new (
  config: Record<string, unknown>,
) => {
  send(command: unknown): Promise<Answer>;
  destroy(): void;
};

function loaded(req: NodeRequire, pkg: string, clientName: string, config: Record<string, unknown>): AwsCall {
  const sdk = req(pkg) as Record<string, unknown>;
  const client = new (sdk[clientName] as ClientClass)(config);
  return {
    call(command, input) {
      const Command = sdk[`${command}Command`] as (new (input: unknown) => unknown) | undefined;
      if (!Command) throw new Error(`${pkg} has no ${command}Command`);
      return client.send(new Command(input));
    },
    destroy: () => client.destroy(),
  };
}

function typed(client: { send(command: never): Promise<unknown>; destroy(): void }, sdk: Record<string, unknown>) {
  return {
    call(command: string, input: Record<string, unknown>): Promise<Answer> {
      const Command = sdk[`${command}Command`] as new (input: unknown) => never;
      return client.send(new Command(input));
    },
    destroy: () => client.destroy(),
  };
}

export interface EmulatorAws {
  region: string;
  cloudFormation: AwsCall;
  sqs: AwsCall;
  logs: AwsCall;
  iam: AwsCall;
  lambda: AwsCall;
  events: AwsCall;
  eks: AwsCall;
  s3: AwsCall;
  sts: AwsCall;
  /** A CloudWatch query-protocol action (`GetDashboard`, `DescribeAlarms`); the XML answer. */
  cloudWatch(action: string, params: Record<string, string>): Promise<string>;
  destroy(): void;
}

export async function emulatorAws(config: {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
}): Promise<EmulatorAws> {
  const base = { ...config, maxAttempts: 1 };
  const [sqsSdk, eventsSdk, eksSdk] = await Promise.all([
    import('@aws-sdk/client-sqs'),
    import('@aws-sdk/client-eventbridge'),
    import('@aws-sdk/client-eks'),
  ]);
  const aws: EmulatorAws = {
    region: config.region,
    cloudFormation: loaded(fromSst, '@aws-sdk/client-cloudformation', 'CloudFormationClient', base),
    sqs: typed(new SQSClient(base), sqsSdk),
    logs: loaded(fromToolkit, '@aws-sdk/client-cloudwatch-logs', 'CloudWatchLogsClient', base),
    iam: loaded(fromSst, '@aws-sdk/client-iam', 'IAMClient', base),
    lambda: loaded(fromSst, '@aws-sdk/client-lambda', 'LambdaClient', base),
    events: typed(new EventBridgeClient(base), eventsSdk),
    eks: typed(new EKSClient(base), eksSdk),
    // An IP address endpoint takes no bucket subdomain.
    s3: loaded(fromSst, '@aws-sdk/client-s3', 'S3Client', { ...base, forcePathStyle: true }),
    sts: loaded(fromSst, '@aws-sdk/client-sts', 'STSClient', base),
    async cloudWatch(action, params) {
      const url = new URL(config.endpoint);
      const body = new URLSearchParams({ Action: action, Version: '2010-08-01', ...params }).toString();
      const signer = new SignatureV4({
        credentials: config.credentials,
        region: config.region,
        service: 'monitoring',
        sha256: Sha256,
      });
      const request = await signer.sign(
        new HttpRequest({
          method: 'POST',
          protocol: url.protocol,
          hostname: url.hostname,
          port: Number(url.port),
          path: '/',
          headers: { host: url.host, 'content-type': 'application/x-www-form-urlencoded' },
          body,
        }),
      );
      const response = await fetch(`${config.endpoint}/`, {
        method: 'POST',
        headers: request.headers,
        body,
      });
      const text = await response.text();
      if (!response.ok) {
        // Named by the error code, as the SDK names the errors it parses.
        const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP ${response.status}`;
        throw Object.assign(new Error(`CloudWatch ${action}: ${text}`), { name: code });
      }
      return text;
    },
    destroy() {
      for (const client of [aws.cloudFormation, aws.sqs, aws.logs, aws.iam, aws.lambda, aws.events, aws.eks, aws.s3]) {
        client.destroy();
      }
      aws.sts.destroy();
    },
  };
  return aws;
}

/** The error name of a failed call (`ResourceNotFoundException`, `NoSuchEntity`...), or undefined if it succeeded. */
export async function errorOf(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
    return undefined;
  } catch (err) {
    return (err as { name?: string }).name ?? String(err);
  }
}
