import { createHash } from 'node:crypto';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { Clock } from '../../../clock.ts';
import { type KeyMessage, messageDeduplicationId, messageGroupId } from '../../../queue/message.ts';
import {
  type FifoMessage,
  MAX_RECEIVE_MESSAGES,
  MAX_VISIBILITY_SECONDS,
  MAX_WAIT_SECONDS,
  type ReceivedMessage,
  type ReceiveOptions,
  type SendFailure,
  type SqsFifoPort,
  type SqsPort,
  type SqsReceiverPort,
  type VisibilityChange,
} from '../../../queue/sqs-port.ts';

/**
 * An in-memory SQS with the semantics the workqueue relies on: FIFO groups (a group with a message
 * in flight delivers nothing more until it is deleted or visible again), 5-minute deduplication by
 * ID (or by content where the queue enables it), visibility timeouts on a clock, receive counts, and
 * a redrive to a DLQ after `maxReceiveCount` receives. Standard queues deliver in any free order
 * with no grouping. Also the local runner's queue: `pump` plays the Lambda event source mapping.
 * test/contract/sqs.contract.test.ts runs the same behaviour tests against it and against the
 * SqsAdapter over an AWS API emulator; docs/emulator-differences.md lists where the emulator and AWS
 * differ (this fake follows AWS).
 */
export interface FakeQueueOptions {
  fifo?: boolean;
  visibilityTimeoutSeconds?: number;
  maxReceiveCount?: number;
  /** Name of the dead-letter queue (created if missing). */
  deadLetterQueue?: string;
  /** FIFO: a message sent without a deduplication ID is deduplicated by its body. Off by default, as in SQS. */
  contentBasedDeduplication?: boolean;
  /**
   * FIFO: whether a deduplication ID is remembered for the whole queue (SQS's default) or per message
   * group (high-throughput mode, what the stack's queues use).
   */
  deduplicationScope?: 'queue' | 'messageGroup';
}

interface StoredMessage {
  messageId: string;
  body: string;
  groupId?: string;
  deduplicationId?: string;
  sentAt: number;
  sequence: number;
  receiveCount: number;
  firstReceivedAt?: number;
  visibleAt: number;
  receiptHandle?: string;
}

interface FakeQueue {
  name: string;
  arn: string;
  url: string;
  options: Required<Omit<FakeQueueOptions, 'deadLetterQueue'>> & { deadLetterQueue?: string };
  messages: StoredMessage[];
  /** Deduplication key (the ID, prefixed by the group with scope `messageGroup`) -> when it was first sent. */
  dedup: Map<string, number>;
}

const DEDUP_WINDOW_MS = 5 * 60_000;
/** How often a waiting long poll looks again (real time). */
const LONG_POLL_CHECK_MS = 10;
const ACCOUNT = '000000000000';

export class FakeSqs implements SqsPort, SqsFifoPort, SqsReceiverPort {
  private readonly queues = new Map<string, FakeQueue>();
  private sequence = 0;
  private handleCounter = 0;
  readonly calls = new Map<string, number>();
  /** Entries to refuse on the next SendMessageBatch calls (code per entry index), for tests. */
  readonly refuseNextSends: string[][] = [];

  constructor(
    private readonly clock: Clock,
    private readonly region = 'eu-west-1',
  ) {}

  createQueue(name: string, options: FakeQueueOptions = {}): { url: string; arn: string } {
    const fifo = options.fifo ?? name.endsWith('.fifo');
    if (options.deadLetterQueue && !this.queues.has(options.deadLetterQueue)) {
      // SQS wants a FIFO queue's DLQ to be FIFO too; it inherits nothing else.
      this.createQueue(options.deadLetterQueue, { fifo });
    }
    const queue: FakeQueue = {
      name,
      arn: `arn:aws:sqs:${this.region}:${ACCOUNT}:${name}`,
      url: `https://sqs.${this.region}.amazonaws.com/${ACCOUNT}/${name}`,
      options: {
        fifo,
        visibilityTimeoutSeconds: options.visibilityTimeoutSeconds ?? 30,
        maxReceiveCount: options.maxReceiveCount ?? 5,
        deadLetterQueue: options.deadLetterQueue,
        contentBasedDeduplication: options.contentBasedDeduplication ?? false,
        deduplicationScope: options.deduplicationScope ?? 'queue',
      },
      messages: [],
      dedup: new Map(),
    };
    this.queues.set(name, queue);
    return { url: queue.url, arn: queue.arn };
  }

  async sendKeys(queueUrl: string, messages: readonly KeyMessage[]): Promise<SendFailure[]> {
    return this.sendAll(queueUrl, messages, (message) => ({
      body: JSON.stringify(message),
      groupId: messageGroupId(message),
      deduplicationId: messageDeduplicationId(message),
    }));
  }

  async sendFifo(queueUrl: string, messages: readonly FifoMessage[]): Promise<SendFailure<FifoMessage>[]> {
    return this.sendAll(queueUrl, messages, (message) => message);
  }

  private sendAll<M>(queueUrl: string, messages: readonly M[], toFifo: (message: M) => FifoMessage): SendFailure<M>[] {
    const failures: SendFailure<M>[] = [];
    for (let i = 0; i < messages.length; i += 10) {
      this.count('SendMessageBatch');
      const refused = this.refuseNextSends.shift() ?? [];
      messages.slice(i, i + 10).forEach((message, index) => {
        const code = refused[index];
        if (code) failures.push({ message, code, reason: 'refused by the fake' });
        else {
          const { body, groupId, deduplicationId } = toFifo(message);
          this.send(this.byUrl(queueUrl).name, body, { groupId, deduplicationId });
        }
      });
    }
    return failures;
  }

  /**
   * Send one raw body (what an EventBridge rule delivers to a standard queue). On a FIFO queue the
   * group ID is required, and so is a deduplication ID unless the queue deduplicates by content: SQS
   * refuses the message otherwise. A repeat within 5 minutes of the first send is accepted and dropped,
   * even when the first was received and deleted meanwhile (SQS keeps tracking the ID).
   * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-key-terms.html
   */
  send(queueName: string, body: string, ids: { groupId?: string; deduplicationId?: string } = {}): string | undefined {
    const queue = this.byName(queueName);
    const now = this.clock.now();
    let deduplicationId = ids.deduplicationId;
    if (queue.options.fifo) {
      if (!ids.groupId) throw sqsError('MissingParameter', 'The request must contain the parameter MessageGroupId.');
      if (deduplicationId === undefined && !queue.options.contentBasedDeduplication) {
        throw sqsError(
          'InvalidParameterValue',
          'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly',
        );
      }
      deduplicationId ??= createHash('sha256').update(body).digest('hex');
      const key =
        queue.options.deduplicationScope === 'messageGroup' ? `${ids.groupId}\n${deduplicationId}` : deduplicationId;
      const seen = queue.dedup.get(key);
      if (seen !== undefined && now - seen < DEDUP_WINDOW_MS) return undefined; // accepted, not delivered twice
      queue.dedup.set(key, now);
    }
    const messageId = `msg-${++this.sequence}`;
    queue.messages.push({
      messageId,
      body,
      groupId: ids.groupId,
      deduplicationId,
      sentAt: now,
      sequence: this.sequence,
      receiveCount: 0,
      visibleAt: now,
    });
    return messageId;
  }

  /**
   * By queue name and a count: up to `max` messages as Lambda records at once (what `pump` hands a handler).
   * By queue URL and options: SqsReceiverPort's long poll, which waits in real time (the fake's clock has no
   * timers) up to `waitSeconds` for a message to be sent or to become visible, and rejects with an AbortError
   * once `signal` aborts, as the SDK does. Both honour FIFO groups and redrive.
   */
  receive(queueName: string, max?: number): SQSRecord[];
  receive(queueUrl: string, options: ReceiveOptions): Promise<ReceivedMessage[]>;
  receive(queue: string, maxOrOptions: number | ReceiveOptions = 10): SQSRecord[] | Promise<ReceivedMessage[]> {
    if (typeof maxOrOptions === 'object') return this.longPoll(queue, maxOrOptions);
    this.count('ReceiveMessage');
    return this.take(this.byName(queue), maxOrOptions);
  }

  async delete(queueUrl: string, receiptHandles: readonly string[]): Promise<void> {
    const queue = this.byUrl(queueUrl);
    for (let i = 0; i < receiptHandles.length; i += 10) this.count('DeleteMessageBatch');
    // A handle the queue no longer knows (deleted, or received again since) changes nothing, as in SQS.
    const handles = new Set(receiptHandles);
    queue.messages = queue.messages.filter((m) => !m.receiptHandle || !handles.has(m.receiptHandle));
  }

  private async longPoll(queueUrl: string, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    const queue = this.byUrl(queueUrl);
    this.count('ReceiveMessage');
    const max = Math.min(MAX_RECEIVE_MESSAGES, Math.max(1, options.max));
    const deadline = Date.now() + Math.min(MAX_WAIT_SECONDS, Math.max(0, options.waitSeconds)) * 1000;
    for (;;) {
      options.signal?.throwIfAborted();
      const records = this.take(queue, max);
      if (records.length > 0 || Date.now() >= deadline) {
        return records.map((r) => ({
          messageId: r.messageId,
          body: r.body,
          receiptHandle: r.receiptHandle,
          receiveCount: Number(r.attributes.ApproximateReceiveCount),
        }));
      }
      await waitOrAbort(Math.min(LONG_POLL_CHECK_MS, deadline - Date.now()), options.signal);
    }
  }

  /** Up to `max` visible messages, honouring FIFO groups and redrive. */
  private take(queue: FakeQueue, max: number): SQSRecord[] {
    const now = this.clock.now();
    const busyGroups = new Set(
      queue.messages.filter((m) => m.receiptHandle && m.visibleAt > now && m.groupId).map((m) => m.groupId!),
    );
    const out: SQSRecord[] = [];
    for (const message of [...queue.messages]) {
      if (out.length >= max) break;
      if (message.visibleAt > now) continue;
      if (queue.options.fifo && message.groupId && busyGroups.has(message.groupId) && !isTaken(out, message)) {
        continue;
      }
      if (message.receiveCount >= queue.options.maxReceiveCount && queue.options.deadLetterQueue) {
        this.moveToDlq(queue, message);
        continue;
      }
      message.receiveCount++;
      message.firstReceivedAt ??= now;
      message.receiptHandle = `rh-${++this.handleCounter}`;
      message.visibleAt = now + queue.options.visibilityTimeoutSeconds * 1000;
      if (message.groupId) busyGroups.add(message.groupId);
      out.push(this.toRecord(queue, message));
    }
    return out;
  }

  async changeVisibility(queueArn: string, entries: readonly VisibilityChange[]): Promise<void> {
    const queue = [...this.queues.values()].find((q) => q.arn === queueArn);
    if (!queue) throw new Error(`FakeSqs: no queue ${queueArn}`);
    for (let i = 0; i < entries.length; i += 10) this.count('ChangeMessageVisibilityBatch');
    const now = this.clock.now();
    for (const entry of entries) {
      const message = queue.messages.find((m) => m.receiptHandle === entry.receiptHandle);
      // ReceiptHandleIsInvalid (deleted, or received again since) and MessageNotInflight (its visibility
      // timeout already ran out): SQS changes nothing, and the adapter treats both as settled.
      if (!message || message.visibleAt <= now) continue;
      const seconds = Math.max(0, Math.min(MAX_VISIBILITY_SECONDS, entry.visibilityTimeoutSeconds));
      message.visibleAt = now + seconds * 1000;
    }
  }

  deleteMessage(queueName: string, receiptHandle: string): void {
    this.count('DeleteMessage');
    const queue = this.byName(queueName);
    queue.messages = queue.messages.filter((m) => m.receiptHandle !== receiptHandle);
  }

  /**
   * One poll of the Lambda event source mapping: receive a batch, invoke the handler, delete every
   * record not reported as a batch item failure. A handler that throws fails the whole batch. `lost`, asked once
   * the handler is done, says the invocation's answer never reached the mapping (a crashed or timed-out Lambda):
   * then nothing is deleted, and every record comes back after its visibility timeout.
   */
  async pump(
    queueName: string,
    handler: (records: SQSRecord[]) => Promise<SQSBatchResponse | undefined>,
    batchSize = 10,
    lost: () => boolean = () => false,
  ): Promise<number> {
    const records = this.receive(queueName, batchSize);
    if (records.length === 0) return 0;
    let failed: Set<string>;
    try {
      const response = await handler(records);
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch {
      failed = new Set(records.map((r) => r.messageId));
    }
    if (lost()) return records.length;
    for (const record of records)
      if (!failed.has(record.messageId)) this.deleteMessage(queueName, record.receiptHandle);
    return records.length;
  }

  /** Messages waiting or in flight. */
  depth(queueName: string): number {
    return this.byName(queueName).messages.length;
  }

  bodies(queueName: string): string[] {
    return this.byName(queueName).messages.map((m) => m.body);
  }

  /** Seconds until the next message of the queue becomes visible (undefined when empty). */
  nextVisibleInMs(queueName: string): number | undefined {
    const messages = this.byName(queueName).messages;
    if (messages.length === 0) return undefined;
    return Math.max(0, Math.min(...messages.map((m) => m.visibleAt)) - this.clock.now());
  }

  callCount(operation: string): number {
    return this.calls.get(operation) ?? 0;
  }

  urlOf(queueName: string): string {
    return this.byName(queueName).url;
  }

  arnOf(queueName: string): string {
    return this.byName(queueName).arn;
  }

  private moveToDlq(queue: FakeQueue, message: StoredMessage): void {
    queue.messages = queue.messages.filter((m) => m !== message);
    const dlq = this.byName(queue.options.deadLetterQueue!);
    dlq.messages.push({ ...message, receiptHandle: undefined, visibleAt: this.clock.now(), receiveCount: 0 });
  }

  private toRecord(queue: FakeQueue, m: StoredMessage): SQSRecord {
    const attributes: SQSRecord['attributes'] = {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(m.sentAt),
      SenderId: 'AIDAFAKE',
      ApproximateFirstReceiveTimestamp: String(m.firstReceivedAt),
    };
    if (queue.options.fifo) {
      attributes.MessageGroupId = m.groupId;
      attributes.MessageDeduplicationId = m.deduplicationId;
      attributes.SequenceNumber = String(m.sequence);
    }
    return {
      messageId: m.messageId,
      receiptHandle: m.receiptHandle!,
      body: m.body,
      attributes,
      messageAttributes: {},
      md5OfBody: createHash('md5').update(m.body).digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: queue.arn,
      awsRegion: this.region,
    };
  }

  private byName(name: string): FakeQueue {
    const queue = this.queues.get(name);
    if (!queue) throw new Error(`FakeSqs: no queue named ${name}`);
    return queue;
  }

  private byUrl(url: string): FakeQueue {
    const queue = [...this.queues.values()].find((q) => q.url === url);
    if (!queue)
      throw Object.assign(new Error(`The specified queue does not exist: ${url}`), { name: 'QueueDoesNotExist' });
    return queue;
  }

  private count(operation: string): void {
    this.calls.set(operation, (this.calls.get(operation) ?? 0) + 1);
  }
}

/** An error shaped like the SDK's service exceptions (name = the AWS error code). */
function sqsError(code: string, message: string): Error {
  return Object.assign(new Error(message), { name: code });
}

function isTaken(out: SQSRecord[], message: StoredMessage): boolean {
  // A FIFO batch may carry several messages of one group, in order, if none is in flight elsewhere.
  return out.some((r) => r.attributes.MessageGroupId === message.groupId);
}

/** Resolves after `ms`, or rejects with the signal's reason (an AbortError) as soon as it aborts. */
function waitOrAbort(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
