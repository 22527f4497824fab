import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../clock.ts';
import type { KeyMessage } from '../../../queue/message.ts';
import { FakeSqs } from './fake-sqs.ts';

let clock: FakeClock;
let sqs: FakeSqs;
const key = (name: string, rv: string): KeyMessage => ({ kind: 'Node', name, hint: { resourceVersion: rv } });

beforeEach(() => {
  clock = new FakeClock();
  sqs = new FakeSqs(clock);
  sqs.createQueue('q.fifo', { visibilityTimeoutSeconds: 30, maxReceiveCount: 2, deadLetterQueue: 'dlq.fifo' });
});

describe('FakeSqs (FIFO)', () => {
  it('drops a re-sent revision within 5 minutes, not a newer one, and not after the window', async () => {
    await sqs.sendKeys(sqs.urlOf('q.fifo'), [key('a', '1'), key('a', '1'), key('a', '2')]);
    expect(sqs.depth('q.fifo')).toBe(2);
    clock.advance(5 * 60_000 + 1);
    await sqs.sendKeys(sqs.urlOf('q.fifo'), [key('a', '1')]);
    expect(sqs.depth('q.fifo')).toBe(3);
  });

  it('delivers nothing more of a group while one of its messages is in flight', async () => {
    await sqs.sendKeys(sqs.urlOf('q.fifo'), [key('a', '1'), key('b', '1')]);
    const first = sqs.receive('q.fifo', 1);
    expect(first.map((r) => JSON.parse(r.body).name)).toEqual(['a']);
    await sqs.sendKeys(sqs.urlOf('q.fifo'), [key('a', '2')]);
    expect(sqs.receive('q.fifo').map((r) => JSON.parse(r.body).name)).toEqual(['b']);
    sqs.deleteMessage('q.fifo', first[0]!.receiptHandle);
    expect(sqs.receive('q.fifo').map((r) => JSON.parse(r.body).hint.resourceVersion)).toEqual(['2']);
  });

  it('makes a message visible again after its visibility timeout or a visibility change', async () => {
    await sqs.sendKeys(sqs.urlOf('q.fifo'), [key('a', '1')]);
    const [record] = sqs.receive('q.fifo');
    await sqs.changeVisibility(sqs.arnOf('q.fifo'), [
      { receiptHandle: record!.receiptHandle, visibilityTimeoutSeconds: 5 },
    ]);
    clock.advance(4_000);
    expect(sqs.receive('q.fifo')).toHaveLength(0);
    clock.advance(1_000);
    const [again] = sqs.receive('q.fifo');
    expect(again?.attributes.ApproximateReceiveCount).toBe('2');
  });

  it('moves a message to the DLQ after maxReceiveCount receives', async () => {
    await sqs.sendKeys(sqs.urlOf('q.fifo'), [key('a', '1')]);
    for (let i = 0; i < 2; i++) {
      expect(sqs.receive('q.fifo')).toHaveLength(1);
      clock.advance(30_000);
    }
    expect(sqs.receive('q.fifo')).toHaveLength(0);
    expect(sqs.depth('dlq.fifo')).toBe(1);
  });

  it('pump deletes what the handler did not report as failed', async () => {
    await sqs.sendKeys(sqs.urlOf('q.fifo'), [key('a', '1'), key('b', '1')]);
    await sqs.pump('q.fifo', async (records) => ({
      batchItemFailures: records
        .filter((r) => JSON.parse(r.body).name === 'b')
        .map((r) => ({ itemIdentifier: r.messageId })),
    }));
    expect(sqs.bodies('q.fifo').map((b) => JSON.parse(b).name)).toEqual(['b']);
  });
});

describe('FakeSqs as SqsReceiverPort (standard queue, by URL)', () => {
  let url: string;
  beforeEach(() => {
    url = sqs.createQueue('events', { fifo: false, visibilityTimeoutSeconds: 30 }).url;
  });

  it('answers what is waiting at once, up to max, and deletes by receipt handle', async () => {
    for (const body of ['a', 'b', 'c']) sqs.send('events', body);

    const first = await sqs.receive(url, { waitSeconds: 20, max: 2 });

    expect(first.map((m) => [m.body, m.receiveCount])).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    await sqs.delete(
      url,
      first.map((m) => m.receiptHandle),
    );
    expect(sqs.bodies('events')).toEqual(['c']);
    expect(sqs.callCount('DeleteMessageBatch')).toBe(1);
  });

  it('waits for a message sent during the long poll', async () => {
    const receiving = sqs.receive(url, { waitSeconds: 20, max: 10 });
    setTimeout(() => sqs.send('events', 'late'), 30);

    expect((await receiving).map((m) => m.body)).toEqual(['late']);
    expect(sqs.callCount('ReceiveMessage')).toBe(1);
  });

  it('answers nothing once the wait is over', async () => {
    const started = Date.now();

    expect(await sqs.receive(url, { waitSeconds: 1, max: 10 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('rejects a waiting poll with an AbortError when its signal aborts, receiving nothing', async () => {
    const controller = new AbortController();
    const receiving = sqs.receive(url, { waitSeconds: 20, max: 10, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);

    await expect(receiving).rejects.toMatchObject({ name: 'AbortError' });
    sqs.send('events', 'after');
    expect((await sqs.receive(url, { waitSeconds: 0, max: 10 })).map((m) => m.receiveCount)).toEqual([1]);
  });

  it('gives an undeleted message back after its visibility timeout, with a new handle and count', async () => {
    sqs.send('events', 'x');
    const [first] = await sqs.receive(url, { waitSeconds: 0, max: 10 });
    expect(await sqs.receive(url, { waitSeconds: 0, max: 10 })).toEqual([]);

    clock.advance(30_000);
    const [again] = await sqs.receive(url, { waitSeconds: 0, max: 10 });

    expect(again).toMatchObject({ body: 'x', messageId: first!.messageId, receiveCount: 2 });
    expect(again!.receiptHandle).not.toBe(first!.receiptHandle);
    await sqs.delete(url, [first!.receiptHandle]); // stale: changes nothing
    expect(sqs.depth('events')).toBe(1);
  });

  it('refuses a queue URL it does not know, as QueueDoesNotExist', async () => {
    await expect(sqs.receive(`${url}-gone`, { waitSeconds: 0, max: 1 })).rejects.toMatchObject({
      name: 'QueueDoesNotExist',
    });
  });
});
