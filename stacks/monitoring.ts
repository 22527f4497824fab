import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  type IWidget,
  SearchExpression,
  TextWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { MetricName } from '../shared/observability/metrics.ts';
import { METRICS_NAMESPACE } from '../shared/observability/powertools.ts';
import type { ControlPlaneContext } from './context.ts';

export interface MonitoredQueue {
  /** `node`, `node-lifecycle`, `ec2-events`. */
  label: string;
  queue: IQueue;
  deadLetterQueue: IQueue;
  /** Alarm when the oldest message is older than this. */
  ageAlarmSeconds: number;
}

/**
 * The dimension names each EMF metric is emitted with (shared/queue/runner.ts,
 * shared/observability/aws-call-metrics.ts, functions/ec2-events/router.ts), plus `service`, which
 * Powertools adds to every metric (and which the AWS call metrics set to the AWS service).
 * A search schema must list a metric's dimension names exactly.
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/search-expression-syntax.html
 */
const EMF_DIMENSIONS = {
  [MetricName.Reconciles]: ['reconciler', 'result'],
  [MetricName.ReconcileErrors]: ['errorClass', 'reconciler'],
  [MetricName.TerminalErrors]: ['reconciler'],
  [MetricName.Requeues]: ['reconciler'],
  [MetricName.ReconcileDuration]: ['reconciler'],
  [MetricName.AwsCalls]: ['awsService', 'operation'],
  [MetricName.AwsThrottles]: ['awsService', 'operation'],
  [MetricName.Ec2Events]: ['type'],
  [MetricName.UnknownInstanceEvents]: ['type'],
  [MetricName.KeysSent]: [],
  [MetricName.KeySendFailures]: [],
} as const satisfies Partial<Record<MetricName, readonly string[]>>;

type DashboardMetric = keyof typeof EMF_DIMENSIONS;

function emf(
  metric: DashboardMetric,
  statistic: 'Sum' | 'p99',
  label: string,
  dimensions: readonly string[] = EMF_DIMENSIONS[metric],
): SearchExpression {
  const schema = [METRICS_NAMESPACE, ...[...dimensions, 'service'].sort()].join(',');
  return new SearchExpression({
    expression: `SEARCH('{${schema}} MetricName="${metric}"', '${statistic}', 300)`,
    label,
    period: Duration.minutes(5),
  });
}

/**
 * Alarms on every queue (its oldest message too old: keys are not being worked off) and every DLQ
 * (anything in it: a key gave up), and one dashboard of what the functions report (unless the stage turns it off).
 */
export class Monitoring extends Construct {
  readonly alarms: Alarm[] = [];
  /** Unless CCM_DASHBOARD=false. */
  readonly dashboard?: Dashboard;

  constructor(scope: Construct, ctx: ControlPlaneContext, queues: readonly MonitoredQueue[]) {
    super(scope, 'Monitoring');
    const topicArn = ctx.config.alarms.topicArn;
    const action = topicArn ? new SnsAction(Topic.fromTopicArn(this, 'AlarmTopic', topicArn)) : undefined;

    for (const q of queues) {
      const dlq = new Alarm(this, `${q.label}-dlq-not-empty`, {
        alarmName: ctx.name(`${q.label}-dlq-not-empty`),
        alarmDescription: `Messages in the ${q.label} DLQ: keys that exhausted their receives. Inspect, fix, then redrive them.`,
        metric: q.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: 0,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        // SQS stops reporting for idle queues; an empty, idle DLQ is the good case.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      const age = new Alarm(this, `${q.label}-oldest-message`, {
        alarmName: ctx.name(`${q.label}-oldest-message`),
        alarmDescription: `The oldest message on the ${q.label} queue is over ${q.ageAlarmSeconds} s old: keys are not being worked off.`,
        metric: q.queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }),
        threshold: q.ageAlarmSeconds,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      for (const alarm of [dlq, age]) {
        if (action) {
          alarm.addAlarmAction(action);
          alarm.addOkAction(action);
        }
        this.alarms.push(alarm);
      }
    }

    if (ctx.config.dashboard) {
      this.dashboard = new Dashboard(this, 'Dashboard', {
        dashboardName: ctx.name('control-plane'),
        widgets: dashboardWidgets(ctx, queues),
      });
    }
  }
}

/** The dashboard: reconciles, errors, AWS calls and throttles, durations, EC2 events, queue age and DLQ depth. */
function dashboardWidgets(ctx: ControlPlaneContext, queues: readonly MonitoredQueue[]): IWidget[][] {
  const graph = (title: string, left: IMetric[]) => new GraphWidget({ title, left, width: 12, height: 6 });
  return [
    [
      new TextWidget({
        markdown: `# ${ctx.name('control-plane')}\nReconciles, errors and AWS calls from the functions' EMF metrics (namespace \`${METRICS_NAMESPACE}\`); queue age and DLQ depth from SQS.`,
        width: 24,
        height: 2,
      }),
    ],
    [
      graph('Reconciles by reconciler and result', [emf(MetricName.Reconciles, 'Sum', '')]),
      graph('Reconcile errors, terminal errors, requeues', [
        emf(MetricName.ReconcileErrors, 'Sum', 'errors'),
        emf(MetricName.TerminalErrors, 'Sum', 'terminal'),
        emf(MetricName.Requeues, 'Sum', 'requeues'),
      ]),
    ],
    [
      ctx.config.awsCallMetrics === 'operation'
        ? graph('AWS calls by operation', [emf(MetricName.AwsCalls, 'Sum', '')])
        : graph('AWS calls by AWS service', [emf(MetricName.AwsCalls, 'Sum', '', ['awsService'])]),
      graph('AWS throttles by operation', [emf(MetricName.AwsThrottles, 'Sum', '')]),
    ],
    [
      graph('Reconcile duration p99 (ms)', [emf(MetricName.ReconcileDuration, 'p99', '')]),
      graph('EC2 events: received, unknown instances, keys sent, refused', [
        emf(MetricName.Ec2Events, 'Sum', 'received'),
        emf(MetricName.UnknownInstanceEvents, 'Sum', 'unknown instance'),
        emf(MetricName.KeysSent, 'Sum', 'keys sent'),
        emf(MetricName.KeySendFailures, 'Sum', 'keys refused'),
      ]),
    ],
    [
      graph(
        'Oldest message age (s)',
        queues.map((q) => q.queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum', label: q.label })),
      ),
      graph(
        'DLQ depth',
        queues.map((q) =>
          q.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum', label: q.label }),
        ),
      ),
    ],
  ];
}
