import { Duration } from 'aws-cdk-lib';
import { type EventPattern, type IRuleTarget, Rule } from 'aws-cdk-lib/aws-events';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  EC2_EVENT_PATTERNS,
  EC2_EVENT_RULE_IDS,
  type Ec2EventPattern,
  INTERRUPTION_EVENT_PATTERNS,
} from '../shared/events/ec2-event-patterns.ts';
import type { ControlPlaneContext } from './context.ts';
import { ControllerFunction } from './function.ts';
import { consumeQueue, sendToQueues, standardEventQueue } from './queues.ts';
import { BATCH_SIZE } from './reconciler.ts';

/**
 * An EC2 event pattern (shared/events/ec2-event-patterns.ts, which the local plumbing `npm run events:create`
 * uses too) in CDK's form, which spells `detail-type` as `detailType` and renders it back in the same key
 * order, so the template holds the shared pattern as it is. Copies, so CDK never holds the shared constants.
 */
function toCdkEventPattern(pattern: Ec2EventPattern): EventPattern {
  return {
    source: [...pattern.source],
    detailType: [...pattern['detail-type']],
    ...(pattern.detail
      ? { detail: Object.fromEntries(Object.entries(pattern.detail).map(([key, values]) => [key, [...values]])) }
      : {}),
  };
}

export interface Ec2EventsProps {
  /** The lifecycle reconciler's queue: state changes become its Node keys. */
  lifecycleQueue: IQueue;
  /**
   * The interruption controller's queue, when it is deployed: the router sends it interruption notices, and the
   * rules add the events only that controller needs (INTERRUPTION_EVENT_PATTERNS).
   */
  interruptionQueue?: IQueue;
}

/**
 * EventBridge rules -> one standard queue -> the `ec2-events` router, which turns instance IDs
 * into Node keys on the reconcilers' FIFO queues (docs/adr/0001: EventBridge cannot set a
 * per-key message group) and, with the interruption controller, into interruption notices on its queue.
 */
export class Ec2Events extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly rules: Rule[];
  readonly router: ControllerFunction;

  constructor(scope: Construct, ctx: ControlPlaneContext, props: Ec2EventsProps) {
    super(scope, 'Ec2Events');
    const settings = ctx.config.functions['ec2-events'];
    ({ queue: this.queue, deadLetterQueue: this.deadLetterQueue } = standardEventQueue(
      this,
      ctx,
      'ec2-events',
      settings,
      Duration.seconds(ctx.config.ec2Events.retentionSeconds),
    ));

    // A target that only names the queue: aws-events-targets' SqsQueue would also grant EventBridge
    // GetQueueAttributes and GetQueueUrl, which delivery does not need.
    const target: IRuleTarget = { bind: () => ({ arn: this.queue.queueArn }) };
    // One rule per event type on the default bus (docs/architecture.md "How events flow").
    // Without the interruption controller, nothing would use those events: no rule for them, and the
    // rules of a stage without it stay exactly what they were.
    const patterns: [string, Ec2EventPattern][] = [
      ...EC2_EVENT_RULE_IDS.map((id): [string, Ec2EventPattern] => [id, EC2_EVENT_PATTERNS[id]]),
      ...(props.interruptionQueue ? Object.entries(INTERRUPTION_EVENT_PATTERNS) : []),
    ];
    this.rules = patterns.map(([id, pattern]) => {
      return new Rule(this, id, {
        description: `${ctx.name('ec2-events')}: ${pattern['detail-type'][0]}`,
        eventPattern: toCdkEventPattern(pattern),
        targets: [target],
      });
    });
    // Only these rules may send, so no other rule in the account (or another account's bus) can
    // inject "events" that make the router touch Nodes.
    this.queue.addToResourcePolicy(
      new PolicyStatement({
        sid: 'EventBridgeRules',
        effect: Effect.ALLOW,
        principals: [new ServicePrincipal('events.amazonaws.com')],
        actions: ['sqs:SendMessage'],
        resources: [this.queue.queueArn],
        conditions: { ArnEquals: { 'aws:SourceArn': this.rules.map((r) => r.ruleArn) } },
      }),
    );

    this.router = new ControllerFunction(this, 'Router', ctx, {
      name: 'ec2-events',
      description: 'EC2 events -> Node keys on the reconciler queues',
      environment: {
        NODE_LIFECYCLE_QUEUE_URL: props.lifecycleQueue.queueUrl,
        ...(props.interruptionQueue ? { INTERRUPTION_QUEUE_URL: props.interruptionQueue.queueUrl } : {}),
        NODE_INDEX_TTL_SECONDS: String(ctx.config.nodeIndexTtlSeconds),
      },
      statements: [
        consumeQueue(this.queue, { changesVisibility: false }),
        sendToQueues([props.lifecycleQueue, ...(props.interruptionQueue ? [props.interruptionQueue] : [])]),
      ],
    });
    new EventSourceMapping(this, 'Source', {
      target: this.router.function,
      eventSourceArn: this.queue.queueArn,
      batchSize: BATCH_SIZE,
      reportBatchItemFailures: true,
      maxConcurrency: settings.maxConcurrency,
    });
  }
}
