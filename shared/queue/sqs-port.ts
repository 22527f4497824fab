import type { KeyMessage } from './message.ts';

/** SQS as the controllers use it: send key messages to a FIFO queue, and delay a received message. */
export interface SqsPort {
  /**
   * Send key messages (group and deduplication IDs derived from each key), 10 per SendMessageBatch
   * call; entries SQS refuses are retried, and what still fails is returned.
   */
  sendKeys(queueUrl: string, messages: readonly KeyMessage[]): Promise<SendFailure[]>;
  /** Make received messages visible again after `seconds` (one ChangeMessageVisibilityBatch per 10). */
  changeVisibility(queueArn: string, entries: readonly VisibilityChange[]): Promise<void>;
}

/**
 * SQS as a consumer uses it outside Lambda, where no event source mapping receives and deletes for us: the
 * local runner's EC2 events poller (bin/ec2-events-poller.ts). Apart from SqsPort so that the many producers
 * (relay, router, resync, their test doubles) need not implement it.
 */
export interface SqsReceiverPort {
  /**
   * One ReceiveMessage: up to `max` messages (1-10), waiting up to `waitSeconds` (0-20) for the first one
   * (long polling). Each received message stays invisible for the queue's visibility timeout and comes back
   * unless deleted. `signal` cancels a waiting call: it then rejects, and nothing was received.
   * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html
   */
  receive(queueUrl: string, options: ReceiveOptions): Promise<ReceivedMessage[]>;
  /**
   * Delete received messages by their receipt handles (one DeleteMessageBatch per 10). A handle SQS no longer
   * knows is no failure: the message is gone already, or was received again and is someone else's to delete.
   * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessageBatch.html
   */
  delete(queueUrl: string, receiptHandles: readonly string[]): Promise<void>;
}

export interface ReceiveOptions {
  waitSeconds: number;
  max: number;
  signal?: AbortSignal;
}

export interface ReceivedMessage {
  messageId: string;
  body: string;
  receiptHandle: string;
  /** ApproximateReceiveCount: 1 on the first delivery. */
  receiveCount: number;
}

/** SQS's bounds for ReceiveMessage: at most 10 messages, long polling up to 20 s. */
export const MAX_RECEIVE_MESSAGES = 10;
export const MAX_WAIT_SECONDS = 20;

export interface VisibilityChange {
  receiptHandle: string;
  visibilityTimeoutSeconds: number;
}

export interface SendFailure<M = KeyMessage> {
  message: M;
  code: string;
  reason: string;
}

/** A FIFO message that is no key message: its sender derives the group and deduplication IDs. */
export interface FifoMessage {
  body: string;
  groupId: string;
  deduplicationId: string;
}

/**
 * Sending FIFO messages other than keys (the interruption notice, shared/queue/interruption.ts), batched and
 * retried as `SqsPort.sendKeys`; what still fails is returned.
 */
export interface SqsFifoPort {
  sendFifo(queueUrl: string, messages: readonly FifoMessage[]): Promise<SendFailure<FifoMessage>[]>;
}

/** Visibility timeout is limited to 12 hours by SQS. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/** `arn:aws:sqs:<region>:<account>:<name>` -> the queue URL on the SDK's configured endpoint. */
export function queueUrlFromArn(arn: string, endpoint?: string): string {
  const parts = arn.split(':');
  if (parts.length !== 6 || parts[0] !== 'arn' || parts[2] !== 'sqs') throw new Error(`not an SQS queue ARN: ${arn}`);
  const [, partition, , region, account, name] = parts;
  const base = endpoint ?? `https://sqs.${region}.${partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com'}`;
  return `${base.replace(/\/$/, '')}/${account}/${name}`;
}
