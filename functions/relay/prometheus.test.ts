import { describe, expect, it } from 'vitest';
import { Counter, Gauge, Histogram, Registry } from './prometheus.ts';

describe('Prometheus text format', () => {
  it('renders counters, gauges and histograms with escaped labels', () => {
    const registry = new Registry();
    const seen = registry.register(new Counter('relay_changes_seen_total', 'Changes seen', ['kind']));
    const leader = registry.register(new Gauge('relay_leader', 'Leading'));
    const latency = registry.register(
      new Histogram('relay_send_duration_seconds', 'Send\nduration', ['reconciler'], [0.01, 0.1]),
    );
    seen.inc({ kind: 'Node' }, 3);
    seen.inc({ kind: 'Pod "x"\\y' });
    leader.set({}, 1);
    latency.observe({ reconciler: 'ipam' }, 0.005);
    latency.observe({ reconciler: 'ipam' }, 0.05);
    latency.observe({ reconciler: 'ipam' }, 2);

    expect(registry.render()).toBe(
      [
        '# HELP relay_changes_seen_total Changes seen',
        '# TYPE relay_changes_seen_total counter',
        'relay_changes_seen_total{kind="Node"} 3',
        'relay_changes_seen_total{kind="Pod \\"x\\"\\\\y"} 1',
        '# HELP relay_leader Leading',
        '# TYPE relay_leader gauge',
        'relay_leader 1',
        '# HELP relay_send_duration_seconds Send\\nduration',
        '# TYPE relay_send_duration_seconds histogram',
        'relay_send_duration_seconds_bucket{reconciler="ipam",le="0.01"} 1',
        'relay_send_duration_seconds_bucket{reconciler="ipam",le="0.1"} 2',
        'relay_send_duration_seconds_bucket{reconciler="ipam",le="+Inf"} 3',
        'relay_send_duration_seconds_sum{reconciler="ipam"} 2.055',
        'relay_send_duration_seconds_count{reconciler="ipam"} 3',
        '',
      ].join('\n'),
    );
  });

  it('counters only go up', () => {
    expect(() => new Counter('c_total', 'c').inc({}, -1)).toThrow(/cannot decrease/);
  });

  it('sums series by label subset', () => {
    const c = new Counter('c_total', 'c', ['kind', 'reason']);
    c.inc({ kind: 'Node', reason: 'unchanged' }, 2);
    c.inc({ kind: 'Node', reason: 'held' });
    c.inc({ kind: 'Pod', reason: 'unchanged' });
    expect(c.total({ kind: 'Node' })).toBe(3);
    expect(c.total()).toBe(4);
  });
});
