import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SendMessageBatchCommandInput,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { FakeSqs } from '../../shared/aws/fakes/sqs/fake-sqs.ts';
import { FakeClock } from '../../shared/clock.ts';
import { SqsAdapter } from '../../shared/queue/sqs-adapter.ts';
import type { SqsPort } from '../../shared/queue/sqs-port.ts';
import type { Emulator } from '../helpers/emulator.ts';

/**
 * The two SQS implementations the contract suite drives with the same tests: the project's SqsAdapter
 * talking to the AWS API emulator, and FakeSqs. The port (`SqsPort`: sendKeys, changeVisibility) is what the
 * controllers call; receive and delete are what the Lambda event source mapping does, so the emulator side
 * does them with the SDK and the fake side with FakeSqs's own methods.
 */

export interface QueueSettings {
  maxReceiveCount?: number;
  visibilityTimeoutSeconds?: number;
  contentBasedDeduplication?: boolean;
  deduplicationScope?: 'queue' | 'messageGroup';
}

export interface TestQueue {
  url: string;
  arn: string;
  dlqUrl: string;
}

export interface Received {
  body: string;
  receiptHandle: string;
  groupId: string | undefined;
  receiveCount: number;
}

/** An entry of the next SendMessageBatch call that SQS refuses, by its index in that call. */
export interface Refusal {
  index: number;
  code: string;
  /** false: SQS's fault (the adapter sends it again); true: the request's. */
  senderFault: boolean;
}

export interface SqsBackend {
  readonly name: 'emulator' | 'fake';
  readonly port: SqsPort;
  /** A fresh FIFO queue with a FIFO dead-letter queue and a redrive policy. */
  createFifoQueue(settings?: QueueSettings): Promise<TestQueue>;
  /** One SendMessage with explicit IDs (no deduplication ID: the queue's content-based deduplication). */
  sendRaw(queue: TestQueue, body: string, groupId: string, deduplicationId?: string): Promise<void>;
  receive(queueUrl: string, max?: number): Promise<Received[]>;
  deleteMessage(queueUrl: string, receiptHandle: string): Promise<void>;
  /** Let time pass: the fake's clock, real time for the emulator (which has no clock to move). */
  pass(seconds: number): Promise<void>;
  /** Whether `pass` can cover minutes (the deduplication window) in a test. */
  readonly canPassMinutes: boolean;
  /** SQS refuses these entries of the next SendMessageBatch call. */
  refuseNextSend(refusals: Refusal[]): void;
  sendBatchCalls(): number;
}

let queueCounter = 0;
const uniqueName = (prefix: string) => `${prefix}-${process.pid}-${++queueCounter}`;

export function fakeBackend(): SqsBackend {
  const clock = new FakeClock();
  const sqs = new FakeSqs(clock);
  const nameByUrl = new Map<string, string>();
  return {
    name: 'fake',
    port: sqs,
    canPassMinutes: true,
    async createFifoQueue(settings = {}) {
      const name = uniqueName('contract');
      const dlq = `${name}-dlq.fifo`;
      const { url, arn } = sqs.createQueue(`${name}.fifo`, {
        fifo: true,
        deadLetterQueue: dlq,
        maxReceiveCount: settings.maxReceiveCount ?? 5,
        visibilityTimeoutSeconds: settings.visibilityTimeoutSeconds ?? 30,
        contentBasedDeduplication: settings.contentBasedDeduplication ?? false,
        deduplicationScope: settings.deduplicationScope ?? 'queue',
      });
      nameByUrl.set(url, `${name}.fifo`);
      nameByUrl.set(sqs.urlOf(dlq), dlq);
      return { url, arn, dlqUrl: sqs.urlOf(dlq) };
    },
    async sendRaw(queue, body, groupId, deduplicationId) {
      sqs.send(nameByUrl.get(queue.url)!, body, { groupId, ...(deduplicationId ? { deduplicationId } : {}) });
    },
    async receive(queueUrl, max = 10) {
      return sqs.receive(nameByUrl.get(queueUrl)!, max).map((record) => ({
        body: record.body,
        receiptHandle: record.receiptHandle,
        groupId: record.attributes.MessageGroupId,
        receiveCount: Number(record.attributes.ApproximateReceiveCount),
      }));
    },
    async deleteMessage(queueUrl, receiptHandle) {
      sqs.deleteMessage(nameByUrl.get(queueUrl)!, receiptHandle);
    },
    async pass(seconds) {
      clock.advance(seconds * 1000);
    },
    refuseNextSend(refusals) {
      // FakeSqs plays the adapter too: what it refuses is what is left after the adapter's retries, so
      // only entries refused for good can be modelled.
      if (refusals.some((r) => !r.senderFault)) throw new Error('FakeSqs refuses entries for good only');
      const codes: string[] = [];
      for (const r of refusals) codes[r.index] = r.code;
      sqs.refuseNextSends.push(Array.from(codes, (code) => code ?? ''));
    },
    sendBatchCalls: () => sqs.callCount('SendMessageBatch'),
  };
}

export function emulatorBackend(emulator: Emulator): SqsBackend {
  const client = new SQSClient(emulator.clientConfig);
  const pendingRefusals: Refusal[][] = [];
  const batchCalls = injectRefusals(client, pendingRefusals);
  const adapter = new SqsAdapter(client, { endpoint: emulator.endpoint, sleep: async () => undefined });

  async function createQueue(name: string, attributes: Record<string, string>): Promise<{ url: string; arn: string }> {
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
    return { url: QueueUrl!, arn: Attributes!.QueueArn! };
  }

  return {
    name: 'emulator',
    port: adapter,
    canPassMinutes: false,
    async createFifoQueue(settings = {}) {
      const name = uniqueName('contract');
      const dlq = await createQueue(`${name}-dlq.fifo`, { FifoQueue: 'true' });
      const queue = await createQueue(`${name}.fifo`, {
        FifoQueue: 'true',
        ContentBasedDeduplication: String(settings.contentBasedDeduplication ?? false),
        DeduplicationScope: settings.deduplicationScope ?? 'queue',
        VisibilityTimeout: String(settings.visibilityTimeoutSeconds ?? 30),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: settings.maxReceiveCount ?? 5 }),
      });
      return { ...queue, dlqUrl: dlq.url };
    },
    async sendRaw(queue, body, groupId, deduplicationId) {
      await client.send(
        new SendMessageCommand({
          QueueUrl: queue.url,
          MessageBody: body,
          MessageGroupId: groupId,
          ...(deduplicationId ? { MessageDeduplicationId: deduplicationId } : {}),
        }),
      );
    },
    async receive(queueUrl, max = 10) {
      const { Messages } = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: max,
          MessageSystemAttributeNames: ['All'],
          WaitTimeSeconds: 0,
        }),
      );
      return (Messages ?? []).map((m) => ({
        body: m.Body ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        groupId: m.Attributes?.MessageGroupId,
        receiveCount: Number(m.Attributes?.ApproximateReceiveCount),
      }));
    },
    async deleteMessage(queueUrl, receiptHandle) {
      await client.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: receiptHandle }));
    },
    async pass(seconds) {
      // A little over: the emulator counts visibility in whole seconds from its own clock.
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000 + 150));
    },
    refuseNextSend(refusals) {
      pendingRefusals.push(refusals);
    },
    sendBatchCalls: () => batchCalls.count,
  };
}

/**
 * What SQS does to single entries cannot be provoked on the emulator (it refuses whole requests only), so
 * refusals are injected around the real call: refused entries are taken out of the request (never sent)
 * and reported in `Failed`, as SQS reports them. Counts the SendMessageBatch calls too.
 */
function injectRefusals(client: SQSClient, pending: Refusal[][]): { count: number } {
  const calls = { count: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'SendMessageBatchCommand') return next(args);
      calls.count += 1;
      const refusals = pending.shift() ?? [];
      if (refusals.length === 0) return next(args);
      const input = args.input as SendMessageBatchCommandInput;
      const entries: SendMessageBatchRequestEntry[] = input.Entries ?? [];
      const refusedIds = new Map(refusals.map((r) => [entries[r.index]?.Id, r]));
      const result = await next({
        ...args,
        input: { ...input, Entries: entries.filter((e) => !refusedIds.has(e.Id)) },
      });
      const output = result.output as SendMessageBatchCommandOutput;
      output.Failed = [
        ...(output.Failed ?? []),
        ...[...refusedIds].map(([id, r]) => ({
          Id: id,
          Code: r.code,
          SenderFault: r.senderFault,
          Message: 'injected',
        })),
      ];
      return result;
    },
    { step: 'initialize', name: 'contractRefusals' },
  );
  return calls;
}
