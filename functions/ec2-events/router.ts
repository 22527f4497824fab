import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { errorMessage } from '../../shared/errors.ts';
import type { Log } from '../../shared/observability/log.ts';
import { MetricName, type MetricsPort } from '../../shared/observability/metrics.ts';
import { InterruptionMessage } from '../../shared/queue/interruption.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import type { FifoMessage, SqsFifoPort, SqsPort } from '../../shared/queue/sqs-port.ts';
import { interruptionNotice, toFifoMessage } from './interruptions.ts';
import type { NodeIndex } from './node-index.ts';
import { type Ec2Event, parseEc2Event } from './parse.ts';

export interface RouterDeps {
  index: Pick<NodeIndex, 'nodeFor'>;
  sqs: Pick<SqsPort, 'sendKeys'>;
  /** Where each event type's Node keys go; a type without a queue is acknowledged and counted. */
  routes: Partial<Record<Ec2Event['type'], string>>;
  log: Log;
  metrics: MetricsPort;
  /**
   * The interruption FIFO queue (INTERRUPTION_QUEUE_URL): interruption events become interruption notices
   * there (shared/queue/interruption.ts). Absent: no notices, everything else as without it.
   */
  interruption?: { queueUrl: string; sqs: Pick<SqsFifoPort, 'sendFifo'> };
}

/** What one record sends: keys per queue, interruption notices. */
type Outgoing = {
  keys: Map<string, { record: SQSRecord; message: KeyMessage }[]>;
  notices: { record: SQSRecord; message: FifoMessage }[];
};

/**
 * EventBridge cannot set a per-message group ID, so EC2 events land on a standard queue and this
 * function turns each into Node keys on the reconcilers' FIFO queues (docs/adr/0001). Unparseable
 * events and instances that are not Nodes of this cluster are acknowledged and counted, never
 * retried; a key SQS would not take fails only its own record, which is retried and then DLQ'd.
 * With an interruption queue, interruption events also become interruption notices there
 * (shared/queue/interruption.ts, docs/keys.md "The interruption notice").
 */
export async function routeEc2Events(records: readonly SQSRecord[], deps: RouterDeps): Promise<SQSBatchResponse> {
  const outgoing: Outgoing = { keys: new Map(), notices: [] };
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
    const notices = deps.interruption !== undefined && event.instanceIds.some((id) => interruptionNotice(event, id));
    if (!queueUrl && !notices) {
      deps.log.info('EC2 event type not routed', { eventId: event.id, type: event.type });
      continue;
    }
    for (const instanceId of event.instanceIds) {
      if (!(await routeInstance(record, event, instanceId, queueUrl, outgoing, deps))) failures.add(record.messageId);
    }
  }

  await sendKeys(outgoing.keys, failures, deps);
  if (deps.interruption) await sendNotices(outgoing.notices, deps.interruption, failures, deps);
  return { batchItemFailures: [...failures].map((itemIdentifier) => ({ itemIdentifier })) };
}

/**
 * One instance of an event: its Node key to the event type's queue, its interruption notice to the interruption
 * queue. False when the record must be retried (the API server could not be asked).
 */
async function routeInstance(
  record: SQSRecord,
  event: Ec2Event,
  instanceId: string,
  queueUrl: string | undefined,
  outgoing: Outgoing,
  deps: RouterDeps,
): Promise<boolean> {
  let nodeName: string | undefined;
  try {
    nodeName = await deps.index.nodeFor(instanceId);
  } catch (err) {
    // Cannot reach the API server: retry the record, the event is not lost.
    deps.log.warn('could not resolve instance to a Node; will retry', { instanceId, error: errorMessage(err) });
    return false;
  }
  const notice = deps.interruption ? interruptionNotice(event, instanceId) : undefined;
  if (notice && (nodeName || notice.kind === 'asg-lifecycle-termination')) {
    // A lifecycle hook holds the instance in Terminating:Wait until someone completes it, Node or not (it may
    // register after the event, or never): it goes out keyed by the instance. The router cannot tell whose
    // instance it is (it reads no EC2); the controller must check the cluster tag before completing the hook.
    const candidate = nodeName
      ? { kind: 'Node', name: nodeName, notice }
      : { kind: 'Instance', name: instanceId, notice };
    const message = InterruptionMessage.safeParse(candidate);
    if (message.success) outgoing.notices.push({ record, message: toFifoMessage(message.data) });
    else {
      deps.metrics.count(MetricName.MalformedMessages, { reconciler: 'ec2-events', kind: 'interruption' });
      deps.log.warn('EC2 event makes no valid interruption notice', {
        eventId: event.id,
        error: message.error.message,
      });
    }
  }
  if (!nodeName) {
    deps.metrics.count(MetricName.UnknownInstanceEvents, { type: event.type });
    deps.log.info('EC2 event about an instance that is not a Node of this cluster', { eventId: event.id, instanceId });
    return true;
  }
  if (queueUrl) {
    const batch = outgoing.keys.get(queueUrl) ?? [];
    batch.push({
      record,
      message: { kind: 'Node', name: nodeName, hint: { eventType: 'EC2', source: event.type, eventId: event.id } },
    });
    outgoing.keys.set(queueUrl, batch);
  }
  return true;
}

async function sendKeys(outgoing: Outgoing['keys'], failures: Set<string>, deps: RouterDeps): Promise<void> {
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
}

/** As keys: a notice SQS would not take fails its record, which is retried (SQS drops what it has already). */
async function sendNotices(
  entries: Outgoing['notices'],
  target: NonNullable<RouterDeps['interruption']>,
  failures: Set<string>,
  deps: RouterDeps,
): Promise<void> {
  if (entries.length === 0) return;
  let refused: Set<FifoMessage>;
  try {
    const failed = await target.sqs.sendFifo(
      target.queueUrl,
      entries.map((e) => e.message),
    );
    refused = new Set(failed.map((f) => f.message));
    for (const f of failed)
      deps.log.warn('interruption notice not accepted by SQS', { code: f.code, reason: f.reason });
  } catch (err) {
    deps.log.warn('sending interruption notices failed', { queueUrl: target.queueUrl, error: errorMessage(err) });
    refused = new Set(entries.map((e) => e.message));
  }
  for (const entry of entries) if (refused.has(entry.message)) failures.add(entry.record.messageId);
  deps.metrics.count(MetricName.InterruptionNoticesSent, {}, entries.length - refused.size);
  if (refused.size > 0) deps.metrics.count(MetricName.KeySendFailures, { queue: 'interruption' }, refused.size);
}
