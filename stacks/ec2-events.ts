import { Duration } from 'aws-cdk-lib';
import { type EventPattern, type IRuleTarget, Rule } from 'aws-cdk-lib/aws-events';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type { IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ControlPlaneContext } from './context.ts';
import { ControllerFunction } from './function.ts';
import { consumeQueue, sendToQueues, standardEventQueue } from './queues.ts';
import { BATCH_SIZE } from './reconciler.ts';

/**
 * The EC2 events the control plane listens to, on the default bus (docs/architecture.md "How events flow").
 * Each pattern names its source and detail-type exactly; state changes are not filtered by state
 * because the router decides what each state means.
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
 * https://docs.aws.amazon.com/health/latest/ug/cloudwatch-events-health.html
 */
export const EC2_EVENT_RULES = {
  StateChange: { source: ['aws.ec2'], detailType: ['EC2 Instance State-change Notification'] },
  SpotInterruption: { source: ['aws.ec2'], detailType: ['EC2 Spot Instance Interruption Warning'] },
  RebalanceRecommendation: { source: ['aws.ec2'], detailType: ['EC2 Instance Rebalance Recommendation'] },
  ScheduledChange: {
    source: ['aws.health'],
    detailType: ['AWS Health Event'],
    detail: { service: ['EC2'], eventTypeCategory: ['scheduledChange'] },
  },
} as const satisfies Record<string, EventPattern>;

export interface Ec2EventsProps {
  /** The lifecycle reconciler's queue: state changes become its Node keys. */
  lifecycleQueue: IQueue;
}

/**
 * EventBridge rules -> one standard queue -> the `ec2-events` router, which turns instance IDs
 * into Node keys on the reconcilers' FIFO queues (docs/adr/0001: EventBridge cannot set a
 * per-key message group).
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
    this.rules = Object.entries(EC2_EVENT_RULES).map(
      ([id, eventPattern]) =>
        new Rule(this, id, {
          description: `${ctx.name('ec2-events')}: ${eventPattern.detailType[0]}`,
          eventPattern,
          targets: [target],
        }),
    );
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
        NODE_INDEX_TTL_SECONDS: String(ctx.config.nodeIndexTtlSeconds),
      },
      statements: [consumeQueue(this.queue, { changesVisibility: false }), sendToQueues([props.lifecycleQueue])],
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
