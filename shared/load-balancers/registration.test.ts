import { describe, expect, it } from 'vitest';
import type { Target, TargetHealth } from '../aws/elbv2-port.ts';
import { MetricName, RecordingMetrics } from '../observability/metrics.ts';
import { registerByDifference } from './registration.ts';

/** The one registration path: the difference written, deregistrations first, draining targets counted absent. */

function fakeGroup(current: TargetHealth[]) {
  const calls: string[] = [];
  return {
    calls,
    elbv2: {
      describeTargetHealth: async () => {
        calls.push('describe');
        return current;
      },
      registerTargets: async (_: string, t: readonly Target[]) => void calls.push(`register ${t.map((x) => x.id)}`),
      deregisterTargets: async (_: string, t: readonly Target[]) => void calls.push(`deregister ${t.map((x) => x.id)}`),
    },
  };
}

const health = (id: string, state: TargetHealth['state'] = 'healthy'): TargetHealth => ({
  target: { id, port: 80 },
  state,
});

describe('registerByDifference', () => {
  it('deregisters what is not wanted, then registers what is missing (a draining one again), and counts them', async () => {
    const group = fakeGroup([health('a'), health('b'), health('c', 'draining')]);
    const metrics = new RecordingMetrics();
    const result = await registerByDifference({ elbv2: group.elbv2, metrics }, 'arn', [
      { id: 'a', port: 80 },
      { id: 'c', port: 80 },
      { id: 'd', port: 80 },
    ]);
    expect(group.calls).toEqual(['describe', 'deregister b', 'register c,d']);
    expect(result.writes).toBe(2);
    expect(metrics.total(MetricName.TargetsRegistered)).toBe(2);
    expect(metrics.total(MetricName.TargetsDeregistered)).toBe(1);
  });

  it('a group in line: no write; a new group: no read', async () => {
    const group = fakeGroup([health('a')]);
    expect((await registerByDifference(group, 'arn', [{ id: 'a', port: 80 }])).writes).toBe(0);
    const created = fakeGroup([health('x')]);
    await registerByDifference(created, 'arn', [{ id: 'a', port: 80 }], { created: true });
    expect(created.calls).toEqual(['register a']);
  });
});
