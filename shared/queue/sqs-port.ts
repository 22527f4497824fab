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

export interface VisibilityChange {
  receiptHandle: string;
  visibilityTimeoutSeconds: number;
}

export interface SendFailure {
  message: KeyMessage;
  code: string;
  reason: string;
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
