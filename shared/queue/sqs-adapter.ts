import {
  type BatchResultErrorEntry,
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type ReceiveMessageCommandOutput,
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { AwsServiceError, awsErrorCode, classifyAwsError, toControllerError } from '../aws/errors.ts';
import { errorMessage, TerminalError } from '../errors.ts';
import { type KeyMessage, messageDeduplicationId, messageGroupId } from './message.ts';
import {
  type FifoMessage,
  MAX_RECEIVE_MESSAGES,
  MAX_VISIBILITY_SECONDS,
  MAX_WAIT_SECONDS,
  queueUrlFromArn,
  type ReceivedMessage,
  type ReceiveOptions,
  type SendFailure,
  type SqsFifoPort,
  type SqsPort,
  type SqsReceiverPort,
  type VisibilityChange,
} from './sqs-port.ts';

/** SQS batch calls take at most 10 entries. */
export const ENTRIES_PER_BATCH = 10;

/** Rounds per batch of messages: the first send plus two retries of what SQS could not take. */
export const SEND_ATTEMPTS = 3;

/**
 * Failed visibility entries that need nothing more: the message was deleted (its receipt handle is stale) or
 * is already visible again. Older endpoints prefix codes with `AWS.SimpleQueueService.`.
 */
const ALREADY_SETTLED_CODES = new Set(['ReceiptHandleIsInvalid', 'MessageNotInflight']);

export interface SqsAdapterOptions {
  /** The SDK's endpoint when it is not AWS (a local or AWS-compatible SQS): queue URLs are built on it. */
  endpoint?: string;
  /** Waits between send rounds; tests pass one that does not wait. */
  sleep?: (milliseconds: number) => Promise<void>;
  /** First wait between send rounds, doubled for each further round. */
  baseDelayMilliseconds?: number;
}

interface PendingEntry<M> {
  id: string;
  message: M;
  entry: Omit<SendMessageBatchRequestEntry, 'Id'>;
}

const realSleep = (milliseconds: number) => new Promise<void>((resolve) => setTimeout(resolve, milliseconds));

export class SqsAdapter implements SqsPort, SqsFifoPort, SqsReceiverPort {
  private readonly endpoint: string | undefined;
  private readonly sleep: (milliseconds: number) => Promise<void>;
  private readonly baseDelayMilliseconds: number;

  constructor(
    private readonly client: SQSClient,
    options: SqsAdapterOptions = {},
  ) {
    this.endpoint = options.endpoint;
    this.sleep = options.sleep ?? realSleep;
    this.baseDelayMilliseconds = options.baseDelayMilliseconds ?? 100;
  }

  sendKeys(queueUrl: string, messages: readonly KeyMessage[]): Promise<SendFailure[]> {
    return this.sendAll(queueUrl, messages, keyEntry);
  }

  /** Messages other than keys (the interruption notice), with the IDs their sender derived; as `sendKeys`. */
  sendFifo(queueUrl: string, messages: readonly FifoMessage[]): Promise<SendFailure<FifoMessage>[]> {
    return this.sendAll(queueUrl, messages, (m) => ({
      MessageBody: m.body,
      MessageGroupId: m.groupId,
      MessageDeduplicationId: m.deduplicationId,
    }));
  }

  private async sendAll<M>(
    queueUrl: string,
    messages: readonly M[],
    toEntry: (message: M) => Omit<SendMessageBatchRequestEntry, 'Id'>,
  ): Promise<SendFailure<M>[]> {
    const failures: SendFailure<M>[] = [];
    // One batch after the other: a relay flushing many keys should not hit the queue's API all at once.
    for (const batch of chunks(messages, ENTRIES_PER_BATCH)) {
      const entries = batch.map((message, index) => ({ id: String(index), message, entry: toEntry(message) }));
      failures.push(...(await this.sendBatch(queueUrl, entries)));
    }
    return failures;
  }

  async changeVisibility(queueArn: string, entries: readonly VisibilityChange[]): Promise<void> {
    const queueUrl = queueUrlFromArnOn(queueArn, this.endpoint);
    const errors: unknown[] = [];
    // Every group is tried even after one fails, so one bad receipt handle does not leave the others as they were.
    for (const group of chunks(entries, ENTRIES_PER_BATCH)) {
      try {
        const output = await this.client.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: group.map((entry, index) => ({
              Id: String(index),
              ReceiptHandle: entry.receiptHandle,
              VisibilityTimeout: clampVisibility(entry.visibilityTimeoutSeconds),
            })),
          }),
        );
        for (const failed of output.Failed ?? []) {
          if (!ALREADY_SETTLED_CODES.has(withoutLegacyPrefix(failed.Code))) errors.push(batchEntryError(failed));
        }
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) {
      const doing = `changing message visibility (${errors.length} failure${errors.length === 1 ? '' : 's'})`;
      throw toControllerError(doing, errors[0]);
    }
  }

  async receive(queueUrl: string, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    let output: ReceiveMessageCommandOutput;
    try {
      output = await this.client.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: clamp(options.max, 1, MAX_RECEIVE_MESSAGES),
          WaitTimeSeconds: clamp(options.waitSeconds, 0, MAX_WAIT_SECONDS),
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
        options.signal ? { abortSignal: options.signal } : {},
      );
    } catch (err) {
      // A cancelled wait is the caller's own doing, not an AWS error to classify.
      if (options.signal?.aborted) throw err;
      throw toControllerError('receiving messages', err);
    }
    return (output.Messages ?? []).map((m) => ({
      messageId: m.MessageId ?? '',
      body: m.Body ?? '',
      receiptHandle: m.ReceiptHandle ?? '',
      receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1),
    }));
  }

  async delete(queueUrl: string, receiptHandles: readonly string[]): Promise<void> {
    const errors: unknown[] = [];
    // Every group is tried even after one fails: a message deleted is one not delivered twice.
    for (const group of chunks(receiptHandles, ENTRIES_PER_BATCH)) {
      try {
        const output = await this.client.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: group.map((receiptHandle, index) => ({ Id: String(index), ReceiptHandle: receiptHandle })),
          }),
        );
        for (const failed of output.Failed ?? []) {
          if (withoutLegacyPrefix(failed.Code) !== 'ReceiptHandleIsInvalid') errors.push(batchEntryError(failed));
        }
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) {
      const doing = `deleting messages (${errors.length} failure${errors.length === 1 ? '' : 's'})`;
      throw toControllerError(doing, errors[0]);
    }
  }

  /**
   * One SendMessageBatch of up to 10 messages, in up to three rounds. Entries SQS refused through no fault of
   * ours (SenderFault false) and whole calls that failed transiently are tried again after a short wait;
   * entries that were our fault, and whatever is left after the last round, are returned. Sending a message
   * twice is harmless: a FIFO queue drops the repeat by its deduplication ID for five minutes.
   */
  private async sendBatch<M>(queueUrl: string, batch: readonly PendingEntry<M>[]): Promise<SendFailure<M>[]> {
    const failures: SendFailure<M>[] = [];
    // Ids stay those of the first round, so a result always maps back to its message.
    let pending: PendingEntry<M>[] = [...batch];
    for (let attempt = 1; pending.length > 0; attempt++) {
      if (attempt > 1) await this.sleep(this.baseDelayMilliseconds * 2 ** (attempt - 2));
      const lastAttempt = attempt >= SEND_ATTEMPTS;
      let output: SendMessageBatchCommandOutput;
      try {
        output = await this.client.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending.map(toBatchEntry) }),
        );
      } catch (err) {
        const retryable = ['throttled', 'retryable'].includes(classifyAwsError(err));
        if (retryable && !lastAttempt) continue;
        const code = awsErrorCode(err) ?? 'UnknownError';
        failures.push(...pending.map(({ message }) => ({ message, code, reason: errorMessage(err) })));
        return failures;
      }
      const succeeded = new Set((output.Successful ?? []).map((entry) => entry.Id));
      const failedById = new Map((output.Failed ?? []).map((entry) => [entry.Id, entry]));
      const retry: PendingEntry<M>[] = [];
      for (const entry of pending) {
        if (succeeded.has(entry.id)) continue;
        const failed = failedById.get(entry.id);
        if (failed?.SenderFault || lastAttempt) {
          const code = failed?.Code ?? 'NoResult';
          const reason = failed?.Message ?? (failed ? code : 'SQS reported neither success nor failure');
          failures.push({ message: entry.message, code, reason });
        } else {
          // Includes an entry missing from both lists: nothing says it was sent.
          retry.push(entry);
        }
      }
      pending = retry;
    }
    return failures;
  }
}

function toBatchEntry<M>({ id, entry }: PendingEntry<M>): SendMessageBatchRequestEntry {
  return { Id: id, ...entry };
}

function keyEntry(message: KeyMessage): Omit<SendMessageBatchRequestEntry, 'Id'> {
  return {
    MessageBody: JSON.stringify(message),
    MessageGroupId: messageGroupId(message),
    MessageDeduplicationId: messageDeduplicationId(message),
  };
}

/** SQS wants whole seconds in [0, 12 h]; rounding up never makes a message visible earlier than asked. */
function clampVisibility(seconds: number): number {
  if (Number.isNaN(seconds)) return 0;
  return Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(seconds)));
}

/** Whole numbers within SQS's bounds for ReceiveMessage. */
function clamp(value: number, min: number, max: number): number {
  if (Number.isNaN(value)) return min;
  return Math.min(max, Math.max(min, Math.floor(value)));
}

function withoutLegacyPrefix(code: string | undefined): string {
  return (code ?? '').replace(/^AWS\.SimpleQueueService\./, '');
}

/** A failed batch entry as an AWS-shaped error, so it is classified like any other AWS error. */
function batchEntryError(failed: BatchResultErrorEntry): AwsServiceError {
  const code = failed.Code ?? 'UnknownError';
  return new AwsServiceError(code, failed.Message ?? code, failed.SenderFault ? 400 : 500);
}

/** A bad ARN is a wiring mistake that no retry mends. */
function queueUrlFromArnOn(queueArn: string, endpoint: string | undefined): string {
  try {
    return queueUrlFromArn(queueArn, endpoint);
  } catch (err) {
    throw new TerminalError(`changing message visibility: ${errorMessage(err)}`, { cause: err });
  }
}

function chunks<T>(values: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}
