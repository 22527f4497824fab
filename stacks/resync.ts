import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ControlPlaneContext } from './context.ts';
import { ControllerFunction } from './function.ts';
import { ec2Describe } from './iam.ts';
import { sendToQueues } from './queues.ts';

/** A queue the resync feeds, and the setting its function reads the queue's URL from (shared/controllers.ts). */
export interface ResyncQueue {
  urlSetting: string;
  queue: IQueue;
}

/**
 * The level-triggered safety net: a schedule starts `functions/resync` every CCM_RESYNC_MINUTES,
 * which lists Nodes and Services and enqueues every key again (the route table's single key, the
 * service controller's and the IP address manager's garbage-collection keys included; Windows Nodes
 * to the IP address manager), the Nodes only when a sweep of the cluster's instances finds them out of step. It may
 * only send to those queues, and describe instances.
 */
export class Resync extends Construct {
  readonly handler: ControllerFunction;
  readonly schedule: Rule;

  constructor(scope: Construct, ctx: ControlPlaneContext, queues: readonly ResyncQueue[]) {
    super(scope, 'Resync');
    const environment = Object.fromEntries(queues.map((q) => [q.urlSetting, q.queue.queueUrl]));
    const targets = queues.map((q) => q.queue);
    this.handler = new ControllerFunction(this, 'Handler', ctx, {
      name: 'resync',
      description: 'every few minutes: Nodes out of step with EC2 and every LoadBalancer Service key again',
      environment,
      // DescribeInstances: the node sweep lists the cluster's instances once a round, so only Nodes out of step
      // with them go to the node and node-lifecycle queues (functions/resync/node-sweep.ts).
      statements: [sendToQueues(targets), ec2Describe('DescribeInstances')],
    });
    this.schedule = new Rule(this, 'Schedule', {
      description: `${ctx.name('resync')}: every ${ctx.config.resyncMinutes} minute(s)`,
      schedule: Schedule.rate(Duration.minutes(ctx.config.resyncMinutes)),
      // A failed round is retried by EventBridge; its keys carry the round's event ID, so SQS drops
      // the ones that were already accepted.
      targets: [new LambdaFunction(this.handler.function, { retryAttempts: 2, maxEventAge: Duration.minutes(10) })],
    });
  }
}
