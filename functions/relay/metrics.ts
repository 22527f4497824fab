import { Counter, Gauge, Histogram, Registry } from './prometheus.ts';

/** Round trips of one SendMessageBatch (the adapter's retries included), in seconds. */
const SEND_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The relay's `/metrics`. Names follow Prometheus conventions (`_total` counters, base units); the
 * `kind` label is the Kubernetes kind, `reconciler` the queue's reconciler.
 */
export class RelayMetrics {
  readonly registry = new Registry();
  private readonly startedCpu = process.cpuUsage();

  readonly changesSeen = this.registry.register(
    new Counter('relay_changes_seen_total', 'Objects listed and watch events received', ['kind']),
  );
  readonly changesForwarded = this.registry.register(
    new Counter('relay_changes_forwarded_total', 'Changes that became keys for at least one reconciler', ['kind']),
  );
  readonly changesFiltered = this.registry.register(
    new Counter(
      'relay_changes_filtered_total',
      'Changes that became no key: unchanged (nothing a reconciler reads changed, e.g. heartbeats), not-relevant (no reconciler reads the object), held (migration lock held by another component)',
      ['kind', 'reason'],
    ),
  );
  readonly keysSent = this.registry.register(new Counter('relay_keys_sent_total', 'Keys SQS accepted', ['reconciler']));
  readonly keysCoalesced = this.registry.register(
    new Counter('relay_keys_coalesced_total', 'Keys replaced by a newer change of the same key before they were sent', [
      'reconciler',
    ]),
  );
  readonly sendBatches = this.registry.register(
    new Counter('relay_send_batches_total', 'SendMessageBatch requests (up to 10 keys each)', ['reconciler']),
  );
  readonly sendFailures = this.registry.register(
    new Counter('relay_send_failures_total', 'Keys SQS did not accept; each is sent again', ['reconciler', 'code']),
  );
  readonly sendDuration = this.registry.register(
    new Histogram('relay_send_duration_seconds', 'SendMessageBatch duration', ['reconciler'], SEND_BUCKETS),
  );
  readonly keysPending = this.registry.register(
    new Gauge('relay_keys_pending', 'Keys waiting to be sent or in flight', ['reconciler']),
  );
  readonly watchRestarts = this.registry.register(
    new Counter(
      'relay_watch_restarts_total',
      'Watches that ended and were started again: closed (server timeout), expired (410 Gone), silent (nothing received for too long), error, relist',
      ['kind', 'reason'],
    ),
  );
  readonly invalidObjects = this.registry.register(
    new Counter(
      'relay_invalid_objects_total',
      'Objects the forwarding rules could not read, or whose key no queue would take: nothing sent for them',
      ['kind'],
    ),
  );
  readonly relists = this.registry.register(
    new Counter('relay_relists_total', 'Full lists: initial, expired (410 Gone), periodic', ['kind', 'reason']),
  );
  readonly synced = this.registry.register(
    new Gauge('relay_watch_synced', '1 once the kind has been listed and its watch is open', ['kind']),
  );
  readonly objects = this.registry.register(
    new Gauge('relay_objects', 'Objects the relay keeps a fingerprint of', ['kind']),
  );
  readonly leader = this.registry.register(
    new Gauge('relay_leader', '1 while this replica holds the lease and forwards'),
  );
  readonly leaderTransitions = this.registry.register(
    new Counter('relay_leader_transitions_total', 'Times this replica started or stopped leading'),
  );
  readonly migrationHeld = this.registry.register(
    new Gauge(
      'relay_migration_lock_held',
      "1 while leader migration holds the controller's keys back (another component holds its lock, or the configuration assigns it elsewhere)",
      ['reconciler'],
    ),
  );
  private readonly residentMemory = this.registry.register(
    new Gauge('process_resident_memory_bytes', 'Resident memory size in bytes'),
  );
  private readonly heapUsed = this.registry.register(new Gauge('nodejs_heap_used_bytes', 'V8 heap in use, in bytes'));
  private readonly cpuSeconds = this.registry.register(
    new Counter('process_cpu_seconds_total', 'User and system CPU time spent, in seconds'),
  );

  constructor() {
    let reportedCpu = 0;
    this.registry.onCollect(() => {
      const memory = process.memoryUsage();
      this.residentMemory.set({}, memory.rss);
      this.heapUsed.set({}, memory.heapUsed);
      const cpu = process.cpuUsage(this.startedCpu);
      const seconds = (cpu.user + cpu.system) / 1e6;
      this.cpuSeconds.inc({}, Math.max(0, seconds - reportedCpu));
      reportedCpu = Math.max(reportedCpu, seconds);
    });
  }

  render(): string {
    return this.registry.render();
  }
}
