import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KeyMessage, messageGroupId } from '../../shared/queue/message.ts';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator, startEmulator } from '../helpers/emulator.ts';
import { differenceRow, hasTest } from './difference-rows.ts';
import { emulatorBackend, fakeBackend, type Received, type SqsBackend } from './sqs-backends.ts';

/**
 * The SQS FIFO contract the workqueue relies on (docs/architecture.md, "The queue is the workqueue"), run
 * twice: against the SqsAdapter talking to an AWS API emulator (moto server) and against FakeSqs, which
 * every other test and the local runner use. The expected answers are AWS's documented behaviour.
 *
 * Where the emulator is known to answer differently from AWS, the test names the row of
 * docs/emulator-differences.md and is expected to fail on the emulator (`it.fails`): the day the
 * emulator gets it right, that test fails and the row is removed.
 */

/** Keys of docs/emulator-differences.md rows, by the test that shows them. */
const EMULATOR_DIFFERS = {
  dedupAfterDelete: 'sqs.dedup-after-delete',
  dedupScope: 'sqs.dedup-scope-group',
  notInflight: 'sqs.visibility-not-in-flight',
} as const;

const key = (name: string, resourceVersion: string): KeyMessage => ({
  kind: 'Node',
  name,
  hint: { eventType: 'MODIFIED', resourceVersion },
});
const revisionOf = (m: Received) => (JSON.parse(m.body) as KeyMessage).hint?.resourceVersion;
const nameOf = (m: Received) => (JSON.parse(m.body) as KeyMessage).name;

/** What each group of contract tests gets: the backend of the describe it runs in, and its helpers. */
interface Contract {
  backend: () => SqsBackend;
  onEmulator: boolean;
  /** Receives and deletes until the queue answers nothing: everything delivered, in delivery order. */
  drain(queueUrl: string): Promise<Received[]>;
  /** A test the emulator is known to fail (the row `key` of docs/emulator-differences.md): it.fails there. */
  itUnlessEmulatorDiffers(key: string, name: string, test: () => Promise<void>): void;
}

type Make = () => Promise<{ backend: SqsBackend; stop(): Promise<void> }>;

function contract(label: string, on: 'emulator' | 'fake', make: Make) {
  const onEmulator = on === 'emulator';
  describe.skipIf(onEmulator && !EMULATOR_AVAILABLE)(label, () => {
    let current: SqsBackend;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      ({ backend: current, stop } = await make());
    });
    afterAll(async () => {
      await stop?.();
    });
    // CONTRACT_SHOW_DIFFERENCES=1 runs these as plain tests, to see how the emulator answers.
    const expectFailure = onEmulator && !process.env.CONTRACT_SHOW_DIFFERENCES;
    const c: Contract = {
      backend: () => current,
      onEmulator,
      async drain(queueUrl) {
        const out: Received[] = [];
        for (let batch = await current.receive(queueUrl); batch.length > 0; batch = await current.receive(queueUrl)) {
          for (const m of batch) await current.deleteMessage(queueUrl, m.receiptHandle);
          out.push(...batch);
        }
        return out;
      },
      itUnlessEmulatorDiffers: (key, name, test) =>
        (expectFailure ? it.fails : it)(onEmulator ? `${name} [emulator differs: ${key}]` : name, test),
    };
    fifoGroupTests(c);
    visibilityTests(c);
    deduplicationTests(c);
    redriveAndBatchTests(c);
  });
}

function fifoGroupTests({ backend: b, drain }: Contract) {
  describe('FIFO groups', () => {
    it('delivers the messages of one group in the order they were sent', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(
        q.url,
        ['1', '2', '3', '4'].map((rv) => key('a', rv)),
      );
      expect((await drain(q.url)).map(revisionOf)).toEqual(['1', '2', '3', '4']);
    });

    it('delivers nothing more of a group while one of its messages is in flight, and the next once it is deleted', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(q.url, [key('a', '1'), key('a', '2')]);
      const [first] = await b().receive(q.url, 1);
      expect(revisionOf(first!)).toBe('1');
      expect(await b().receive(q.url)).toEqual([]);
      await b().deleteMessage(q.url, first!.receiptHandle);
      expect((await b().receive(q.url)).map(revisionOf)).toEqual(['2']);
    });

    it('keeps groups independent: another group is delivered while one is in flight', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(q.url, [key('a', '1'), key('b', '1')]);
      const [first] = await b().receive(q.url, 1);
      const other = nameOf(first!) === 'a' ? 'b' : 'a'; // whichever group SQS picked first
      expect((await b().receive(q.url)).map(nameOf)).toEqual([other]);
    });
  });
}

function visibilityTests({ backend: b, itUnlessEmulatorDiffers }: Contract) {
  describe('visibility changes (requeue)', () => {
    it('keeps a requeued message (visibility N > 0) in flight: its group stays blocked, then it comes back first', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(q.url, [key('a', '1')]);
      const [first] = await b().receive(q.url);
      await b().port.changeVisibility(q.arn, [{ receiptHandle: first!.receiptHandle, visibilityTimeoutSeconds: 1 }]);
      await b().port.sendKeys(q.url, [key('a', '2')]);

      expect(await b().receive(q.url)).toEqual([]);
      await b().pass(1);
      const again = await b().receive(q.url, 1);
      expect(again.map(revisionOf)).toEqual(['1']);
      expect(again[0]!.receiveCount).toBe(2);
      expect(again[0]!.groupId).toBe(messageGroupId(key('a', '1')));
    });

    it('makes a message visible at once with a visibility change to 0', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(q.url, [key('a', '1')]);
      const [first] = await b().receive(q.url);
      await b().port.changeVisibility(q.arn, [{ receiptHandle: first!.receiptHandle, visibilityTimeoutSeconds: 0 }]);
      const again = await b().receive(q.url);
      expect(again.map(revisionOf)).toEqual(['1']);
      expect(again[0]!.receiveCount).toBe(2);
    });

    it('makes a message visible again when its visibility timeout runs out', async () => {
      const q = await b().createFifoQueue({ visibilityTimeoutSeconds: 1 });
      await b().port.sendKeys(q.url, [key('a', '1')]);
      expect(await b().receive(q.url)).toHaveLength(1);
      expect(await b().receive(q.url)).toEqual([]);
      await b().pass(1);
      expect((await b().receive(q.url)).map((m) => m.receiveCount)).toEqual([2]);
    });

    it('ignores a visibility change for a message already deleted', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(q.url, [key('a', '1')]);
      const [first] = await b().receive(q.url);
      await b().deleteMessage(q.url, first!.receiptHandle);
      await expect(
        b().port.changeVisibility(q.arn, [{ receiptHandle: first!.receiptHandle, visibilityTimeoutSeconds: 0 }]),
      ).resolves.toBeUndefined();
      expect(await b().receive(q.url)).toEqual([]);
    });

    itUnlessEmulatorDiffers(
      EMULATOR_DIFFERS.notInflight,
      'leaves a message visible when its visibility is changed after its timeout ran out (MessageNotInflight)',
      async () => {
        const q = await b().createFifoQueue({ visibilityTimeoutSeconds: 1 });
        await b().port.sendKeys(q.url, [key('a', '1')]);
        const [first] = await b().receive(q.url);
        await b().pass(1);
        await b().port.changeVisibility(q.arn, [{ receiptHandle: first!.receiptHandle, visibilityTimeoutSeconds: 60 }]);
        expect((await b().receive(q.url)).map(revisionOf)).toEqual(['1']);
      },
    );
  });
}

function deduplicationTests({ backend: b, drain, onEmulator, itUnlessEmulatorDiffers }: Contract) {
  describe('deduplication (5-minute window)', () => {
    it('drops a repeat of an explicit deduplication ID, not a newer revision of the key', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(q.url, [key('a', '1'), key('a', '1'), key('a', '2')]);
      await b().port.sendKeys(q.url, [key('a', '2')]);
      expect((await drain(q.url)).map(revisionOf)).toEqual(['1', '2']);
    });

    it('deduplicates by body on a queue with content-based deduplication', async () => {
      const q = await b().createFifoQueue({ contentBasedDeduplication: true });
      await b().sendRaw(q, 'same body', 'g');
      await b().sendRaw(q, 'same body', 'g');
      await b().sendRaw(q, 'other body', 'g');
      // An explicit ID overrides the content hash.
      await b().sendRaw(q, 'same body', 'g', 'explicit-id');
      expect((await drain(q.url)).map((m) => m.body)).toEqual(['same body', 'other body', 'same body']);
    });

    it('refuses a message without deduplication ID on a queue without content-based deduplication', async () => {
      const q = await b().createFifoQueue();
      await expect(b().sendRaw(q, 'body', 'g')).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    });

    itUnlessEmulatorDiffers(
      EMULATOR_DIFFERS.dedupAfterDelete,
      'still drops a repeat after the first message was received and deleted',
      async () => {
        const q = await b().createFifoQueue();
        await b().port.sendKeys(q.url, [key('a', '1')]);
        expect(await drain(q.url)).toHaveLength(1);
        await b().port.sendKeys(q.url, [key('a', '1')]);
        expect(await drain(q.url)).toEqual([]);
      },
    );

    itUnlessEmulatorDiffers(
      EMULATOR_DIFFERS.dedupScope,
      'with DeduplicationScope messageGroup (the stack), remembers an ID per group',
      async () => {
        const q = await b().createFifoQueue({ deduplicationScope: 'messageGroup' });
        await b().sendRaw(q, 'a', 'g1', 'same-id');
        await b().sendRaw(q, 'b', 'g2', 'same-id');
        await b().sendRaw(q, 'c', 'g1', 'same-id');
        expect((await drain(q.url)).map((m) => m.body).sort()).toEqual(['a', 'b']);
      },
    );

    // The emulator keeps the same 300 s window, but its clock cannot be moved and a test cannot wait 5 minutes.
    it.skipIf(onEmulator)('delivers a repeat sent after the window', async () => {
      const q = await b().createFifoQueue();
      await b().port.sendKeys(q.url, [key('a', '1')]);
      await b().pass(4 * 60);
      await b().port.sendKeys(q.url, [key('a', '1')]);
      expect(await drain(q.url)).toHaveLength(1);
      await b().pass(60);
      await b().port.sendKeys(q.url, [key('a', '1')]);
      expect(await drain(q.url)).toHaveLength(1);
    });
  });
}

function redriveAndBatchTests({ backend: b, drain, onEmulator }: Contract) {
  describe('dead-letter queue', () => {
    it('moves a message to the DLQ after maxReceiveCount receives, requeues included, keeping body and group', async () => {
      const q = await b().createFifoQueue({ maxReceiveCount: 2 });
      await b().port.sendKeys(q.url, [key('a', '1')]);
      for (let receive = 1; receive <= 2; receive++) {
        const [m] = await b().receive(q.url);
        expect(m?.receiveCount).toBe(receive);
        await b().port.changeVisibility(q.arn, [{ receiptHandle: m!.receiptHandle, visibilityTimeoutSeconds: 0 }]);
      }
      expect(await b().receive(q.url)).toEqual([]);
      const dead = await b().receive(q.dlqUrl);
      expect(dead.map(revisionOf)).toEqual(['1']);
      expect(dead[0]!.groupId).toBe(messageGroupId(key('a', '1')));
    });
  });
  describe('batch sends', () => {
    it('sends 10 entries per SendMessageBatch call and delivers every key', async () => {
      const q = await b().createFifoQueue();
      const before = b().sendBatchCalls();
      const keys = Array.from({ length: 23 }, (_, i) => key(`n${i}`, '1'));
      expect(await b().port.sendKeys(q.url, keys)).toEqual([]);
      expect(b().sendBatchCalls() - before).toBe(3);
      expect((await drain(q.url)).map(nameOf).sort()).toEqual(keys.map((k) => k.name).sort());
    });

    it('returns an entry SQS refused for good, and delivers the rest of the batch', async () => {
      const q = await b().createFifoQueue();
      b().refuseNextSend([{ index: 1, code: 'InvalidParameterValue', senderFault: true }]);
      const failures = await b().port.sendKeys(q.url, [key('a', '1'), key('b', '1'), key('c', '1')]);
      expect(failures.map((f) => [f.message.name, f.code])).toEqual([['b', 'InvalidParameterValue']]);
      expect((await drain(q.url)).map(nameOf).sort()).toEqual(['a', 'c']);
    });

    // FakeSqs stands for the adapter too and refuses for good only; the retry is the adapter's.
    it.runIf(onEmulator)('sends again an entry SQS refused through its own fault, and delivers it once', async () => {
      const q = await b().createFifoQueue();
      const before = b().sendBatchCalls();
      b().refuseNextSend([{ index: 0, code: 'InternalError', senderFault: false }]);
      expect(await b().port.sendKeys(q.url, [key('a', '1'), key('b', '1')])).toEqual([]);
      expect(b().sendBatchCalls() - before).toBe(2);
      expect((await drain(q.url)).map(nameOf).sort()).toEqual(['a', 'b']);
    });
  });
}

if (!EMULATOR_AVAILABLE) console.warn(EMULATOR_SKIPPED_MESSAGE);

contract('SQS FIFO contract: SqsAdapter over the AWS API emulator', 'emulator', async () => {
  const emulator: Emulator = await startEmulator();
  return { backend: emulatorBackend(emulator), stop: () => emulator.stop() };
});

contract('SQS FIFO contract: FakeSqs', 'fake', async () => ({ backend: fakeBackend(), stop: async () => undefined }));

describe('the rows of the differences table (docs) for this suite', () => {
  const source = readFileSync(import.meta.filename, 'utf8');
  // Two rows have no expected failure: entry failures are injected, and the window's end runs on the fake only.
  const keys = [...Object.values(EMULATOR_DIFFERS), 'sqs.batch-entry-failures', 'sqs.dedup-window-end'];
  it.each(keys)('%s has its row, naming tests of this file', (key) => {
    const row = differenceRow(key);
    expect(row?.file).toBe('sqs.contract.test.ts');
    expect(row!.tests.length).toBeGreaterThan(0);
    for (const name of row!.tests) expect(hasTest(source, name), name).toBe(true);
  });
});
