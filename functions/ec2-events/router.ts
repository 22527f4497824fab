import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { errorMessage } from '../../shared/errors.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import type { SqsPort } from '../../shared/queue/sqs-port.ts';
import type { NodeIndex } from './node-index.ts';
import { type Ec2Event, parseEc2Event } from './parse.ts';

export interface RouterDeps {
  index: Pick<NodeIndex, 'nodeFor'>;
  sqs: Pick<SqsPort, 'sendKeys'>;
  /** Where each event type's Node keys go; a type without a queue is acknowledged and counted. */
  routes: Partial<Record<Ec2Event['type'], string>>;
  log: Log;
  metrics: MetricsPort;
}

/**
 * EventBridge cannot set a per-message group ID, so EC2 events land on a standard queue and this
 * function turns each into Node keys on the reconcilers' FIFO queues (docs/adr/0001). Unparseable
 * events and instances that are not Nodes of this cluster are acknowledged and counted, never
 * retried; a key SQS would not take fails only its own record, which is retried and then DLQ'd.
 */
export async function routeEc2Events(records: readonly SQSRecord[], deps: RouterDeps): Promise<SQSBatchResponse> {
  const outgoing = new Map<string, { record: SQSRecord; message: KeyMessage }[]>();
  const failures = new Set<string>();

  for (const record of records) {
    const parsed = parseEc2Event(record.body);
    if (!parsed.ok) {
      deps.metrics.count(MetricName.MalformedMessages, {
        reconciler: 'ec2-events',
        kind: parsed.unsupported ? 'unsupported' : 'malformed',
      });
      deps.log.warn('EC2 event acknowledged without action', { messageId: record.messageId, error: parsed.error });
      continue;
    }
    const event = parsed.event;
    deps.metrics.count(MetricName.Ec2Events, { type: event.type });
    const queueUrl = deps.routes[event.type];
    if (!queueUrl) {
      deps.log.info('EC2 event type not routed', { eventId: event.id, type: event.type });
      continue;
    }
    for (const instanceId of event.instanceIds) {
      let nodeName: string | undefined;
      try {
        nodeName = await deps.index.nodeFor(instanceId);
      } catch (err) {
        // Cannot reach the API server: retry the record, the event is not lost.
        deps.log.warn('could not resolve instance to a Node; will retry', { instanceId, error: errorMessage(err) });
        failures.add(record.messageId);
        continue;
      }
      if (!nodeName) {
        deps.metrics.count(MetricName.UnknownInstanceEvents, { type: event.type });
        deps.log.info('EC2 event about an instance that is not a Node of this cluster', {
          eventId: event.id,
          instanceId,
        });
        continue;
      }
      const batch = outgoing.get(queueUrl) ?? [];
      batch.push({
        record,
        message: { kind: 'Node', name: nodeName, hint: { eventType: 'EC2', source: event.type, eventId: event.id } },
      });
      outgoing.set(queueUrl, batch);
    }
  }

  for (const [queueUrl, entries] of outgoing) {
    let refused: Set<KeyMessage>;
    try {
      const failed = await deps.sqs.sendKeys(
        queueUrl,
        entries.map((e) => e.message),
      );
      refused = new Set(failed.map((f) => f.message));
      for (const f of failed) deps.log.warn('key not accepted by SQS', { queueUrl, code: f.code, reason: f.reason });
    } catch (err) {
      deps.log.warn('sending keys failed', { queueUrl, error: errorMessage(err) });
      refused = new Set(entries.map((e) => e.message));
    }
    for (const entry of entries) if (refused.has(entry.message)) failures.add(entry.record.messageId);
    deps.metrics.count(MetricName.KeysSent, {}, entries.length - refused.size);
    if (refused.size > 0) deps.metrics.count(MetricName.KeySendFailures, {}, refused.size);
  }
  return { batchItemFailures: [...failures].map((itemIdentifier) => ({ itemIdentifier })) };
}
