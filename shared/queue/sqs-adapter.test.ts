import {
  ChangeMessageVisibilityBatchCommand,
  type ChangeMessageVisibilityBatchCommandInput,
  DeleteMessageBatchCommand,
  type DeleteMessageBatchCommandInput,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchCommandInput,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { AwsServiceError } from '../aws/errors.ts';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { type KeyMessage, messageDeduplicationId } from './message.ts';
import { SqsAdapter } from './sqs-adapter.ts';
import type { VisibilityChange } from './sqs-port.ts';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/node.fifo';
const QUEUE_ARN = 'arn:aws:sqs:us-east-1:123456789012:node.fifo';

const client = new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' } });
const sqs = mockClient(client);
let sleeps: number[];
let adapter: SqsAdapter;

function nodeKey(n: number, resourceVersion = '1'): KeyMessage {
  return { kind: 'Node', name: `node-${n}`, hint: { eventType: 'MODIFIED', resourceVersion } };
}

function keys(count: number): KeyMessage[] {
  return Array.from({ length: count }, (_, n) => nodeKey(n));
}

function sendInputs(): SendMessageBatchCommandInput[] {
  return sqs.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);
}

function visibilityInputs(): ChangeMessageVisibilityBatchCommandInput[] {
  return sqs.commandCalls(ChangeMessageVisibilityBatchCommand).map((call) => call.args[0].input);
}

/** SQS's answer when every entry of the call went through. */
function allSucceed(input: SendMessageBatchCommandInput) {
  return {
    Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}`, MD5OfMessageBody: 'x' })),
    Failed: [],
  };
}

beforeEach(() => {
  sqs.reset();
  sleeps = [];
  adapter = new SqsAdapter(client, {
    sleep: async (milliseconds) => {
      sleeps.push(milliseconds);
    },
  });
});

describe('SqsAdapter.sendKeys', () => {
  it('makes no call for no messages', async () => {
    expect(await adapter.sendKeys(QUEUE_URL, [])).toEqual([]);
    expect(sendInputs()).toEqual([]);
  });

  it('sends ten entries per call, each keyed by its object for FIFO grouping and deduplication', async () => {
    sqs.on(SendMessageBatchCommand).callsFake(async (input: SendMessageBatchCommandInput) => allSucceed(input));
    const messages = keys(23);

    const failures = await adapter.sendKeys(QUEUE_URL, messages);

    expect(failures).toEqual([]);
    const inputs = sendInputs();
    expect(inputs.map((input) => input.Entries?.length)).toEqual([10, 10, 3]);
    expect(inputs.every((input) => input.QueueUrl === QUEUE_URL)).toBe(true);
    expect(inputs[1]?.Entries?.[4]).toEqual({
      Id: '4',
      MessageBody: JSON.stringify(messages[14]),
      MessageGroupId: 'Node//node-14',
      MessageDeduplicationId: messageDeduplicationId(messages[14]!),
    });
    expect(inputs[2]?.Entries?.map((e) => e.Id)).toEqual(['0', '1', '2']);
    expect(inputs.flatMap((input) => input.Entries ?? []).map((e) => JSON.parse(e.MessageBody!))).toEqual(messages);
    expect(sleeps).toEqual([]);
  });

  it('gives a newer revision of a key a different deduplication ID but the same group', async () => {
    sqs.on(SendMessageBatchCommand).callsFake(async (input: SendMessageBatchCommandInput) => allSucceed(input));

    await adapter.sendKeys(QUEUE_URL, [
      nodeKey(1, '10'),
      nodeKey(1, '11'),
      { kind: 'Service', namespace: 'a', name: 'b' },
    ]);

    const entries = sendInputs()[0]?.Entries ?? [];
    expect(entries.map((e) => e.MessageGroupId)).toEqual(['Node//node-1', 'Node//node-1', 'Service/a/b']);
    expect(entries[0]?.MessageDeduplicationId).not.toBe(entries[1]?.MessageDeduplicationId);
  });

  it('retries only the entries SQS failed through no fault of ours, under their first Ids', async () => {
    sqs
      .on(SendMessageBatchCommand)
      .resolvesOnce({
        Successful: [{ Id: '0', MessageId: 'm0', MD5OfMessageBody: 'x' }],
        Failed: [
          { Id: '1', SenderFault: false, Code: 'InternalError', Message: 'try again' },
          { Id: '2', SenderFault: false, Code: 'ServiceUnavailable' },
        ],
      })
      .callsFake(async (input: SendMessageBatchCommandInput) => allSucceed(input));
    const messages = keys(3);

    const failures = await adapter.sendKeys(QUEUE_URL, messages);

    expect(failures).toEqual([]);
    const inputs = sendInputs();
    expect(inputs).toHaveLength(2);
    expect(inputs[1]?.Entries?.map((e) => [e.Id, JSON.parse(e.MessageBody!)])).toEqual([
      ['1', messages[1]],
      ['2', messages[2]],
    ]);
    expect(sleeps).toEqual([100]);
  });

  it('returns entries that failed through our fault at once, without retrying them', async () => {
    sqs.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '1', MessageId: 'm1', MD5OfMessageBody: 'x' }],
      Failed: [{ Id: '0', SenderFault: true, Code: 'InvalidParameterValue', Message: 'MessageGroupId too long' }],
    });
    const messages = keys(2);

    const failures = await adapter.sendKeys(QUEUE_URL, messages);

    expect(failures).toEqual([
      { message: messages[0], code: 'InvalidParameterValue', reason: 'MessageGroupId too long' },
    ]);
    expect(sendInputs()).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('gives up on an entry SQS keeps failing after three rounds, backing off between them', async () => {
    sqs.on(SendMessageBatchCommand).callsFake(async (input: SendMessageBatchCommandInput) => ({
      Successful: (input.Entries ?? []).filter((e) => e.Id !== '1').map((e) => ({ Id: e.Id, MessageId: 'm' })),
      Failed: [{ Id: '1', SenderFault: false, Code: 'InternalError', Message: 'still broken' }],
    }));
    const messages = keys(3);

    const failures = await adapter.sendKeys(QUEUE_URL, messages);

    expect(failures).toEqual([{ message: messages[1], code: 'InternalError', reason: 'still broken' }]);
    expect(sendInputs().map((input) => input.Entries?.map((e) => e.Id))).toEqual([['0', '1', '2'], ['1'], ['1']]);
    expect(sleeps).toEqual([100, 200]);
  });

  it('retries an entry missing from both lists of the answer', async () => {
    sqs
      .on(SendMessageBatchCommand)
      .resolvesOnce({ Successful: [{ Id: '0', MessageId: 'm0', MD5OfMessageBody: 'x' }], Failed: [] })
      .callsFake(async (input: SendMessageBatchCommandInput) => allSucceed(input));

    const failures = await adapter.sendKeys(QUEUE_URL, keys(2));

    expect(failures).toEqual([]);
    expect(sendInputs().map((input) => input.Entries?.map((e) => e.Id))).toEqual([['0', '1'], ['1']]);
  });

  it.each([
    ['ThrottlingException', 400],
    ['RequestThrottled', 400],
    ['InternalError', 500],
    ['ServiceUnavailable', 503],
  ])('retries the whole call after a thrown %s', async (code, status) => {
    sqs
      .on(SendMessageBatchCommand)
      .rejectsOnce(new AwsServiceError(code, 'slow down', status))
      .callsFake(async (input: SendMessageBatchCommandInput) => allSucceed(input));

    const failures = await adapter.sendKeys(QUEUE_URL, keys(4));

    expect(failures).toEqual([]);
    expect(sendInputs().map((input) => input.Entries?.length)).toEqual([4, 4]);
    expect(sleeps).toEqual([100]);
  });

  it('returns every entry of the call when transient errors outlast three attempts', async () => {
    sqs.on(SendMessageBatchCommand).rejects(new AwsServiceError('ThrottlingException', 'slow down', 400));
    const messages = keys(2);

    const failures = await adapter.sendKeys(QUEUE_URL, messages);

    expect(failures).toEqual(
      messages.map((message) => ({ message, code: 'ThrottlingException', reason: 'slow down' })),
    );
    expect(sendInputs()).toHaveLength(3);
    expect(sleeps).toEqual([100, 200]);
  });

  it.each([
    ['QueueDoesNotExist', 400],
    ['AccessDenied', 403],
    ['KmsAccessDenied', 400],
  ])('returns the entries of a call that failed with %s without retrying, and goes on', async (code, status) => {
    sqs
      .on(SendMessageBatchCommand)
      .rejectsOnce(new AwsServiceError(code, 'refused', status))
      .callsFake(async (input: SendMessageBatchCommandInput) => allSucceed(input));
    const messages = keys(12);

    const failures = await adapter.sendKeys(QUEUE_URL, messages);

    expect(failures).toEqual(messages.slice(0, 10).map((message) => ({ message, code, reason: 'refused' })));
    expect(sendInputs().map((input) => input.Entries?.length)).toEqual([10, 2]);
    expect(sleeps).toEqual([]);
  });
});

describe('SqsAdapter.changeVisibility', () => {
  const change = (receiptHandle: string, visibilityTimeoutSeconds = 30): VisibilityChange => ({
    receiptHandle,
    visibilityTimeoutSeconds,
  });

  beforeEach(() => {
    sqs.on(ChangeMessageVisibilityBatchCommand).callsFake(async (input: ChangeMessageVisibilityBatchCommandInput) => ({
      Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id })),
      Failed: [],
    }));
  });

  it('makes no call for no entries', async () => {
    await adapter.changeVisibility(QUEUE_ARN, []);

    expect(visibilityInputs()).toEqual([]);
  });

  it.each([
    [undefined, QUEUE_ARN, 'https://sqs.us-east-1.amazonaws.com/123456789012/node.fifo'],
    [undefined, 'arn:aws-cn:sqs:cn-north-1:123456789012:q', 'https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q'],
    ['http://localhost:4566/', QUEUE_ARN, 'http://localhost:4566/123456789012/node.fifo'],
  ])('with endpoint %s, addresses %s at %s', async (endpoint, arn, url) => {
    await new SqsAdapter(client, { endpoint }).changeVisibility(arn, [change('rh-1')]);

    expect(visibilityInputs()).toEqual([
      { QueueUrl: url, Entries: [{ Id: '0', ReceiptHandle: 'rh-1', VisibilityTimeout: 30 }] },
    ]);
  });

  it.each([
    [-5, 0],
    [0, 0],
    [1.2, 2],
    [900, 900],
    [43_200, 43_200],
    [43_201, 43_200],
    [Number.POSITIVE_INFINITY, 43_200],
    [Number.NaN, 0],
  ])('sends %d seconds as %d', async (seconds, sent) => {
    await adapter.changeVisibility(QUEUE_ARN, [change('rh', seconds)]);

    expect(visibilityInputs()[0]?.Entries?.[0]?.VisibilityTimeout).toBe(sent);
  });

  it('changes ten entries per call', async () => {
    const entries = Array.from({ length: 25 }, (_, n) => change(`rh-${n}`, n));

    await adapter.changeVisibility(QUEUE_ARN, entries);

    const inputs = visibilityInputs();
    expect(inputs.map((input) => input.Entries?.length)).toEqual([10, 10, 5]);
    expect(inputs[2]?.Entries).toEqual(
      [20, 21, 22, 23, 24].map((n, index) => ({
        Id: String(index),
        ReceiptHandle: `rh-${n}`,
        VisibilityTimeout: n,
      })),
    );
  });

  it.each(['ReceiptHandleIsInvalid', 'MessageNotInflight', 'AWS.SimpleQueueService.MessageNotInflight'])(
    'ignores a failed entry with %s: the message is gone or visible already',
    async (code) => {
      sqs.on(ChangeMessageVisibilityBatchCommand).resolves({
        Successful: [{ Id: '1' }],
        Failed: [{ Id: '0', Code: code, SenderFault: true, Message: 'stale' }],
      });

      await expect(adapter.changeVisibility(QUEUE_ARN, [change('a'), change('b')])).resolves.toBeUndefined();
    },
  );

  it.each([
    [true, TerminalError],
    [false, RetryableError],
  ])('throws for another failed entry (sender fault %s) after trying every group', async (senderFault, errorClass) => {
    sqs
      .on(ChangeMessageVisibilityBatchCommand)
      .resolvesOnce({
        Successful: [],
        Failed: [{ Id: '3', Code: 'InvalidParameterValue', SenderFault: senderFault, Message: 'bad value' }],
      })
      .resolves({ Successful: [], Failed: [] });
    const entries = Array.from({ length: 12 }, (_, n) => change(`rh-${n}`));

    const error = await adapter.changeVisibility(QUEUE_ARN, entries).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(errorClass);
    expect((error as Error).message).toBe('changing message visibility (1 failure): InvalidParameterValue: bad value');
    expect(visibilityInputs()).toHaveLength(2);
  });

  it('wraps a failed call by its retry meaning', async () => {
    sqs.on(ChangeMessageVisibilityBatchCommand).rejects(new AwsServiceError('RequestThrottled', 'slow down'));

    await expect(adapter.changeVisibility(QUEUE_ARN, [change('a')])).rejects.toThrow(ThrottledError);
  });

  it('refuses a queue ARN it cannot turn into a URL, without calling SQS', async () => {
    const error = await adapter.changeVisibility('arn:aws:sns:us-east-1:1:topic', [change('a')]).catch((e) => e);

    expect(error).toBeInstanceOf(TerminalError);
    expect(visibilityInputs()).toEqual([]);
  });
});

describe('SqsAdapter.receive', () => {
  const EVENTS_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/ec2-events';

  it.each([
    [{ waitSeconds: 20, max: 10 }, 20, 10],
    [{ waitSeconds: 0, max: 1 }, 0, 1],
    [{ waitSeconds: 25, max: 50 }, 20, 10],
    [{ waitSeconds: -1, max: 0 }, 0, 1],
    [{ waitSeconds: 2.7, max: 3.5 }, 2, 3],
  ])('asks with %o for WaitTimeSeconds %d and MaxNumberOfMessages %d (SQS bounds)', async (options, wait, max) => {
    sqs.on(ReceiveMessageCommand).resolves({});

    expect(await adapter.receive(EVENTS_URL, options)).toEqual([]);

    expect(sqs.commandCalls(ReceiveMessageCommand).map((call) => call.args[0].input)).toEqual([
      {
        QueueUrl: EVENTS_URL,
        MaxNumberOfMessages: max,
        WaitTimeSeconds: wait,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      },
    ]);
  });

  it('answers each message with its body, receipt handle and receive count', async () => {
    sqs.on(ReceiveMessageCommand).resolves({
      Messages: [
        {
          MessageId: 'm1',
          Body: '{"detail-type":"x"}',
          ReceiptHandle: 'rh1',
          Attributes: { ApproximateReceiveCount: '3' },
        },
        { MessageId: 'm2', Body: 'not json', ReceiptHandle: 'rh2' },
      ],
    });

    expect(await adapter.receive(EVENTS_URL, { waitSeconds: 20, max: 10 })).toEqual([
      { messageId: 'm1', body: '{"detail-type":"x"}', receiptHandle: 'rh1', receiveCount: 3 },
      { messageId: 'm2', body: 'not json', receiptHandle: 'rh2', receiveCount: 1 },
    ]);
  });

  it('passes the abort signal to the SDK and rethrows its error as it is once aborted', async () => {
    const controller = new AbortController();
    const abortError = Object.assign(new Error('Request aborted'), { name: 'AbortError' });
    sqs.on(ReceiveMessageCommand).callsFake(async () => {
      controller.abort();
      throw abortError;
    });

    await expect(adapter.receive(EVENTS_URL, { waitSeconds: 20, max: 10, signal: controller.signal })).rejects.toBe(
      abortError,
    );
    expect((sqs.commandCalls(ReceiveMessageCommand)[0]?.args as unknown[] | undefined)?.[1]).toEqual({
      abortSignal: controller.signal,
    });
  });

  it.each([
    ['QueueDoesNotExist', 400, TerminalError],
    ['AccessDenied', 403, TerminalError],
    ['RequestThrottled', 400, ThrottledError],
    ['InternalError', 500, RetryableError],
  ])('wraps %s by its retry meaning', async (code, status, errorClass) => {
    sqs.on(ReceiveMessageCommand).rejects(new AwsServiceError(code, 'no', status));

    const error = await adapter.receive(EVENTS_URL, { waitSeconds: 20, max: 10 }).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(errorClass);
    expect((error as Error).message).toBe(`receiving messages: ${code}: no`);
  });
});

describe('SqsAdapter.delete', () => {
  const EVENTS_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/ec2-events';
  const deleteInputs = (): DeleteMessageBatchCommandInput[] =>
    sqs.commandCalls(DeleteMessageBatchCommand).map((call) => call.args[0].input);

  beforeEach(() => {
    sqs.on(DeleteMessageBatchCommand).callsFake(async (input: DeleteMessageBatchCommandInput) => ({
      Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id })),
      Failed: [],
    }));
  });

  it('makes no call for no receipt handles', async () => {
    await adapter.delete(EVENTS_URL, []);

    expect(deleteInputs()).toEqual([]);
  });

  it('deletes ten receipt handles per call', async () => {
    const handles = Array.from({ length: 12 }, (_, n) => `rh-${n}`);

    await adapter.delete(EVENTS_URL, handles);

    expect(deleteInputs()).toEqual([
      { QueueUrl: EVENTS_URL, Entries: handles.slice(0, 10).map((h, i) => ({ Id: String(i), ReceiptHandle: h })) },
      {
        QueueUrl: EVENTS_URL,
        Entries: [
          { Id: '0', ReceiptHandle: 'rh-10' },
          { Id: '1', ReceiptHandle: 'rh-11' },
        ],
      },
    ]);
  });

  it.each(['ReceiptHandleIsInvalid', 'AWS.SimpleQueueService.ReceiptHandleIsInvalid'])(
    'ignores a failed entry with %s: the message is gone already or someone else holds it',
    async (code) => {
      sqs
        .on(DeleteMessageBatchCommand)
        .resolves({ Successful: [], Failed: [{ Id: '0', Code: code, SenderFault: true }] });

      await expect(adapter.delete(EVENTS_URL, ['stale'])).resolves.toBeUndefined();
    },
  );

  it('throws for another failed entry or a failed call, after trying every group', async () => {
    sqs
      .on(DeleteMessageBatchCommand)
      .resolvesOnce({ Successful: [], Failed: [{ Id: '2', Code: 'InternalError', SenderFault: false, Message: 'x' }] })
      .rejectsOnce(new AwsServiceError('AccessDenied', 'not allowed', 403));
    const handles = Array.from({ length: 15 }, (_, n) => `rh-${n}`);

    const error = await adapter.delete(EVENTS_URL, handles).catch((err: unknown) => err);

    expect(error).toBeInstanceOf(RetryableError);
    expect((error as Error).message).toBe('deleting messages (2 failures): InternalError: x');
    expect(deleteInputs()).toHaveLength(2);
  });
});
