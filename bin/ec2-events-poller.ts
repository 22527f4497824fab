import { classifyAwsError } from '../shared/aws/errors.ts';
import { ControllerError, errorMessage, TerminalError } from '../shared/errors.ts';
import type { Log } from '../shared/observability/log.ts';
import {
  MAX_RECEIVE_MESSAGES,
  MAX_WAIT_SECONDS,
  type ReceivedMessage,
  type SqsReceiverPort,
} from '../shared/queue/sqs-port.ts';

/**
 * The local runner's stand-in for the Lambda event source mapping of the `ec2-events` queue, in real mode:
 * EventBridge cannot reach a local process, but it can reach an SQS queue (`npm run events:create` makes one
 * with the stack's rules, scripts/local-events.ts), and this poller brings what lands there into the process.
 *
 * It long-polls the standard queue (20 s waits, up to 10 messages: SQS's maxima, so an idle queue costs 3
 * requests a minute) and hands each body to `deliver`, in order. A message is deleted only once `deliver`
 * resolved: at least once, as the event source mapping is. A failed delivery leaves the message on the queue,
 * and SQS offers it again after its visibility timeout. Bodies are not parsed here: a malformed one is
 * delivered like any other, and the router acknowledges and counts it (`MalformedMessages`).
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-short-and-long-polling.html
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html
 */
export interface Ec2EventsPollerOptions {
  /** The standard queue the EventBridge rules send to (`--ec2-events-queue-url`). */
  queueUrl: string;
  sqs: SqsReceiverPort;
  /** Hands one message body to the router; resolving means the event is taken care of. */
  deliver: (body: string) => Promise<void>;
  log: Log;
  /** Aborting it stops the poller: a waiting receive is cancelled, and no further message is delivered. */
  signal: AbortSignal;
  /** Long-poll wait per receive; default 20 s, SQS's maximum. */
  waitSeconds?: number;
  /** Messages per receive; default 10, SQS's maximum. */
  maxMessages?: number;
  /** Wait after a failed receive, doubled after each further failure up to `maxBackoffMs`; default 1 s. */
  backoffMs?: number;
  /** Default 30 s. */
  maxBackoffMs?: number;
}

export interface Ec2EventsPollerStats {
  /** Messages received, repeats included. */
  received: number;
  delivered: number;
  /** Deliveries that rejected: those messages stay on the queue. */
  failed: number;
  deleted: number;
  /** Receive or delete calls that failed and were retried (receive) or left to SQS (delete). */
  errors: number;
}

export interface Ec2EventsPoller {
  /**
   * Settles when the poller has stopped: resolves once `signal` aborted; rejects with the error when a receive
   * fails in a way no retry mends (the queue does not exist, access denied), after logging it.
   */
  readonly done: Promise<void>;
  stats(): Ec2EventsPollerStats;
}

export function startEc2EventsPoller(options: Ec2EventsPollerOptions): Ec2EventsPoller {
  const stats: Ec2EventsPollerStats = { received: 0, delivered: 0, failed: 0, deleted: 0, errors: 0 };
  const done = poll(options, stats);
  // The caller may only look at `done` at shutdown; the rejection is logged already, never unhandled.
  done.catch(() => undefined);
  return { done, stats: () => ({ ...stats }) };
}

async function poll(o: Ec2EventsPollerOptions, stats: Ec2EventsPollerStats): Promise<void> {
  const waitSeconds = o.waitSeconds ?? MAX_WAIT_SECONDS;
  const max = o.maxMessages ?? MAX_RECEIVE_MESSAGES;
  const firstBackoff = o.backoffMs ?? 1_000;
  const maxBackoff = o.maxBackoffMs ?? 30_000;
  let backoff = 0;
  o.log.info('EC2 events poller started', { queueUrl: o.queueUrl });
  while (!o.signal.aborted) {
    let messages: ReceivedMessage[];
    try {
      messages = await o.sqs.receive(o.queueUrl, { waitSeconds, max, signal: o.signal });
    } catch (err) {
      if (o.signal.aborted) break;
      if (mendsNever(err)) {
        o.log.error('EC2 events poller stopped: the queue cannot be read', {
          queueUrl: o.queueUrl,
          error: errorMessage(err),
        });
        throw err;
      }
      stats.errors++;
      backoff = backoff === 0 ? firstBackoff : Math.min(maxBackoff, backoff * 2);
      o.log.warn('EC2 events poller: receive failed; trying again', { error: errorMessage(err), inMs: backoff });
      await sleepUnlessAborted(backoff, o.signal);
      continue;
    }
    backoff = 0;
    stats.received += messages.length;
    await deliverAndDelete(o, messages, stats);
  }
  o.log.info('EC2 events poller stopped', { ...stats });
}

/** Delivers in order, then deletes what was delivered in one call (fewer requests than one per message). */
async function deliverAndDelete(
  o: Ec2EventsPollerOptions,
  messages: readonly ReceivedMessage[],
  stats: Ec2EventsPollerStats,
): Promise<void> {
  const delivered: string[] = [];
  for (const message of messages) {
    // Once stopping, what is left stays on the queue for the next run (or another consumer).
    if (o.signal.aborted) break;
    try {
      await o.deliver(message.body);
      delivered.push(message.receiptHandle);
      stats.delivered++;
    } catch (err) {
      stats.failed++;
      o.log.warn('EC2 event not delivered; SQS offers it again after its visibility timeout', {
        messageId: message.messageId,
        receiveCount: message.receiveCount,
        error: errorMessage(err),
      });
    }
  }
  if (delivered.length === 0) return;
  try {
    // Not cancelled by the signal: what was delivered should not come back after a clean stop.
    await o.sqs.delete(o.queueUrl, delivered);
    stats.deleted += delivered.length;
  } catch (err) {
    // Delivered but still on the queue: it comes back, and delivering it twice is harmless (the router's
    // keys are deduplicated by SQS FIFO, and reconcilers read the current state).
    stats.errors++;
    o.log.warn('EC2 events poller: delete failed; those events will be delivered again', {
      count: delivered.length,
      error: errorMessage(err),
    });
  }
}

/** The adapter says it with its error classes; anything else (a fake, a raw SDK error) by its AWS code. */
function mendsNever(err: unknown): boolean {
  if (err instanceof ControllerError) return err instanceof TerminalError;
  return classifyAwsError(err) === 'terminal';
}

function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    };
    const timer = setTimeout(finish, ms);
    signal.addEventListener('abort', finish, { once: true });
  });
}
