import {
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import type { LocalLambda } from './lambda.ts';

/**
 * Lambda's SQS event source mapping, small, for one queue (FIFO, or the EC2 events' standard one) and one function (stacks/reconciler.ts: batches
 * of 10, ReportBatchItemFailures): it receives up to 10 messages, invokes the function with them as SQS event
 * records, and deletes what succeeded. What the function names in `batchItemFailures` stays on the queue, and so
 * does every later message of its message group in the batch (FIFO order: a group never overtakes its failed
 * message); they come back when their visibility ends: the queue's timeout, or what the runner set with
 * ChangeMessageVisibility. A function that throws fails the whole batch.
 * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html
 */

export const BATCH_SIZE = 10;

export interface MappingStats {
  invocations: number;
  records: number;
  /** Records named in batchItemFailures (or in a batch whose invocation threw). */
  failedRecords: number;
  /** Records kept back only because an earlier message of their group failed. */
  heldBack: number;
  deleted: number;
  errors: string[];
}

export interface EventSourceMapping {
  readonly stats: MappingStats;
  stop(): Promise<void>;
}

export interface MappingTarget {
  queueUrl: string;
  queueArn: string;
  lambda: Pick<LocalLambda, 'invoke' | 'name'>;
}

export function startEventSourceMapping(sqs: SQSClient, { queueUrl, queueArn, lambda }: MappingTarget) {
  const stats: MappingStats = { invocations: 0, records: 0, failedRecords: 0, heldBack: 0, deleted: 0, errors: [] };
  let stopped = false;
  const poll = async () => {
    while (!stopped) {
      let messages: Message[];
      try {
        const received = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: BATCH_SIZE,
            // Short long-polls, so stop() returns quickly.
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        messages = received.Messages ?? [];
      } catch (err) {
        if (stopped) return;
        stats.errors.push(`receive: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (messages.length === 0) continue;
      const records = messages.map((m) => toRecord(m, queueArn));
      stats.invocations++;
      stats.records += records.length;
      let failed: Set<string>;
      try {
        const response = await lambda.invoke({ Records: records } satisfies SQSEvent);
        failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      } catch (err) {
        stats.errors.push(`invoke ${lambda.name}: ${String(err)}`);
        failed = new Set(records.map((r) => r.messageId));
      }
      stats.failedRecords += records.filter((r) => failed.has(r.messageId)).length;
      const doneRecords = succeeded(records, failed);
      stats.heldBack += records.length - failed.size - doneRecords.length;
      if (doneRecords.length > 0) {
        const out = await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: doneRecords.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
          }),
        );
        stats.deleted += out.Successful?.length ?? 0;
        for (const f of out.Failed ?? []) stats.errors.push(`delete: ${f.Code} ${f.Message}`);
      }
    }
  };
  const running = poll();
  return {
    stats,
    async stop() {
      stopped = true;
      await running;
    },
  } satisfies EventSourceMapping;
}

/**
 * The records to delete: those not failed, and not after a failed record of their own message group (a FIFO
 * group's later messages must not be acknowledged before the one that failed is).
 */
export function succeeded(records: readonly SQSRecord[], failed: ReadonlySet<string>): SQSRecord[] {
  const blocked = new Set<string>();
  const done: SQSRecord[] = [];
  for (const record of records) {
    // A standard queue's messages have no group and no order: a failure holds back only itself.
    const group = record.attributes.MessageGroupId;
    if (failed.has(record.messageId)) {
      if (group !== undefined) blocked.add(group);
    } else if (group === undefined || !blocked.has(group)) done.push(record);
  }
  return done;
}

/** A received message as Lambda hands it to a function: an SQS event record. */
function toRecord(message: Message, queueArn: string): SQSRecord {
  const a = message.Attributes ?? {};
  const attributes: SQSRecord['attributes'] = {
    ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
    SentTimestamp: a.SentTimestamp ?? String(Date.now()),
    SenderId: a.SenderId ?? 'AIDAE2E',
    ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    ...(a.SequenceNumber ? { SequenceNumber: a.SequenceNumber } : {}),
    ...(a.MessageGroupId ? { MessageGroupId: a.MessageGroupId } : {}),
    ...(a.MessageDeduplicationId ? { MessageDeduplicationId: a.MessageDeduplicationId } : {}),
  };
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes,
    messageAttributes: toRecordAttributes(message.MessageAttributes ?? {}),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(':')[3]!,
  };
}

function toRecordAttributes(attributes: Record<string, MessageAttributeValue>): SQSMessageAttributes {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, v]) => [
      name,
      {
        dataType: v.DataType ?? 'String',
        ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
        ...(v.BinaryValue !== undefined ? { binaryValue: Buffer.from(v.BinaryValue).toString('base64') } : {}),
        stringListValues: [],
        binaryListValues: [],
      },
    ]),
  );
}
