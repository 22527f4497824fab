import { Duration } from 'aws-cdk-lib';
import type { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { DeduplicationScope, FifoThroughputLimit, type IQueue, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { type FunctionSettings, VISIBILITY_TIMEOUT_FACTOR } from './config.ts';
import { type ControlPlaneContext, checkedName } from './context.ts';
import { allow } from './iam.ts';

export interface QueuePair {
  queue: Queue;
  deadLetterQueue: Queue;
}

/** A DLQ keeps messages for SQS's maximum, so what failed is still there to inspect and redrive. */
const DLQ_RETENTION = Duration.days(14);

/** Every queue: encrypted at rest with SQS-managed keys, and refusing requests not made over TLS. */
const COMMON = { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true } as const;

/**
 * FIFO high-throughput mode: deduplication and the throughput limit per message group, so keys
 * (groups) scale out instead of sharing the queue-wide 300 TPS.
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/high-throughput-fifo.html
 */
const HIGH_THROUGHPUT_FIFO = {
  fifo: true,
  deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
  fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
} as const;

function visibilityTimeout(settings: FunctionSettings): Duration {
  return Duration.seconds(settings.timeoutSeconds * VISIBILITY_TIMEOUT_FACTOR);
}

/**
 * A reconciler's workqueue (docs/architecture.md "The queue is the workqueue"): FIFO, grouped by key,
 * deduplicated by the sender's ID (never by content: two revisions of one key can have equal
 * bodies), and a FIFO DLQ after `maxReceiveCount` receives.
 */
export function fifoWorkQueue(
  scope: Construct,
  ctx: ControlPlaneContext,
  name: string,
  settings: FunctionSettings,
): QueuePair {
  const deadLetterQueue = new Queue(scope, 'DeadLetterQueue', {
    queueName: checkedName('queue', `${ctx.name(`${name}-dlq`)}.fifo`, ctx.stage),
    ...HIGH_THROUGHPUT_FIFO,
    ...COMMON,
    retentionPeriod: DLQ_RETENTION,
  });
  const queue = new Queue(scope, 'Queue', {
    queueName: checkedName('queue', `${ctx.name(name)}.fifo`, ctx.stage),
    ...HIGH_THROUGHPUT_FIFO,
    contentBasedDeduplication: false,
    ...COMMON,
    visibilityTimeout: visibilityTimeout(settings),
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
  });
  return { queue, deadLetterQueue };
}

/**
 * A standard queue for events that arrive without a key (EventBridge), short-lived: an EC2 event
 * minutes old is no longer news, and the resync (once built) is the safety net for lost ones.
 */
export function standardEventQueue(
  scope: Construct,
  ctx: ControlPlaneContext,
  name: string,
  settings: FunctionSettings,
  retention: Duration,
): QueuePair {
  const deadLetterQueue = new Queue(scope, 'DeadLetterQueue', {
    queueName: checkedName('queue', ctx.name(`${name}-dlq`), ctx.stage),
    ...COMMON,
    retentionPeriod: DLQ_RETENTION,
  });
  const queue = new Queue(scope, 'Queue', {
    queueName: checkedName('queue', ctx.name(name), ctx.stage),
    ...COMMON,
    retentionPeriod: retention,
    visibilityTimeout: visibilityTimeout(settings),
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
  });
  return { queue, deadLetterQueue };
}

/**
 * What a function needs on the queue it consumes. Lambda's poller uses the function's role to
 * receive, delete and read attributes; the workqueue runner also changes visibility to requeue.
 * https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html#events-sqs-permissions
 */
export function consumeQueue(queue: IQueue, options: { changesVisibility: boolean }): PolicyStatement {
  return allow(
    [
      'sqs:ReceiveMessage',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      ...(options.changesVisibility ? ['sqs:ChangeMessageVisibility'] : []),
    ],
    [queue.queueArn],
    'ConsumeOwnQueue',
  );
}

/** Sending keys to another component's queue. */
export function sendToQueues(queues: readonly IQueue[], sid = 'SendKeys'): PolicyStatement {
  return allow(
    ['sqs:SendMessage'],
    queues.map((q) => q.queueArn),
    sid,
  );
}
