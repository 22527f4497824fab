import type { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { FunctionName } from './config.ts';
import type { ControlPlaneContext } from './context.ts';
import { ControllerFunction } from './function.ts';
import { consumeQueue, fifoWorkQueue } from './queues.ts';

/** Lambda hands a function at most this many messages per invocation. */
export const BATCH_SIZE = 10;

export interface ReconcilerProps {
  description: string;
  /** What the reconcile itself calls in AWS (its queue and Kubernetes access are added here). */
  permissions: PolicyStatement[];
  environment?: Record<string, string>;
}

/**
 * A reconciler: its FIFO workqueue and DLQ, the function, and the event source mapping between
 * them. Batches of 10 with partial batch responses, so one failing key never retries the others;
 * the mapping's maximum concurrency bounds how hard a burst hits EC2 and the API server.
 * (No batching window: SQS FIFO event sources do not support one.)
 * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html
 */
export class Reconciler extends Construct {
  readonly name: FunctionName;
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly handler: ControllerFunction;

  constructor(scope: Construct, ctx: ControlPlaneContext, name: FunctionName, props: ReconcilerProps) {
    super(scope, constructId(name));
    this.name = name;
    const settings = ctx.config.functions[name];
    ({ queue: this.queue, deadLetterQueue: this.deadLetterQueue } = fifoWorkQueue(this, ctx, name, settings));
    this.handler = new ControllerFunction(this, 'Handler', ctx, {
      name,
      description: props.description,
      ...(props.environment ? { environment: props.environment } : {}),
      statements: [...props.permissions, consumeQueue(this.queue, { changesVisibility: true })],
    });
    new EventSourceMapping(this, 'Source', {
      target: this.handler.function,
      eventSourceArn: this.queue.queueArn,
      batchSize: BATCH_SIZE,
      reportBatchItemFailures: true,
      maxConcurrency: settings.maxConcurrency,
    });
  }
}

/** Adding a reconciler to the control plane is one call. */
export function reconciler(
  scope: Construct,
  ctx: ControlPlaneContext,
  name: FunctionName,
  props: ReconcilerProps,
): Reconciler {
  return new Reconciler(scope, ctx, name, props);
}

/** `node-lifecycle` -> `NodeLifecycle`: construct IDs (and so logical IDs) stay readable. */
export function constructId(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
