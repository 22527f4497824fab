import { readFileSync } from 'node:fs';
import type { SQSEvent } from 'aws-lambda';
import { beforeEach, describe, expect, it } from 'vitest';
import { fifoRecord, NODE_QUEUE_ARN, nodeKey } from '../../test/helpers/records.ts';
import { FakeClock } from '../clock.ts';
import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';
import { silentLog } from '../observability/log.ts';
import { MetricName, RecordingMetrics } from '../observability/metrics.ts';
import type { ObjectKey } from './message.ts';
import { backoffSeconds, type ReconcileContext, type Reconciler, type RunnerDeps, runBatch } from './runner.ts';
import type { VisibilityChange } from './sqs-port.ts';

class RecordingQueue {
  readonly changes: { queueArn: string; entries: VisibilityChange[] }[] = [];
  async changeVisibility(queueArn: string, entries: readonly VisibilityChange[]) {
    this.changes.push({ queueArn, entries: [...entries] });
  }
}

type Behaviour = (key: ObjectKey) => Promise<{ requeueAfterSeconds?: number } | undefined>;

function toyReconciler(behaviour: Behaviour) {
  const seen: string[] = [];
  const terminal: string[] = [];
  const reconciler: Reconciler<object> = {
    name: 'toy',
    async reconcile(key) {
      seen.push(key.name);
      return behaviour(key);
    },
    async reportTerminal(key, error) {
      terminal.push(`${key.name}: ${error.message}`);
    },
  };
  return { reconciler, seen, terminal };
}

let queue: RecordingQueue;
let metrics: RecordingMetrics;
let runner: RunnerDeps;
beforeEach(() => {
  queue = new RecordingQueue();
  metrics = new RecordingMetrics();
  runner = { log: silentLog, metrics, queue, clock: new FakeClock(), random: () => 0.5 };
});

describe('runBatch', () => {
  it('parses the fixture FIFO batch and coalesces one group into one reconcile', async () => {
    const event = JSON.parse(
      readFileSync(new URL('../../test/fixtures/sqs/fifo-batch-one-group.json', import.meta.url), 'utf8'),
    ) as SQSEvent;
    const toy = toyReconciler(async () => undefined);
    const response = await runBatch(toy.reconciler, event.Records, {}, runner);
    expect(response).toEqual({ batchItemFailures: [] });
    expect(toy.seen).toEqual(['ip-10-0-12-34.eu-west-1.compute.internal']);
    expect(metrics.total(MetricName.CoalescedMessages)).toBe(1);
  });

  it('acknowledges and counts malformed records, and still reconciles the good ones', async () => {
    const toy = toyReconciler(async () => undefined);
    const records = [
      fifoRecord('not json'),
      fifoRecord(JSON.stringify({ kind: 'Node' })),
      fifoRecord(JSON.stringify({ kind: 'Secret', name: 'x' })),
      fifoRecord(JSON.stringify({ kind: 'Node', name: 'UPPER_case' })),
      fifoRecord(nodeKey('good')),
    ];
    const response = await runBatch(toy.reconciler, records, {}, runner);
    expect(response.batchItemFailures).toEqual([]);
    expect(toy.seen).toEqual(['good']);
    expect(metrics.total(MetricName.MalformedMessages, { reconciler: 'toy' })).toBe(4);
  });

  it('acknowledges and counts keys the reconciler does not accept, and still reconciles the good ones', async () => {
    const toy = toyReconciler(async () => undefined);
    const picky: Reconciler<object> = { ...toy.reconciler, accepts: (key) => key.kind === 'Node' };
    const records = [
      fifoRecord({ kind: 'Service', namespace: 'default', name: 'web' }, { messageId: 's' }),
      fifoRecord(nodeKey('good'), { messageId: 'g' }),
    ];
    const response = await runBatch(picky, records, {}, runner);
    expect(response.batchItemFailures).toEqual([]);
    expect(toy.seen).toEqual(['good']);
    expect(metrics.total(MetricName.MalformedMessages, { reconciler: 'toy' })).toBe(1);
  });

  it('fails only the records of a failed key, every record of that group, and delays them with backoff', async () => {
    const toy = toyReconciler(async (key) => {
      if (key.name === 'bad') throw new RetryableError('describing instances: InternalError');
      return undefined;
    });
    const records = [
      fifoRecord(nodeKey('good-1'), { messageId: 'g1' }),
      fifoRecord(nodeKey('bad', '1'), { messageId: 'b1', receiveCount: 3 }),
      fifoRecord(nodeKey('good-2'), { messageId: 'g2' }),
      fifoRecord(nodeKey('bad', '2'), { messageId: 'b2', receiveCount: 1 }),
    ];
    const response = await runBatch(toy.reconciler, records, {}, runner);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'b1' }, { itemIdentifier: 'b2' }]);
    expect(toy.seen.sort()).toEqual(['bad', 'good-1', 'good-2']);
    // attempt 3: base 2s * 2^2 = 8s ceiling, equal jitter at 0.5 -> 6s
    expect(queue.changes).toEqual([
      {
        queueArn: NODE_QUEUE_ARN,
        entries: [
          { receiptHandle: records[1]!.receiptHandle, visibilityTimeoutSeconds: 6 },
          { receiptHandle: records[3]!.receiptHandle, visibilityTimeoutSeconds: 6 },
        ],
      },
    ]);
    expect(metrics.total(MetricName.ReconcileErrors, { errorClass: 'retryable' })).toBe(1);
  });

  it('on requeue keeps only the newest record of the key and acknowledges the older ones', async () => {
    const toy = toyReconciler(async () => ({ requeueAfterSeconds: 30 }));
    const records = [
      fifoRecord(nodeKey('lb', '1'), { messageId: 'old' }),
      fifoRecord(nodeKey('other'), { messageId: 'o' }),
      fifoRecord(nodeKey('lb', '2'), { messageId: 'new' }),
    ];
    const response = await runBatch(toy.reconciler, records, {}, runner);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'new' }, { itemIdentifier: 'o' }]);
    expect(toy.seen.filter((n) => n === 'lb')).toHaveLength(1);
  });

  it('turns requeueAfterSeconds into a visibility change, never a sleep', async () => {
    const toy = toyReconciler(async () => ({ requeueAfterSeconds: 45 }));
    const record = fifoRecord(nodeKey('waiting'), { messageId: 'w' });
    const response = await runBatch(toy.reconciler, [record], {}, runner);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'w' }]);
    expect(queue.changes[0]?.entries).toEqual([{ receiptHandle: record.receiptHandle, visibilityTimeoutSeconds: 45 }]);
    expect(metrics.total(MetricName.Requeues)).toBe(1);
  });

  it('acknowledges terminal errors, counts them and reports them on the object', async () => {
    const toy = toyReconciler(async () => {
      throw new TerminalError('annotation x is invalid');
    });
    const response = await runBatch(toy.reconciler, [fifoRecord(nodeKey('n'))], {}, runner);
    expect(response.batchItemFailures).toEqual([]);
    expect(toy.terminal).toEqual(['n: annotation x is invalid']);
    expect(metrics.total(MetricName.TerminalErrors)).toBe(1);
  });

  it('treats plain errors as retryable', async () => {
    const toy = toyReconciler(async () => {
      throw new Error('socket hang up');
    });
    const response = await runBatch(toy.reconciler, [fifoRecord(nodeKey('n'), { messageId: 'x' })], {}, runner);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'x' }]);
  });

  it('fails every key when the batch-wide observe step fails', async () => {
    const reconciler: Reconciler<object, string> = {
      name: 'batchy',
      async prepareBatch() {
        throw new ThrottledError('describing instances: RequestLimitExceeded');
      },
      async reconcile() {
        throw new Error('must not run');
      },
    };
    const records = [fifoRecord(nodeKey('a'), { messageId: 'a' }), fifoRecord(nodeKey('b'), { messageId: 'b' })];
    const response = await runBatch(reconciler, records, {}, runner);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['a', 'b']);
    // Throttled: base 10s at attempt 1, jitter 0.5 -> 8s.
    expect(queue.changes[0]?.entries.map((e) => e.visibilityTimeoutSeconds)).toEqual([8, 8]);
  });

  it('gives the batch-wide step each key with what its reconcile will get', async () => {
    const seen: { prepared: [string, ReconcileContext][]; reconciled: [string, ReconcileContext][] } = {
      prepared: [],
      reconciled: [],
    };
    const reconciler: Reconciler<object, undefined> = {
      name: 'batchy',
      async prepareBatch(keys, _deps, contexts) {
        keys.forEach((key, i) => {
          seen.prepared.push([key.name, contexts![i]!]);
        });
        return undefined;
      },
      async reconcile(key, _deps, _batch, context) {
        seen.reconciled.push([key.name, context]);
        return undefined;
      },
    };
    const resync = { ...nodeKey('a'), hint: { eventType: 'RESYNC' as const, eventId: 'r1' } };
    const records = [
      fifoRecord(resync, { messageId: 'a' }),
      fifoRecord(nodeKey('b'), { messageId: 'b', receiveCount: 3 }),
    ];
    await runBatch(reconciler, records, {}, runner);
    expect(seen.prepared).toEqual(seen.reconciled);
    expect(seen.prepared.map(([name, c]) => [name, c.receiveCount, c.hints.map((h) => h.eventType)])).toEqual([
      ['a', 1, ['RESYNC']],
      ['b', 3, []],
    ]);
  });

  it('still reports the failures when changing visibility fails', async () => {
    runner.queue = {
      async changeVisibility() {
        throw new Error('AccessDenied');
      },
    };
    const toy = toyReconciler(async () => ({ requeueAfterSeconds: 5 }));
    const response = await runBatch(toy.reconciler, [fifoRecord(nodeKey('n'), { messageId: 'n' })], {}, runner);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'n' }]);
  });
});

describe('backoffSeconds', () => {
  it.each([
    [1, false, 0, 1],
    [1, false, 1, 2],
    [4, false, 0.5, 12],
    [20, false, 1, 300],
    [20, false, 0, 150],
    [1, true, 1, 10],
    [3, true, 1, 40],
  ])('attempt %i throttled=%s random=%d -> %is', (attempt, throttled, random, want) => {
    expect(backoffSeconds(attempt, throttled, undefined, random)).toBe(want);
  });
});
