import { describe, expect, it } from 'vitest';
import {
  INTERRUPTION_KINDS,
  type InterruptionMessage,
  interruptionDeduplicationId,
  interruptionGroupId,
  interruptionTaint,
  parseInterruptionMessage,
  taintValue,
} from './interruption.ts';
import { messageGroupId } from './message.ts';

const spot: InterruptionMessage = {
  kind: 'Node',
  name: 'ip-10-0-1-23.eu-west-1.compute.internal',
  notice: {
    kind: 'spot-interruption',
    eventId: '2c3d4e5f-6a7b-48c9-8d0e-1f2a3b4c5d6e',
    eventTime: '2026-11-02T10:40:00.000Z',
    deadline: '2026-11-02T10:42:00.000Z',
    instanceId: 'i-05566778899aabbcc',
  },
};
const hook: InterruptionMessage = {
  kind: 'Instance',
  name: 'i-0a1b2c3d4e5f60718',
  notice: {
    kind: 'asg-lifecycle-termination',
    eventId: '3e1f2a4b-5c6d-47e8-9f0a-1b2c3d4e5f60',
    eventTime: '2026-11-03T08:15:00.000Z',
    instanceId: 'i-0a1b2c3d4e5f60718',
    lifecycleHook: {
      autoScalingGroupName: 'workers',
      lifecycleHookName: 'drain-before-terminate',
      lifecycleActionToken: '87654321-4321-4321-4321-210987654321',
    },
  },
};

describe('the interruption message', () => {
  it.each([
    ['a spot notice for a Node', spot],
    ['a lifecycle hook for an instance no Node is known for', hook],
    ['a lifecycle hook for a Node', { ...hook, kind: 'Node', name: 'worker-1' }],
  ])('parses %s back to itself', (_, message) => {
    expect(parseInterruptionMessage(JSON.stringify(message))).toEqual({ ok: true, message });
  });

  it.each([
    [
      'a lifecycle notice without its hook',
      { ...hook, kind: 'Node', notice: { ...hook.notice, lifecycleHook: undefined } },
      /lifecycleHook/,
    ],
    [
      'a hook on another kind',
      { ...spot, notice: { ...spot.notice, lifecycleHook: hook.notice.lifecycleHook } },
      /lifecycleHook/,
    ],
    ['an Instance key for a spot notice', { ...spot, kind: 'Instance', name: spot.notice.instanceId }, /Instance keys/],
    ['an Instance key naming another instance', { ...hook, name: 'i-0000000000000000f' }, /Instance keys/],
    ['an unknown kind', { ...spot, notice: { ...spot.notice, kind: 'meteor' } }, /kind/],
    ['a deadline that is no time', { ...spot, notice: { ...spot.notice, deadline: 'in 2 minutes' } }, /deadline/],
    ['an unknown field', { ...spot, extra: 1 }, /extra/],
    ['an uppercase Node name', { ...spot, name: 'Worker' }, /name/],
  ])('refuses %s', (_, message, pattern) => {
    const parsed = parseInterruptionMessage(JSON.stringify(message));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toMatch(pattern);
  });

  it('is grouped by the Node key every other queue uses, or by the instance when there is no Node', () => {
    expect(interruptionGroupId(spot)).toBe(messageGroupId({ kind: 'Node', name: spot.name }));
    expect(interruptionGroupId(spot)).toBe('Node//ip-10-0-1-23.eu-west-1.compute.internal');
    expect(interruptionGroupId(hook)).toBe('Instance//i-0a1b2c3d4e5f60718');
    // SQS's 128 characters: a long Node name is hashed, as for keys.
    const long = { ...spot, name: 'a'.repeat(200) };
    expect(interruptionGroupId(long)).toMatch(/^Node\/sha256:[0-9a-f]{64}$/);
  });

  it('an instance-running notice (the end of an interruption) has a group of its own, so waiting on it holds back no notice', () => {
    const running: InterruptionMessage = {
      kind: 'Node',
      name: spot.name,
      notice: {
        kind: 'instance-running',
        eventId: 'start-1',
        eventTime: '2026-11-02T11:00:00.000Z',
        instanceId: spot.notice.instanceId,
      },
    };
    expect(parseInterruptionMessage(JSON.stringify(running))).toEqual({ ok: true, message: running });
    expect(interruptionGroupId(running)).toBe('Running//ip-10-0-1-23.eu-west-1.compute.internal');
    expect(interruptionGroupId(running)).not.toBe(interruptionGroupId(spot));
    expect(interruptionGroupId({ ...running, name: 'a'.repeat(200) })).toMatch(/^Running\/sha256:[0-9a-f]{64}$/);
    const keyedByInstance = { ...running, kind: 'Instance', name: running.notice.instanceId };
    expect(parseInterruptionMessage(JSON.stringify(keyedByInstance)).ok).toBe(false);
  });

  it('deduplicates by key and event ID: the same event again is dropped, another event or Node is not', () => {
    const id = interruptionDeduplicationId(spot);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(interruptionDeduplicationId(structuredClone(spot))).toBe(id);
    expect(interruptionDeduplicationId({ ...spot, notice: { ...spot.notice, eventId: 'other' } })).not.toBe(id);
    expect(interruptionDeduplicationId({ ...spot, name: 'other-node' })).not.toBe(id);
  });
});

describe('interruption taints', () => {
  it.each([
    ['spot-interruption', 'aws-node-termination-handler/spot-itn'],
    ['rebalance-recommendation', 'aws-node-termination-handler/rebalance-recommendation'],
    ['scheduled-maintenance', 'aws-node-termination-handler/scheduled-maintenance'],
    ['asg-lifecycle-termination', 'aws-node-termination-handler/asg-lifecycle-termination'],
  ] as const)('%s taints %s:NoSchedule with the event ID', (kind, key) => {
    expect(interruptionTaint(kind, 'evt-1')).toEqual({ key, value: 'evt-1', effect: 'NoSchedule' });
  });

  it('capacity reservation and instance-stopping notices have no reference taint', () => {
    expect(interruptionTaint('capacity-reservation-interruption', 'e')).toBeUndefined();
    expect(interruptionTaint('instance-stopping', 'e')).toBeUndefined();
    expect(INTERRUPTION_KINDS).toHaveLength(6);
  });

  it.each([
    ['a UUID as it is', '2c3d4e5f-6a7b-48c9-8d0e-1f2a3b4c5d6e', '2c3d4e5f-6a7b-48c9-8d0e-1f2a3b4c5d6e'],
    ['characters a label cannot hold as dashes', 'a:b/c d', 'a-b-c-d'],
    ['no leading or trailing punctuation', '--x.y__', 'x.y'],
    ['at most 63 characters', 'a'.repeat(100), 'a'.repeat(63)],
    ['no trailing dash left by the cut', `${'a'.repeat(62)}-b`, 'a'.repeat(62)],
    ['nothing valid as empty', '::', ''],
  ])('taint values: %s', (_, eventId, value) => {
    expect(taintValue(eventId)).toBe(value);
    expect(value).toMatch(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/);
    expect(value.length).toBeLessThanOrEqual(63);
  });
});
