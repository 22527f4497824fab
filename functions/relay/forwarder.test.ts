import { describe, expect, it } from 'vitest';
import { silentLog } from '../../shared/observability/log.ts';
import type { KeyMessage } from '../../shared/queue/message.ts';
import type { SendFailure, SqsPort } from '../../shared/queue/sqs-port.ts';
import { Forwarder, type ForwarderOptions, newest } from './forwarder.ts';
import { RelayMetrics } from './metrics.ts';
import { reconcilerQueues, until } from './testing/objects.ts';

/** Batching, coalescing, ordering per key and retries, against the FIFO fake and scripted ports. */

const OPTIONS: ForwarderOptions = { lingerMs: 5, maxInFlightBatches: 4, retryBaseMs: 20, retryMaxMs: 200 };
const pod = (name: string, resourceVersion: string): KeyMessage => ({
  kind: 'Pod',
  namespace: 'default',
  name,
  hint: { eventType: 'MODIFIED', resourceVersion, source: 'relay' },
});

function forwarder(sqs: SqsPort, url: string, options: Partial<ForwarderOptions> = {}, canSend = () => true) {
  const metrics = new RelayMetrics();
  const f = new Forwarder(
    { sqs, queueUrls: new Map([['ipam', url]]), canSend, metrics, log: silentLog, random: () => 0.5 },
    { ...OPTIONS, ...options },
  );
  return { f, metrics };
}

describe('Forwarder', () => {
  it('sends full batches of 10: 1,000 keys in 100 SendMessageBatch calls', async () => {
    const { sqs, urls } = reconcilerQueues();
    const { f, metrics } = forwarder(sqs, urls.ipam);
    for (let i = 0; i < 1_000; i++) f.enqueue('ipam', pod(`p-${i}`, String(1_000 + i)));
    await until(() => f.pending() === 0, 'the keys to go');

    expect(sqs.callCount('SendMessageBatch')).toBe(100);
    expect(sqs.depth('ipam.fifo')).toBe(1_000);
    expect(metrics.keysSent.get({ reconciler: 'ipam' })).toBe(1_000);
    expect(metrics.sendDuration.count({ reconciler: 'ipam' })).toBe(100);
  });

  it('coalesces changes of one key that wait together into the newest', async () => {
    const { sqs, urls } = reconcilerQueues();
    const { f, metrics } = forwarder(sqs, urls.ipam, { lingerMs: 30 });
    f.enqueue('ipam', pod('a', '10'));
    f.enqueue('ipam', pod('a', '12'));
    f.enqueue('ipam', pod('a', '11')); // seen later (a relist), but older: kept out
    await until(() => f.pending() === 0, 'the key to go');

    expect(sqs.bodies('ipam.fifo').map((b) => JSON.parse(b).hint.resourceVersion)).toEqual(['12']);
    expect(metrics.keysCoalesced.get({ reconciler: 'ipam' })).toBe(2);
  });

  it('never has one key in two requests at once, so SQS gets its changes in order', async () => {
    const { sqs, urls } = reconcilerQueues();
    const inFlight = new Set<string>();
    let overlaps = 0;
    const slow: SqsPort = {
      sendKeys: async (url, messages) => {
        for (const m of messages) if (inFlight.has(m.name)) overlaps++;
        for (const m of messages) inFlight.add(m.name);
        await new Promise((resolve) => setTimeout(resolve, 15));
        for (const m of messages) inFlight.delete(m.name);
        return sqs.sendKeys(url, messages);
      },
      changeVisibility: async () => undefined,
    };
    const { f } = forwarder(slow, urls.ipam, { lingerMs: 0 });
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 30; i++) f.enqueue('ipam', pod(`p-${i}`, String(100 * (round + 1) + i)));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await until(() => f.pending() === 0, 'the keys to go');

    expect(overlaps).toBe(0);
    const received = sqs.receive('ipam.fifo', 10);
    expect(received.length).toBeGreaterThan(0);
    const last = new Map<string, number>();
    for (const body of sqs.bodies('ipam.fifo')) {
      const m = JSON.parse(body) as KeyMessage;
      const revision = Number(m.hint!.resourceVersion);
      expect(revision).toBeGreaterThan(last.get(m.name) ?? 0);
      last.set(m.name, revision);
    }
    expect(last.get('p-0')).toBe(500);
  });

  it('retries refused entries with backoff, unless a newer change of the key is waiting', async () => {
    const { sqs, urls } = reconcilerQueues();
    const calls: string[][] = [];
    let refuse = true;
    const flaky: SqsPort = {
      sendKeys: async (url, messages) => {
        calls.push(messages.map((m) => `${m.name}@${m.hint!.resourceVersion}`));
        if (refuse) {
          refuse = false;
          f.enqueue('ipam', pod('b', '21')); // arrives while b@20 is in flight
          return messages.map((message): SendFailure => ({ message, code: 'InternalError', reason: 'try again' }));
        }
        return sqs.sendKeys(url, messages);
      },
      changeVisibility: async () => undefined,
    };
    const { f, metrics } = forwarder(flaky, urls.ipam);
    f.enqueue('ipam', pod('a', '10'));
    f.enqueue('ipam', pod('b', '20'));
    await until(() => f.pending() === 0, 'the retries');

    // b@20 is not sent again: b@21, which arrived meanwhile, replaces it (and was in line first).
    expect(calls).toEqual([
      ['a@10', 'b@20'],
      ['b@21', 'a@10'],
    ]);
    expect(metrics.sendFailures.get({ reconciler: 'ipam', code: 'InternalError' })).toBe(2);
    expect(sqs.depth('ipam.fifo')).toBe(2);
  });

  it('holds keys while it may not send, and drops them when told to', async () => {
    const { sqs, urls } = reconcilerQueues();
    let allowed = false;
    const { f } = forwarder(sqs, urls.ipam, {}, () => allowed);
    f.enqueue('ipam', pod('a', '10'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sqs.callCount('SendMessageBatch')).toBe(0);

    allowed = true;
    await until(() => f.pending() === 0, 'the key to go');
    expect(sqs.depth('ipam.fifo')).toBe(1);

    allowed = false;
    f.enqueue('ipam', pod('b', '11'));
    f.clear();
    expect(f.pending()).toBe(0);
  });

  it('flush waits for what is waiting and in flight', async () => {
    const { sqs, urls } = reconcilerQueues();
    const { f } = forwarder(sqs, urls.ipam, { lingerMs: 10_000 });
    for (let i = 0; i < 25; i++) f.enqueue('ipam', pod(`p-${i}`, String(i + 1)));
    expect(await f.flush(2_000)).toBe(true);
    expect(sqs.depth('ipam.fifo')).toBe(25);
  });
});

describe('newest', () => {
  it.each<[string, KeyMessage, KeyMessage, string]>([
    ['the higher revision', pod('a', '9'), pod('a', '10'), '10'],
    ['the higher revision, seen first', pod('a', '10'), pod('a', '9'), '10'],
    ['the later one when revisions do not compare', pod('a', 'x'), pod('a', 'y'), 'y'],
    [
      'a RESYNC over a change',
      { ...pod('a', '10'), hint: { eventType: 'RESYNC', eventId: 'r' } },
      pod('a', '11'),
      'RESYNC',
    ],
  ])('keeps %s', (_what, older, newer, expected) => {
    const kept = newest(older, newer);
    expect(kept.hint?.eventType === 'RESYNC' ? 'RESYNC' : kept.hint?.resourceVersion).toBe(expected);
  });
});
