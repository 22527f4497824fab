import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Ec2EventsPoller, type Ec2EventsPollerOptions, startEc2EventsPoller } from '../bin/ec2-events-poller.ts';
import { FakeSqs } from '../shared/aws/fakes/sqs/fake-sqs.ts';
import { FakeClock } from '../shared/clock.ts';
import { RetryableError, TerminalError } from '../shared/errors.ts';
import { MemoryLog, silentLog } from '../shared/observability/log.ts';
import { SqsAdapter } from '../shared/queue/sqs-adapter.ts';
import type { SqsReceiverPort } from '../shared/queue/sqs-port.ts';
import { EMULATOR_AVAILABLE, EMULATOR_SKIPPED_MESSAGE, type Emulator, startEmulator } from './helpers/emulator.ts';

/**
 * bin/ec2-events-poller.ts: what the EventBridge rules put on the local EC2 events queue reaches the router at
 * least once. Against FakeSqs (every path, on a fake clock) and against the SqsAdapter over the AWS API emulator
 * (the same promises over the wire: long polling, deletion, redelivery after the visibility timeout, abort).
 */

const STATE_CHANGE = JSON.stringify({
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  detail: { 'instance-id': 'i-0123456789abcdef0', state: 'stopped' },
});

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A started poller and what it delivered; `stop` aborts it and waits until it has stopped (a poller that
 * stopped on its own with an error has had that error checked by its test).
 */
function run(options: Omit<Ec2EventsPollerOptions, 'signal' | 'deliver' | 'log'> & Partial<Ec2EventsPollerOptions>) {
  const controller = new AbortController();
  const delivered: string[] = [];
  const poller: Ec2EventsPoller = startEc2EventsPoller({
    log: silentLog,
    deliver: async (body) => {
      delivered.push(body);
    },
    ...options,
    signal: controller.signal,
  });
  return {
    poller,
    delivered,
    controller,
    stop: async () => {
      controller.abort();
      await poller.done.catch(() => undefined);
    },
  };
}

describe('EC2 events poller over FakeSqs', () => {
  let clock: FakeClock;
  let sqs: FakeSqs;
  let url: string;
  let stops: (() => Promise<void>)[];

  beforeEach(() => {
    clock = new FakeClock();
    sqs = new FakeSqs(clock);
    url = sqs.createQueue('ec2-events', { fifo: false, visibilityTimeoutSeconds: 30 }).url;
    stops = [];
  });
  afterEach(async () => {
    for (const stop of stops) await stop();
  });
  const start = (options: Partial<Ec2EventsPollerOptions> = {}) => {
    const r = run({ queueUrl: url, sqs, ...options });
    stops.push(r.stop);
    return r;
  };

  it('delivers every message body in order, the malformed one too, and deletes them', async () => {
    for (const body of [STATE_CHANGE, 'not json', '{"detail-type":"unknown"}']) sqs.send('ec2-events', body);

    const { delivered, poller } = start();

    await until(() => sqs.depth('ec2-events') === 0, 'the queue to empty');
    expect(delivered).toEqual([STATE_CHANGE, 'not json', '{"detail-type":"unknown"}']);
    expect(poller.stats()).toMatchObject({ received: 3, delivered: 3, deleted: 3, failed: 0 });
    expect(sqs.callCount('DeleteMessageBatch')).toBe(1);
  });

  it('deletes a message only once its delivery resolved', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const deliveries: string[] = [];
    start({
      deliver: async (body) => {
        deliveries.push(body);
        await held;
      },
    });
    sqs.send('ec2-events', STATE_CHANGE);

    await until(() => deliveries.length === 1, 'the delivery to start');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sqs.depth('ec2-events')).toBe(1);

    release();
    await until(() => sqs.depth('ec2-events') === 0, 'the delete');
  });

  it('leaves a message whose delivery failed for SQS to offer again after its visibility timeout', async () => {
    let attempts = 0;
    const { poller } = start({
      waitSeconds: 0.05,
      deliver: async () => {
        attempts++;
        if (attempts === 1) throw new Error('API server unreachable');
      },
    });
    sqs.send('ec2-events', STATE_CHANGE);

    await until(() => poller.stats().failed === 1, 'the failed delivery');
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(attempts).toBe(1); // invisible until the timeout
    expect(sqs.depth('ec2-events')).toBe(1);

    clock.advance(30_000);
    await until(() => sqs.depth('ec2-events') === 0, 'the redelivered message to be deleted');
    expect(attempts).toBe(2);
    expect(poller.stats()).toMatchObject({ received: 2, delivered: 1, failed: 1, deleted: 1 });
  });

  it('deletes what it delivered of a batch and delivers the rest, when one delivery in it fails', async () => {
    for (const body of ['a', 'b', 'c']) sqs.send('ec2-events', body);
    const { delivered } = start({
      deliver: async (body) => {
        if (body === 'b') throw new Error('no');
        delivered.push(body);
      },
    });

    await until(() => sqs.depth('ec2-events') === 1, 'a and c to be deleted');
    expect(delivered).toEqual(['a', 'c']);
    expect(sqs.bodies('ec2-events')).toEqual(['b']);
  });

  it('stops at once when aborted during a long poll, and receives nothing after', async () => {
    const { poller, stop } = start();
    await until(() => sqs.callCount('ReceiveMessage') === 1, 'the first receive');
    const started = Date.now();

    await stop();

    expect(Date.now() - started).toBeLessThan(1_000);
    sqs.send('ec2-events', STATE_CHANGE);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sqs.callCount('ReceiveMessage')).toBe(1);
    expect(poller.stats().received).toBe(0);
  });

  it('when aborted mid-batch, delivers no more, and deletes what it delivered', async () => {
    for (const body of ['a', 'b', 'c']) sqs.send('ec2-events', body);
    const controller = new AbortController();
    const delivered: string[] = [];
    const poller = startEc2EventsPoller({
      queueUrl: url,
      sqs,
      log: silentLog,
      signal: controller.signal,
      deliver: async (body) => {
        delivered.push(body);
        if (body === 'a') controller.abort();
      },
    });

    await poller.done;

    expect(delivered).toEqual(['a']);
    expect(sqs.bodies('ec2-events')).toEqual(['b', 'c']);
  });

  it('tries a failed receive again after a backoff', async () => {
    let failures = 2;
    const flaky: SqsReceiverPort = {
      receive: async (queueUrl, options) => {
        if (failures-- > 0) throw new RetryableError('receiving messages: InternalError: try again');
        return sqs.receive(queueUrl, options);
      },
      delete: (queueUrl, handles) => sqs.delete(queueUrl, handles),
    };
    sqs.send('ec2-events', STATE_CHANGE);

    const { delivered, poller } = start({ sqs: flaky, backoffMs: 5 });

    await until(() => delivered.length === 1, 'the delivery after two failed receives');
    expect(poller.stats().errors).toBe(2);
  });

  it.each([
    ['the adapter says so', new TerminalError('receiving messages: AccessDenied: no')],
    [
      'the queue does not exist',
      Object.assign(new Error('The specified queue does not exist.'), {
        name: 'QueueDoesNotExist',
        $metadata: { httpStatusCode: 400 },
      }),
    ],
  ])('stops, logging why, when a receive fails for good (%s)', async (_, error) => {
    const log = new MemoryLog();
    const broken: SqsReceiverPort = { receive: async () => Promise.reject(error), delete: async () => undefined };

    const { poller } = start({ sqs: broken, log });

    await expect(poller.done).rejects.toBe(error);
    expect(log.lines.filter((l) => l.level === 'ERROR').map((l) => l.message)).toEqual([
      'EC2 events poller stopped: the queue cannot be read',
    ]);
  });

  it('keeps a delivered message whose delete failed: it is delivered again (at least once)', async () => {
    let deleteFails = true;
    const port: SqsReceiverPort = {
      receive: (queueUrl, options) => sqs.receive(queueUrl, options),
      delete: async (queueUrl, handles) => {
        if (deleteFails) throw new RetryableError('deleting messages (1 failure): InternalError: x');
        return sqs.delete(queueUrl, handles);
      },
    };
    sqs.send('ec2-events', STATE_CHANGE);
    const { delivered, poller } = start({ sqs: port, waitSeconds: 0.05 });

    await until(() => poller.stats().errors === 1, 'the failed delete');
    deleteFails = false;
    clock.advance(30_000);

    await until(() => sqs.depth('ec2-events') === 0, 'the second delivery to be deleted');
    expect(delivered).toEqual([STATE_CHANGE, STATE_CHANGE]);
  });
});

if (!EMULATOR_AVAILABLE) console.warn(EMULATOR_SKIPPED_MESSAGE);

describe.skipIf(!EMULATOR_AVAILABLE)('EC2 events poller: SqsAdapter over the AWS API emulator', () => {
  let emulator: Emulator;
  let client: SQSClient;
  let adapter: SqsAdapter;
  let queueCounter = 0;

  beforeAll(async () => {
    emulator = await startEmulator();
    client = new SQSClient(emulator.clientConfig);
    adapter = new SqsAdapter(client, { endpoint: emulator.endpoint });
  });
  afterAll(async () => {
    client?.destroy();
    await emulator?.stop();
  });

  /** A standard queue as events:create makes one, with a 1 s visibility timeout so redelivery is quick. */
  async function createQueue(): Promise<string> {
    const { QueueUrl } = await client.send(
      new CreateQueueCommand({
        QueueName: `poller-${process.pid}-${++queueCounter}`,
        Attributes: { VisibilityTimeout: '1' },
      }),
    );
    return QueueUrl!;
  }

  async function messagesOn(queueUrl: string): Promise<number> {
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return Number(Attributes?.ApproximateNumberOfMessages) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible);
  }

  it('delivers what is on the queue and deletes it after delivery', async () => {
    const queueUrl = await createQueue();
    const bodies = [STATE_CHANGE, 'not json', ...Array.from({ length: 10 }, (_, n) => `{"n":${n}}`)];
    await client.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: bodies.slice(0, 10).map((body, n) => ({ Id: String(n), MessageBody: body })),
      }),
    );
    for (const body of bodies.slice(10))
      await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    const { delivered, stop, poller } = run({ queueUrl, sqs: adapter });

    await until(() => delivered.length === bodies.length, 'every delivery', 10_000);
    await until(() => poller.stats().deleted === bodies.length, 'every delete');
    await stop();

    expect([...delivered].sort()).toEqual([...bodies].sort());
    expect(await messagesOn(queueUrl)).toBe(0);
  });

  it('keeps a message whose delivery failed, and delivers it again after the visibility timeout', async () => {
    const queueUrl = await createQueue();
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: STATE_CHANGE }));
    let attempts = 0;
    const { stop, poller } = run({
      queueUrl,
      sqs: adapter,
      deliver: async () => {
        attempts++;
        if (attempts === 1) throw new Error('API server unreachable');
      },
    });

    await until(() => poller.stats().failed === 1, 'the failed delivery');
    expect(await messagesOn(queueUrl)).toBe(1);
    await until(() => poller.stats().deleted === 1, 'the second delivery, after the 1 s visibility timeout', 10_000);
    await stop();

    expect(attempts).toBe(2);
    expect(await messagesOn(queueUrl)).toBe(0);
  });

  it('stops promptly when aborted during a 20 s long poll', async () => {
    const queueUrl = await createQueue();
    const { stop, poller } = run({ queueUrl, sqs: adapter });
    await new Promise((resolve) => setTimeout(resolve, 300)); // inside the long poll by now
    const started = Date.now();

    await stop();

    expect(Date.now() - started).toBeLessThan(2_000);
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: STATE_CHANGE }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(poller.stats().received).toBe(0);
    expect(await messagesOn(queueUrl)).toBe(1);
  });

  it('stops, with the error, when the queue does not exist', async () => {
    const { poller } = run({ queueUrl: `${emulator.endpoint}/123456789012/no-such-queue`, sqs: adapter });

    await expect(poller.done).rejects.toBeInstanceOf(TerminalError);
  });
});
