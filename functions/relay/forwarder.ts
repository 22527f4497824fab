import { errorMessage } from '../../shared/errors.ts';
import type { Log } from '../../shared/observability/log.ts';
import { type KeyMessage, messageGroupId } from '../../shared/queue/message.ts';
import type { SendFailure, SqsPort } from '../../shared/queue/sqs-port.ts';
import type { Reconciler } from './controllers/index.ts';
import { compareResourceVersions } from './kinds.ts';
import type { RelayMetrics } from './metrics.ts';

/**
 * Sends keys to the reconcilers' queues, at least once.
 *
 * Keys wait in a map per queue, by message group (the key): a newer change of a key replaces the one
 * waiting, as a workqueue coalesces (see `newest`). A key leaves the map only when SQS accepted it; a
 * refused one goes back (unless a newer change of the key is already waiting) and the queue backs
 * off. One key is never in two requests at once, so SQS receives a key's changes in order.
 */

/** SendMessageBatch takes at most 10 entries. */
export const ENTRIES_PER_BATCH = 10;

export interface ForwarderOptions {
  /** How long the first waiting key waits for others, so batches fill up. */
  lingerMs: number;
  /**
   * SendMessageBatch requests in flight per queue. A FIFO queue takes 300 requests per second (per
   * message group in high-throughput mode); 4 requests of ~15 ms each stay under that.
   * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html
   */
  maxInFlightBatches: number;
  /** First wait after a refused send, doubled per consecutive failure up to `retryMaxMs`, with jitter. */
  retryBaseMs: number;
  retryMaxMs: number;
}

export const DEFAULT_FORWARDER_OPTIONS: ForwarderOptions = {
  lingerMs: 50,
  maxInFlightBatches: 4,
  retryBaseMs: 200,
  retryMaxMs: 30_000,
};

export interface ForwarderDeps {
  sqs: SqsPort;
  queueUrls: ReadonlyMap<Reconciler, string>;
  /** Whether sending is allowed right now (this replica leads, with enough of its lease left). */
  canSend(): boolean;
  metrics: RelayMetrics;
  log: Log;
  random?: () => number;
}

interface QueueState {
  reconciler: Reconciler;
  url: string;
  /** Group ID -> the newest message of that key not yet accepted by SQS. */
  waiting: Map<string, KeyMessage>;
  /** Group IDs in a request right now. */
  inFlight: Set<string>;
  batchesInFlight: number;
  timer?: NodeJS.Timeout;
  /** Consecutive requests with refused entries; 0 when the last one went through. */
  failures: number;
  retryAt: number;
}

/** How often a held queue (not leading, lease about to end) checks again. */
const HELD_RECHECK_MS = 100;

export class Forwarder {
  private readonly queues = new Map<Reconciler, QueueState>();
  private readonly random: () => number;
  private stopped = false;

  constructor(
    private readonly deps: ForwarderDeps,
    private readonly options: ForwarderOptions = DEFAULT_FORWARDER_OPTIONS,
  ) {
    this.random = deps.random ?? Math.random;
    for (const [reconciler, url] of deps.queueUrls) {
      this.queues.set(reconciler, {
        reconciler,
        url,
        waiting: new Map(),
        inFlight: new Set(),
        batchesInFlight: 0,
        failures: 0,
        retryAt: 0,
      });
    }
  }

  enqueue(reconciler: Reconciler, message: KeyMessage): void {
    const queue = this.queues.get(reconciler);
    if (!queue || this.stopped) return;
    const group = messageGroupId(message);
    const waiting = queue.waiting.get(group);
    if (waiting) this.deps.metrics.keysCoalesced.inc({ reconciler });
    // Replacing keeps the key's place in line: a key that keeps changing is not starved.
    queue.waiting.set(group, waiting ? newest(waiting, message) : message);
    this.schedule(queue, queue.waiting.size >= ENTRIES_PER_BATCH ? 0 : this.options.lingerMs);
  }

  /** Keys not yet accepted by SQS (waiting or in flight), over every queue. */
  pending(): number {
    let count = 0;
    for (const queue of this.queues.values()) count += queue.waiting.size + queue.inFlight.size;
    return count;
  }

  /** Send what is waiting now rather than after the linger (used when leadership or a lock frees). */
  kick(): void {
    for (const queue of this.queues.values()) if (queue.waiting.size > 0) this.schedule(queue, 0, true);
  }

  /** Drop every waiting key: this replica stopped leading, and the next leader lists and sends everything. */
  clear(): void {
    for (const queue of this.queues.values()) {
      queue.waiting.clear();
      if (queue.timer) clearTimeout(queue.timer);
      queue.timer = undefined;
      queue.failures = 0;
      queue.retryAt = 0;
      this.updateGauge(queue);
    }
  }

  /** Wait until nothing is waiting or in flight, or the time is up; true when everything was accepted. */
  async flush(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    this.kick();
    while (this.pending() > 0) {
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return true;
  }

  /** No more sends after the ones in flight; waiting keys stay counted as pending. */
  stop(): void {
    this.stopped = true;
    for (const queue of this.queues.values()) if (queue.timer) clearTimeout(queue.timer);
  }

  private schedule(queue: QueueState, delayMs: number, replace = false): void {
    if (this.stopped) return;
    if (queue.timer) {
      if (!replace) return;
      clearTimeout(queue.timer);
    }
    const wait = Math.max(delayMs, queue.retryAt - Date.now(), 0);
    queue.timer = setTimeout(() => {
      queue.timer = undefined;
      this.pump(queue);
    }, wait);
  }

  private pump(queue: QueueState): void {
    if (this.stopped) return;
    while (queue.batchesInFlight < this.options.maxInFlightBatches && queue.waiting.size > 0) {
      if (Date.now() < queue.retryAt) {
        this.schedule(queue, 0);
        return;
      }
      // Checked before every request: a replica whose lease is about to run out sends nothing more.
      if (!this.deps.canSend()) {
        this.schedule(queue, HELD_RECHECK_MS);
        return;
      }
      const batch = this.take(queue);
      // Everything waiting is a newer change of a key in flight: its request's end schedules the next.
      if (batch.length === 0) break;
      queue.batchesInFlight++;
      void this.send(queue, batch);
    }
    this.updateGauge(queue);
  }

  /** Up to 10 waiting keys that are not in flight, oldest first. */
  private take(queue: QueueState): { group: string; message: KeyMessage }[] {
    const batch: { group: string; message: KeyMessage }[] = [];
    for (const [group, message] of queue.waiting) {
      if (queue.inFlight.has(group)) continue;
      batch.push({ group, message });
      queue.inFlight.add(group);
      if (batch.length === ENTRIES_PER_BATCH) break;
    }
    for (const { group } of batch) queue.waiting.delete(group);
    return batch;
  }

  private async send(queue: QueueState, batch: { group: string; message: KeyMessage }[]): Promise<void> {
    const { reconciler } = queue;
    const started = performance.now();
    let failures: SendFailure[];
    try {
      failures = await this.deps.sqs.sendKeys(
        queue.url,
        batch.map((entry) => entry.message),
      );
    } catch (err) {
      // The port returns refused entries; a throw means the whole request failed (network, credentials).
      const code = (err as { name?: string }).name ?? 'Error';
      failures = batch.map(({ message }) => ({ message, code, reason: errorMessage(err) }));
    }
    this.deps.metrics.sendBatches.inc({ reconciler });
    this.deps.metrics.sendDuration.observe({ reconciler }, (performance.now() - started) / 1000);

    const refused = new Map(failures.map((f) => [f.message, f]));
    for (const { group, message } of batch) {
      queue.inFlight.delete(group);
      const failure = refused.get(message);
      if (!failure) {
        this.deps.metrics.keysSent.inc({ reconciler });
        continue;
      }
      this.deps.metrics.sendFailures.inc({ reconciler, code: failure.code });
      // It goes back in line, unless a newer change of the key is already waiting.
      if (this.stopped) continue;
      const waiting = queue.waiting.get(group);
      queue.waiting.set(group, waiting ? newest(message, waiting) : message);
    }
    if (refused.size > 0) {
      queue.failures++;
      const ceiling = Math.min(this.options.retryMaxMs, this.options.retryBaseMs * 2 ** (queue.failures - 1));
      // Equal jitter: at least half the backoff, so a fleet of retries never synchronizes nor spins.
      queue.retryAt = Date.now() + ceiling / 2 + this.random() * (ceiling / 2);
      const first = failures[0]!;
      this.deps.log.warn('SQS did not accept keys; sending them again', {
        reconciler,
        refused: refused.size,
        of: batch.length,
        code: first.code,
        reason: first.reason,
        retryInMs: Math.round(queue.retryAt - Date.now()),
      });
    } else {
      queue.failures = 0;
    }
    queue.batchesInFlight--;
    this.updateGauge(queue);
    if (queue.waiting.size > 0) this.schedule(queue, 0);
  }

  private updateGauge(queue: QueueState): void {
    this.deps.metrics.keysPending.set({ reconciler: queue.reconciler }, queue.waiting.size + queue.inFlight.size);
  }
}

/**
 * Of two messages for one key, the one to send. Several objects can feed one key (every Node feeds
 * `RouteTable/cluster`, EndpointSlices feed their Service), and a relist sees them in name order,
 * not in revision order; keeping the last one could keep a revision SQS already has (and drops as a
 * duplicate) while a newer one is lost. The newest revision is always safe: a message is sent only
 * after its revision was seen, so the reconcile it triggers (or triggered, if SQS drops it as a
 * repeat) reads a state at least that new, which includes every older change. A RESYNC (unique
 * event ID, never dropped) beats any change.
 */
export function newest(older: KeyMessage, newer: KeyMessage): KeyMessage {
  if (newer.hint?.eventType === 'RESYNC') return newer;
  if (older.hint?.eventType === 'RESYNC') return older;
  const order = compareResourceVersions(older.hint?.resourceVersion, newer.hint?.resourceVersion);
  return order !== undefined && order > 0 ? older : newer;
}
