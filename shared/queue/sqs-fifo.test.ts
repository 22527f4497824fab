import { SendMessageBatchCommand, type SendMessageBatchCommandInput, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeSqs } from '../aws/fakes/sqs/fake-sqs.ts';
import { FakeClock } from '../clock.ts';
import { SqsAdapter } from './sqs-adapter.ts';
import type { FifoMessage } from './sqs-port.ts';

/** `sendFifo`: messages that are no keys (the interruption notice) go out with the IDs their sender chose. */
const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/interruption.fifo';
const client = new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } });
const sqs = mockClient(client);

const message = (n: number): FifoMessage => ({
  body: `{"n":${n}}`,
  groupId: `Node//n${n % 2}`,
  deduplicationId: `d${n}`,
});
const inputs = (): SendMessageBatchCommandInput[] =>
  sqs.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);

describe('SqsAdapter.sendFifo', () => {
  let adapter: SqsAdapter;
  beforeEach(() => {
    sqs.reset();
    adapter = new SqsAdapter(client, { sleep: async () => {} });
  });

  it('sends body, group and deduplication IDs as given, 10 per SendMessageBatch', async () => {
    sqs.on(SendMessageBatchCommand).callsFake((input: SendMessageBatchCommandInput) => ({
      Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}`, MD5OfMessageBody: 'x' })),
      Failed: [],
    }));
    const messages = Array.from({ length: 11 }, (_, n) => message(n));
    expect(await adapter.sendFifo(QUEUE_URL, messages)).toEqual([]);
    expect(inputs().map((i) => i.Entries?.length)).toEqual([10, 1]);
    expect(inputs()[1]).toEqual({
      QueueUrl: QUEUE_URL,
      Entries: [{ Id: '0', MessageBody: '{"n":10}', MessageGroupId: 'Node//n0', MessageDeduplicationId: 'd10' }],
    });
  });

  it('returns the message SQS refused for good (sender fault), with its code', async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '0', MessageId: 'm', MD5OfMessageBody: 'x' }],
      Failed: [{ Id: '1', Code: 'InvalidParameterValue', Message: 'bad', SenderFault: true }],
    });
    const failures = await adapter.sendFifo(QUEUE_URL, [message(0), message(1)]);
    expect(failures).toEqual([{ message: message(1), code: 'InvalidParameterValue', reason: 'bad' }]);
  });
});

describe('FakeSqs.sendFifo', () => {
  it('keeps the given group, drops a repeated deduplication ID, and honours refusals', async () => {
    const fake = new FakeSqs(new FakeClock());
    const { url } = fake.createQueue('interruption.fifo', { fifo: true });
    fake.refuseNextSends.push(['', 'InternalError']);
    const failures = await fake.sendFifo(url, [message(0), message(1), message(0)]);
    expect(failures).toEqual([{ message: message(1), code: 'InternalError', reason: 'refused by the fake' }]);
    expect(fake.bodies('interruption.fifo')).toEqual(['{"n":0}']);
    const groups: string[] = [];
    await fake.pump('interruption.fifo', async (records) => {
      groups.push(...records.map((r) => r.attributes.MessageGroupId ?? ''));
      return { batchItemFailures: [] };
    });
    expect(groups).toEqual(['Node//n0']);
  });
});
