import type { Log } from '../shared/observability/log.ts';
import { MetricName, type RecordingMetrics } from '../shared/observability/metrics.ts';

export interface ViewSource {
  title: string;
  metrics: RecordingMetrics;
  queueDepths: () => [string, number][];
  dlqDepth: () => number;
  awsCalls: () => [string, number][];
  clockLabel: () => string;
  extra?: () => [string, string | number][];
}

/** Counters everyone wants to see, for the live view and the closing summary. */
export function summaryRows(s: ViewSource): [string, string | number][] {
  const m = s.metrics;
  return [
    ['time', s.clockLabel()],
    [
      'keys waiting',
      s
        .queueDepths()
        .map(([q, n]) => `${q} ${n}`)
        .join(', '),
    ],
    ['reconciles done', m.total(MetricName.Reconciles, { result: 'done' })],
    [
      '  retried / requeued',
      m.total(MetricName.Reconciles, { result: 'retry' }) + m.total(MetricName.Reconciles, { result: 'requeue' }),
    ],
    ['  throttled', m.total(MetricName.ReconcileErrors, { errorClass: 'throttled' })],
    ['  terminal errors', m.total(MetricName.TerminalErrors)],
    ['nodes initialized', m.total(MetricName.NodesInitialized)],
    ['node addresses updated', m.total(MetricName.NodeAddressesUpdated)],
    ['nodes tainted / untainted', `${m.total(MetricName.NodesTainted)} / ${m.total(MetricName.NodesUntainted)}`],
    ['nodes deleted', m.total(MetricName.NodesDeleted)],
    [
      'EC2 events routed / unknown',
      // The resync counts its keys under the same metric, with its own source.
      `${m.total(MetricName.KeysSent) - m.total(MetricName.KeysSent, { source: 'resync' })} / ${m.total(MetricName.UnknownInstanceEvents)}`,
    ],
    [
      'AWS calls',
      s
        .awsCalls()
        .map(([op, n]) => `${op} ${n}`)
        .join(', ') || '0',
    ],
    ...ipamRows(m),
    ['malformed messages', m.total(MetricName.MalformedMessages)],
    ['DLQ messages', s.dlqDepth()],
    ...(s.extra?.() ?? []),
  ];
}

/** Windows IP address management (functions/ipam), once it did anything: Pod addresses and the EC2 side of them. */
function ipamRows(m: RecordingMetrics): [string, string | number][] {
  const assigned = m.total(MetricName.IpamAddressesAssigned);
  const allocated = m.total(MetricName.IpamAddressesAllocated);
  const released = m.total(MetricName.IpamAddressesReleased);
  if (assigned + allocated + released === 0) return [];
  return [
    ['Pod VPC addresses assigned', assigned],
    ['  from EC2 / given back', `${allocated} / ${released}`],
  ];
}

export function formatRows(rows: [string, string | number][]): string {
  return rows.map(([k, v]) => `  ${k.padEnd(28)} ${v}`).join('\n');
}

/**
 * On a terminal: a screen redrawn a few times a second with the counters and the latest log lines.
 * Elsewhere (CI, pipes): plain log lines, one per decision.
 */
export function createOutput(tty: boolean, verbose: boolean) {
  const recent: string[] = [];
  const emit = (level: string) => (message: string, fields?: Record<string, unknown>) => {
    const extra = fields
      ? Object.entries(fields)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ')
      : '';
    const text = `${level.padEnd(5)} ${message}${extra ? `  ${extra}` : ''}`;
    if (tty) {
      recent.push(text.length > 160 ? `${text.slice(0, 157)}...` : text);
      if (recent.length > 14) recent.shift();
    } else {
      console.log(text);
    }
  };
  const log: Log = {
    debug: verbose ? emit('DEBUG') : () => {},
    info: emit('INFO'),
    warn: emit('WARN'),
    error: emit('ERROR'),
  };
  let timer: NodeJS.Timeout | undefined;
  const draw = (source: ViewSource) => {
    process.stdout.write(
      `\x1b[H\x1b[2J${source.title}\n\n${formatRows(summaryRows(source))}\n\nlatest\n${recent.map((l) => `  ${l}`).join('\n')}\n`,
    );
  };
  return {
    log,
    start(source: ViewSource) {
      if (tty) timer = setInterval(() => draw(source), 250);
    },
    stop(source: ViewSource) {
      if (timer) {
        clearInterval(timer);
        draw(source);
      }
    },
  };
}
