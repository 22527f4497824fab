import { describe, expect, it } from 'vitest';
import type { Listener, ListenerSpec, TargetHealth } from '../aws/elbv2-port.ts';
import { DEFAULT_HEALTH_CHECK, healthCheckMatches } from './health-check.ts';
import { planListeners } from './listeners.ts';
import { changedEntries } from './tags.ts';
import { planTargets } from './targets.ts';

describe('targets', () => {
  const health = (id: string, state: TargetHealth['state'], port = 80): TargetHealth => ({
    target: { id, port },
    state,
  });
  it.each([
    ['registers what is missing', [{ id: 'a', port: 80 }], [], ['a:80'], []],
    ['deregisters what is no longer wanted', [], [health('a', 'healthy')], [], ['a:80']],
    [
      'leaves healthy, unhealthy and initial targets alone',
      [
        { id: 'a', port: 80 },
        { id: 'b', port: 80 },
        { id: 'c', port: 80 },
      ],
      [health('a', 'healthy'), health('b', 'unhealthy'), health('c', 'initial')],
      [],
      [],
    ],
    [
      'never deregisters a draining target again',
      [],
      [health('a', 'draining'), health('b', 'unhealthy.draining')],
      [],
      [],
    ],
    [
      'registers a draining target that is wanted again',
      [{ id: 'a', port: 80 }],
      [health('a', 'draining')],
      ['a:80'],
      [],
    ],
    ['a changed port is a new target', [{ id: 'a', port: 81 }], [health('a', 'healthy')], ['a:81'], ['a:80']],
  ])('%s', (_, desired, current, register, deregister) => {
    const plan = planTargets(desired, current);
    expect(plan.register.map((t) => `${t.id}:${t.port}`)).toEqual(register);
    expect(plan.deregister.map((t) => `${t.id}:${t.port}`)).toEqual(deregister);
  });
});

describe('listeners, attributes, health checks', () => {
  const listener = (port: number, extra: Partial<Listener> = {}): Listener => ({
    arn: `l-${port}`,
    loadBalancerArn: 'lb',
    port,
    protocol: 'TCP',
    certificateArns: [],
    targetGroupArn: `tg-${port}`,
    ...extra,
  });
  const want = (port: number, extra: Partial<ListenerSpec> = {}): ListenerSpec => ({
    port,
    protocol: 'TCP',
    targetGroupArn: `tg-${port}`,
    ...extra,
  });

  it('creates, modifies and removes listeners by port', () => {
    const plan = planListeners(
      [
        want(80),
        want(443, { protocol: 'TLS', certificateArn: 'c2' }),
        want(53, { protocol: 'UDP', targetGroupArn: 'tg-53u' }),
        want(8080),
      ],
      [listener(80), listener(443, { protocol: 'TLS', certificateArns: ['c1'] }), listener(53), listener(9000)],
    );
    expect(plan.create.map((l) => l.port)).toEqual([8080]);
    expect(plan.modify.map((m) => m.spec.port)).toEqual([443, 53]);
    expect(plan.remove.map((l) => l.port)).toEqual([9000]);
  });

  it('an unset SSL policy accepts whatever AWS chose', () => {
    const current = listener(443, { protocol: 'TLS', certificateArns: ['c'], sslPolicy: 'ELBSecurityPolicy-2016-08' });
    expect(planListeners([want(443, { protocol: 'TLS', certificateArn: 'c' })], [current]).modify).toEqual([]);
    expect(
      planListeners([want(443, { protocol: 'TLS', certificateArn: 'c', sslPolicy: 'P' })], [current]).modify,
    ).toHaveLength(1);
  });

  it('changes only the attributes that differ, and only those wanted', () => {
    expect(changedEntries({ a: '1', b: '2' }, { a: '1', b: '3', c: '4' })).toEqual({ b: '2' });
  });

  it('compares health checks field by field, path only where it applies', () => {
    expect(healthCheckMatches(DEFAULT_HEALTH_CHECK, { ...DEFAULT_HEALTH_CHECK })).toBe(true);
    expect(healthCheckMatches({ ...DEFAULT_HEALTH_CHECK, path: '/x' }, DEFAULT_HEALTH_CHECK)).toBe(true);
    expect(healthCheckMatches(DEFAULT_HEALTH_CHECK, { ...DEFAULT_HEALTH_CHECK, intervalSeconds: 10 })).toBe(false);
    const http = { ...DEFAULT_HEALTH_CHECK, protocol: 'HTTP' as const, path: '/a' };
    expect(healthCheckMatches(http, { ...http, path: '/b' })).toBe(false);
  });
});
