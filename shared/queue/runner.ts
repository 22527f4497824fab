import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { Clock } from '../clock.ts';
import { ControllerError, errorMessage, RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import type { Log } from '../observability/log.ts';
import { MetricName, type MetricsPort } from '../observability/metrics.ts';
import { type KeyHint, keyString, type ObjectKey, parseKeyMessage } from './message.ts';
import { MAX_VISIBILITY_SECONDS, type SqsPort } from './sqs-port.ts';

/**
 * The SQS FIFO queue is the workqueue (docs/architecture.md "The queue is the workqueue"). This runner
 * gives a reconciler the workqueue's guarantees on top of a Lambda batch: each record parsed on its
 * own, several records of one key reconciled once, a failed key failing only its own records,
 * "try again later" as a visibility change rather than a sleep.
 *
 * Why not Powertools' SqsFifoPartialProcessor: it calls a handler per record, in order. We need the
 * records of a key coalesced into one reconcile, and a batch-wide observe step (one
 * DescribeInstances for every key of the batch), which a per-record handler cannot express. The
 * partial-batch response contract is the same one Powertools implements.
 */
export interface ReconcileResult {
  /** Reconcile the key again after this many seconds (e.g. waiting for a load balancer to be active). */
  requeueAfterSeconds?: number;
}

export interface ReconcileContext {
  /** Why the key was enqueued, oldest first; never trusted as state. */
  hints: KeyHint[];
  /**
   * What a queue whose messages carry more than a key delivered with it (a reconciler's own `parse`), in
   * message order: facts that exist only in the event (an interruption notice's deadline, a lifecycle hook's
   * token). Empty for key messages.
   */
  payloads: unknown[];
  /** Highest ApproximateReceiveCount among the key's records: 1 on the first attempt. */
  receiveCount: number;
}

export interface Reconciler<TDeps, TBatch = undefined> {
  /** Short name used in logs and metric dimensions: `node`, `node-lifecycle`, ... */
  readonly name: string;
  /**
   * Observe once what every key of the batch needs (batched AWS reads). Errors fail every key. `contexts[i]` is
   * what `reconcile` will get for `keys[i]` (the runner always passes them; a test calling it directly may not).
   */
  prepareBatch?(keys: ObjectKey[], deps: TDeps, contexts?: ReconcileContext[]): Promise<TBatch>;
  reconcile(
    key: ObjectKey,
    deps: TDeps,
    batch: TBatch,
    context: ReconcileContext,
  ): Promise<ReconcileResult | undefined>;
  /** Tell the user about a failure retrying cannot fix (an Event on the object, where it exists). */
  reportTerminal?(key: ObjectKey, error: TerminalError, deps: TDeps): Promise<void>;
  /** For a queue whose messages are not plain key messages: the key (and payload) of a body. */
  parse?(body: string): ParsedRecord;
  /**
   * Whether a parsed key is one this reconciler works on. A key that is not (another queue's key, sent to the
   * wrong queue) is acknowledged and counted as malformed: it would never mean anything here. Without it every key is.
   */
  accepts?(key: ObjectKey): boolean;
}

/** A message body as the runner groups it: its key, why it was sent, and what else it carries. */
export type ParsedRecord =
  | { ok: true; key: ObjectKey; hint?: KeyHint; payload?: unknown }
  | { ok: false; error: string };

function parseKeyRecord(body: string): ParsedRecord {
  const parsed = parseKeyMessage(body);
  if (!parsed.ok) return parsed;
  const { hint, ...key } = parsed.message;
  return hint ? { ok: true, key, hint } : { ok: true, key };
}

export interface RunnerDeps {
  log: Log;
  metrics: MetricsPort;
  queue: Pick<SqsPort, 'changeVisibility'>;
  clock: Clock;
  /** Jitter source in [0, 1); injected so tests are deterministic. */
  random?: () => number;
}

export interface BackoffPolicy {
  baseSeconds: number;
  throttledBaseSeconds: number;
  maxSeconds: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseSeconds: 2, throttledBaseSeconds: 10, maxSeconds: 300 };

/**
 * Capped exponential backoff by attempt, with "equal jitter" (half fixed, half random) so keys
 * throttled together do not come back together.
 */
export function backoffSeconds(
  attempt: number,
  throttled: boolean,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random = 0.5,
): number {
  const base = throttled ? policy.throttledBaseSeconds : policy.baseSeconds;
  const ceiling = Math.min(policy.maxSeconds, base * 2 ** Math.max(0, attempt - 1));
  return Math.max(1, Math.round(ceiling / 2 + (ceiling / 2) * random));
}

interface KeyGroup {
  key: ObjectKey;
  records: SQSRecord[];
  hints: KeyHint[];
  payloads: unknown[];
}

function contextOf(group: KeyGroup): ReconcileContext {
  return {
    hints: group.hints,
    payloads: group.payloads,
    receiveCount: Math.max(...group.records.map(receiveCount)),
  };
}

type Outcome =
  | { kind: 'done' }
  | { kind: 'requeue'; seconds: number }
  | { kind: 'retry'; error: Error; throttled: boolean }
  | { kind: 'terminal'; error: TerminalError };

export async function runBatch<TDeps, TBatch>(
  reconciler: Reconciler<TDeps, TBatch>,
  records: readonly SQSRecord[],
  deps: TDeps,
  runner: RunnerDeps,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
): Promise<SQSBatchResponse> {
  const dims = { reconciler: reconciler.name };
  const groups = groupByKey(reconciler, records, runner);
  const grouped = [...groups.values()].reduce((n, g) => n + g.records.length, 0);
  if (grouped > groups.size) runner.metrics.count(MetricName.CoalescedMessages, dims, grouped - groups.size);

  const keys = [...groups.values()].map((g) => g.key);
  const contexts = new Map([...groups.values()].map((g) => [g, contextOf(g)]));
  let batch: TBatch | undefined;
  let batchError: Error | undefined;
  if (reconciler.prepareBatch && keys.length > 0) {
    try {
      batch = await reconciler.prepareBatch(keys, deps, [...contexts.values()]);
    } catch (err) {
      batchError = asControllerError(err);
    }
  }

  const outcomes = await Promise.all(
    [...groups.values()].map(async (group): Promise<[KeyGroup, Outcome]> => {
      if (batchError) return [group, errorOutcome(batchError)];
      const started = runner.clock.now();
      try {
        const result = await reconciler.reconcile(group.key, deps, batch as TBatch, contexts.get(group)!);
        const seconds = result?.requeueAfterSeconds;
        return [group, seconds !== undefined && seconds > 0 ? { kind: 'requeue', seconds } : { kind: 'done' }];
      } catch (err) {
        return [group, errorOutcome(asControllerError(err))];
      } finally {
        runner.metrics.timing(MetricName.ReconcileDuration, runner.clock.now() - started, dims);
      }
    }),
  );

  const failures: SQSBatchResponse['batchItemFailures'] = [];
  const visibility: { receiptHandle: string; visibilityTimeoutSeconds: number }[] = [];
  for (const [group, outcome] of outcomes) {
    const key = keyString(group.key);
    const messageIds = group.records.map((r) => r.messageId);
    runner.metrics.count(MetricName.Reconciles, { ...dims, result: outcome.kind });
    if (outcome.kind === 'done') {
      runner.log.debug('reconciled', { reconciler: reconciler.name, key, messageIds });
      continue;
    }
    if (outcome.kind === 'terminal') {
      runner.metrics.count(MetricName.TerminalErrors, dims);
      runner.log.error('reconcile failed permanently; message acknowledged', {
        reconciler: reconciler.name,
        key,
        messageIds,
        error: outcome.error.message,
      });
      await reportTerminal(reconciler, group.key, outcome.error, deps, runner);
      continue;
    }
    // Requeue or retry: keep every record of the key (FIFO order within the group is preserved
    // because the whole group goes back) and delay it rather than sleeping in the function.
    const attempt = Math.max(...group.records.map(receiveCount));
    let seconds: number;
    if (outcome.kind === 'requeue') {
      seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(outcome.seconds));
      runner.metrics.count(MetricName.Requeues, dims);
      runner.log.info('requeued', { reconciler: reconciler.name, key, messageIds, afterSeconds: seconds });
    } else {
      seconds = backoffSeconds(attempt, outcome.throttled, policy, runner.random?.() ?? 0.5);
      runner.metrics.count(MetricName.ReconcileErrors, {
        ...dims,
        errorClass: outcome.throttled ? 'throttled' : 'retryable',
      });
      runner.log.warn('reconcile failed; will retry', {
        reconciler: reconciler.name,
        key,
        messageIds,
        attempt,
        retryInSeconds: seconds,
        error: outcome.error.message,
      });
    }
    // A failure keeps every record of the group (FIFO order within the group holds). A requeue is a
    // success that wants another look: the newest record alone carries the key forward, the older ones
    // are acknowledged, so a key waiting minutes for a load balancer does not pile up messages.
    const kept = outcome.kind === 'requeue' ? group.records.slice(-1) : group.records;
    for (const record of kept) {
      failures.push({ itemIdentifier: record.messageId });
      visibility.push({ receiptHandle: record.receiptHandle, visibilityTimeoutSeconds: seconds });
    }
  }

  if (visibility.length > 0) {
    const queueArn = records[0]!.eventSourceARN;
    try {
      await runner.queue.changeVisibility(queueArn, visibility);
    } catch (err) {
      // The messages still come back, after the queue's own visibility timeout: nothing is lost.
      runner.log.warn('could not change message visibility; the queue default applies', {
        reconciler: reconciler.name,
        error: errorMessage(err),
      });
    }
  }
  return { batchItemFailures: failures };
}

function groupByKey<TDeps, TBatch>(
  reconciler: Reconciler<TDeps, TBatch>,
  records: readonly SQSRecord[],
  runner: RunnerDeps,
): Map<string, KeyGroup> {
  const { name } = reconciler;
  const groups = new Map<string, KeyGroup>();
  for (const record of records) {
    const parsed = acceptedRecord(reconciler, record.body);
    if (!parsed.ok) {
      // Acknowledged: a body that does not parse now never will. Logged once, counted.
      runner.metrics.count(MetricName.MalformedMessages, { reconciler: name });
      runner.log.error('malformed message acknowledged', {
        reconciler: name,
        messageId: record.messageId,
        error: parsed.error,
      });
      continue;
    }
    const { key, hint, payload } = parsed;
    const id = keyString(key);
    const group = groups.get(id) ?? { key, records: [], hints: [], payloads: [] };
    group.records.push(record);
    if (hint) group.hints.push(hint);
    if (payload !== undefined) group.payloads.push(payload);
    groups.set(id, group);
  }
  return groups;
}

function acceptedRecord<TDeps, TBatch>(reconciler: Reconciler<TDeps, TBatch>, body: string): ParsedRecord {
  const parsed = (reconciler.parse ?? parseKeyRecord)(body);
  if (!parsed.ok || !reconciler.accepts || reconciler.accepts(parsed.key)) return parsed;
  return { ok: false, error: `the ${reconciler.name} queue takes no key ${keyString(parsed.key)}` };
}

function receiveCount(record: SQSRecord): number {
  const n = Number(record.attributes?.ApproximateReceiveCount ?? '1');
  return Number.isFinite(n) && n >= 1 ? n : 1;
}

function asControllerError(err: unknown): Error {
  if (err instanceof ControllerError) return err;
  return new RetryableError(errorMessage(err), { cause: err });
}

function errorOutcome(error: Error): Outcome {
  if (error instanceof TerminalError) return { kind: 'terminal', error };
  return { kind: 'retry', error, throttled: error instanceof ThrottledError };
}

async function reportTerminal<TDeps, TBatch>(
  reconciler: Reconciler<TDeps, TBatch>,
  key: ObjectKey,
  error: TerminalError,
  deps: TDeps,
  runner: RunnerDeps,
): Promise<void> {
  if (!reconciler.reportTerminal) return;
  try {
    await reconciler.reportTerminal(key, error, deps);
  } catch (err) {
    runner.log.warn('could not report terminal error on the object', {
      reconciler: reconciler.name,
      key: keyString(key),
      error: errorMessage(err),
    });
  }
}
