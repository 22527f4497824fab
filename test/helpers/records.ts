import type { SQSRecord } from 'aws-lambda';
import type { KeyMessage } from '../../shared/queue/message.ts';
import { messageDeduplicationId, messageGroupId } from '../../shared/queue/message.ts';

export const NODE_QUEUE_ARN = 'arn:aws:sqs:eu-west-1:111122223333:node.fifo';
let counter = 0;

/** An SQS FIFO record as the Lambda event source mapping delivers it. */
export function fifoRecord(
  body: KeyMessage | string,
  options: { receiveCount?: number; messageId?: string; queueArn?: string } = {},
): SQSRecord {
  const n = ++counter;
  const isKey = typeof body !== 'string';
  return {
    messageId: options.messageId ?? `m-${n}`,
    receiptHandle: `rh-${n}`,
    body: isKey ? JSON.stringify(body) : body,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: '1762071331000',
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: '1762071331050',
      MessageGroupId: isKey ? messageGroupId(body) : 'unknown',
      MessageDeduplicationId: isKey ? messageDeduplicationId(body) : `d-${n}`,
      SequenceNumber: String(n),
    },
    messageAttributes: {},
    md5OfBody: '00000000000000000000000000000000',
    eventSource: 'aws:sqs',
    eventSourceARN: options.queueArn ?? NODE_QUEUE_ARN,
    awsRegion: 'eu-west-1',
  };
}

export function nodeKey(name: string, resourceVersion?: string): KeyMessage {
  return { kind: 'Node', name, hint: resourceVersion ? { resourceVersion, eventType: 'MODIFIED' } : undefined };
}
