import { describe, expect, it } from 'vitest';
import { podOnNode } from '../../test/helpers/pods.ts';
import { drainAction, isDrained, type PodDrainAction, planDrain, podGracePeriodSeconds } from './drain.ts';
import type { Pod } from './types.ts';

const terminating = (pod: Pod): Pod => ({
  ...pod,
  metadata: { ...pod.metadata, deletionTimestamp: '2026-11-02T08:00:30Z' },
});
const withNonControllerOwner = (pod: Pod, kind: string): Pod => ({
  ...pod,
  metadata: { ...pod.metadata, ownerReferences: [{ apiVersion: 'apps/v1', kind, name: 'x', uid: 'u' }] },
});

describe('drainAction', () => {
  it.each<[string, Pod, PodDrainAction]>([
    [
      'a ReplicaSet Pod is evicted with the default 30 s',
      podOnNode('n', 'web', { owner: { kind: 'ReplicaSet', name: 'web-1' } }),
      { action: 'evict', gracePeriodSeconds: 30 },
    ],
    [
      'a bare Pod is evicted with its own grace period',
      podOnNode('n', 'p', { gracePeriodSeconds: 120 }),
      { action: 'evict', gracePeriodSeconds: 120 },
    ],
    [
      'a grace period of 0 stays 0',
      podOnNode('n', 'p', { gracePeriodSeconds: 0 }),
      { action: 'evict', gracePeriodSeconds: 0 },
    ],
    [
      'a running DaemonSet Pod is skipped',
      podOnNode('n', 'ds', { owner: { kind: 'DaemonSet', name: 'fluent' } }),
      { action: 'skip', reason: 'daemonset' },
    ],
    [
      'a DaemonSet that only owns without controlling does not make it a DaemonSet Pod',
      withNonControllerOwner(podOnNode('n', 'p'), 'DaemonSet'),
      { action: 'evict', gracePeriodSeconds: 30 },
    ],
    ['a mirror Pod is skipped', podOnNode('n', 'kube-proxy', { mirror: true }), { action: 'skip', reason: 'mirror' }],
    [
      'a finished mirror Pod is still skipped',
      podOnNode('n', 'static', { mirror: true, phase: 'Succeeded' }),
      { action: 'skip', reason: 'mirror' },
    ],
    [
      'a Succeeded Pod is deleted',
      podOnNode('n', 'job-1', { phase: 'Succeeded', owner: { kind: 'Job', name: 'j', apiVersion: 'batch/v1' } }),
      { action: 'delete' },
    ],
    ['a Failed Pod is deleted', podOnNode('n', 'p', { phase: 'Failed' }), { action: 'delete' }],
    [
      'a finished DaemonSet Pod is deleted',
      podOnNode('n', 'ds', { phase: 'Failed', owner: { kind: 'DaemonSet', name: 'fluent' } }),
      { action: 'delete' },
    ],
    ['a terminating Pod is waited for', terminating(podOnNode('n', 'p')), { action: 'wait' }],
    [
      'a terminating finished Pod is waited for',
      terminating(podOnNode('n', 'p', { phase: 'Succeeded' })),
      { action: 'wait' },
    ],
    [
      'a terminating DaemonSet Pod is waited for',
      terminating(podOnNode('n', 'ds', { owner: { kind: 'DaemonSet', name: 'f' } })),
      { action: 'wait' },
    ],
    [
      'a Pending Pod is evicted',
      podOnNode('n', 'p', { phase: 'Pending' }),
      { action: 'evict', gracePeriodSeconds: 30 },
    ],
    ['a not-ready Pod is evicted', podOnNode('n', 'p', { ready: false }), { action: 'evict', gracePeriodSeconds: 30 }],
  ])('%s', (_name, pod, expected) => {
    expect(drainAction(pod)).toEqual(expected);
  });

  it.each([
    [undefined, 120, 120],
    [90, 120, 90],
    [90, 30, 30],
    [0, 30, 0],
    [-5, 30, 0],
  ])('maxGracePeriodSeconds %s caps a grace period of %s at %s', (max, own, expected) => {
    const pod = podOnNode('n', 'p', { gracePeriodSeconds: own });
    expect(drainAction(pod, { maxGracePeriodSeconds: max })).toEqual({ action: 'evict', gracePeriodSeconds: expected });
    expect(podGracePeriodSeconds(pod, max)).toBe(expected);
  });
});

describe('planDrain and isDrained', () => {
  const pods = [
    podOnNode('n', 'web', { owner: { kind: 'ReplicaSet', name: 'web-1' }, gracePeriodSeconds: 45 }),
    podOnNode('n', 'ds', { owner: { kind: 'DaemonSet', name: 'fluent' } }),
    podOnNode('n', 'static', { mirror: true }),
    podOnNode('n', 'done', { phase: 'Succeeded' }),
    terminating(podOnNode('n', 'going')),
  ];

  it('sorts the Pods of a Node by what a pass does with them', () => {
    const plan = planDrain(pods, { maxGracePeriodSeconds: 40 });
    expect(plan.evict.map((e) => [e.pod.metadata.name, e.gracePeriodSeconds])).toEqual([['web', 40]]);
    expect(plan.delete.map((p) => p.metadata.name)).toEqual(['done']);
    expect(plan.skip.map((p) => p.metadata.name)).toEqual(['ds', 'static']);
    expect(plan.wait.map((p) => p.metadata.name)).toEqual(['going']);
  });

  it('is drained only when nothing but skipped Pods is left', () => {
    expect(isDrained(pods)).toBe(false);
    expect(isDrained([pods[0]!])).toBe(false);
    expect(isDrained([pods[3]!])).toBe(false);
    expect(isDrained([pods[4]!])).toBe(false);
    expect(isDrained([pods[1]!, pods[2]!])).toBe(true);
    expect(isDrained([])).toBe(true);
  });
});
