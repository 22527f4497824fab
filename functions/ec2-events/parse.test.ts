import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseEc2Event } from './parse.ts';

/**
 * The parsed shape of each sample event (test/fixtures/events, written from the AWS documentation's samples:
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/automating-ec2-auto-scaling-with-eventbridge.html,
 * https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-interruptible-cr.html,
 * https://docs.aws.amazon.com/health/latest/ug/cloudwatch-events-health.html).
 */
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../test/fixtures/events/${name}`, import.meta.url), 'utf8'));
const parse = (event: unknown) => parseEc2Event(JSON.stringify(event));

describe('parseEc2Event, one row per sample', () => {
  it.each([
    [
      'asg-terminate-lifecycle-action.json',
      {
        type: 'asg-lifecycle-termination',
        id: '3e1f2a4b-5c6d-47e8-9f0a-1b2c3d4e5f60',
        time: '2026-11-03T08:15:00Z',
        instanceIds: ['i-0a1b2c3d4e5f60718'],
        autoScalingGroupName: 'workers',
        lifecycleHookName: 'drain-before-terminate',
        lifecycleActionToken: '87654321-4321-4321-4321-210987654321',
      },
    ],
    [
      'ec2-capacity-reservation-interruption-warning.json',
      {
        type: 'capacity-reservation-interruption',
        id: '5a6b7c8d-9e0f-41a2-b3c4-d5e6f7a8b9c0',
        time: '2026-11-04T12:00:00Z',
        instanceIds: ['i-0fedcba9876543210'],
        action: 'terminate',
        terminationTime: '2026-11-04T12:02:00.000Z',
      },
    ],
    [
      'health-scheduled-retirement.json',
      {
        type: 'scheduled-change',
        id: '7d6c5b4a-3928-4716-a5b4-c3d2e1f0a9b8',
        time: '2026-11-01T00:00:00Z',
        instanceIds: ['i-0123456789abcdef0'],
        eventTypeCode: 'AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED',
        // Health writes RFC 1123 dates; the parsed event has ISO 8601.
        startTime: '2026-11-15T10:00:00.000Z',
      },
    ],
    [
      'ec2-spot-interruption-warning.json',
      {
        type: 'spot-interruption',
        id: '2c3d4e5f-6a7b-48c9-8d0e-1f2a3b4c5d6e',
        time: '2026-11-02T10:40:00Z',
        instanceIds: ['i-05566778899aabbcc'],
        action: 'terminate',
      },
    ],
  ])('%s', (file, expected) => {
    expect(parse(fixture(file))).toEqual({ ok: true, event: expected });
  });
});

describe('parseEc2Event, details it refuses or tolerates', () => {
  const lifecycle = fixture('asg-terminate-lifecycle-action.json');
  const capacity = fixture('ec2-capacity-reservation-interruption-warning.json');
  const health = fixture('health-scheduled-retirement.json');

  it('a lifecycle action without its token still parses (CompleteLifecycleAction takes the instance ID)', () => {
    const { LifecycleActionToken: _, ...detail } = lifecycle.detail;
    const parsed = parse({ ...lifecycle, detail });
    expect(parsed.ok && parsed.event).toEqual(expect.not.objectContaining({ lifecycleActionToken: expect.anything() }));
    expect(parsed.ok && parsed.event.type).toBe('asg-lifecycle-termination');
  });

  it.each([
    ['a launch transition', { ...lifecycle.detail, LifecycleTransition: 'autoscaling:EC2_INSTANCE_LAUNCHING' }],
    ['no group name', { ...lifecycle.detail, AutoScalingGroupName: undefined }],
    ['no hook name', { ...lifecycle.detail, LifecycleHookName: '' }],
    ['an instance ID that is none', { ...lifecycle.detail, EC2InstanceId: 'web-1' }],
  ])('refuses a lifecycle action with %s', (_, detail) => {
    const parsed = parse({ ...lifecycle, detail });
    expect(parsed).toMatchObject({ ok: false, error: expect.stringMatching(/bad detail/) });
  });

  it('a capacity reservation warning without a termination time parses, without one', () => {
    const { 'instance-termination-time': _, ...detail } = capacity.detail;
    const parsed = parse({ ...capacity, detail });
    expect(parsed.ok && parsed.event).toEqual(expect.not.objectContaining({ terminationTime: expect.anything() }));
  });

  it('refuses a capacity reservation warning whose termination time is no date', () => {
    const parsed = parse({ ...capacity, detail: { ...capacity.detail, 'instance-termination-time': 'soon' } });
    expect(parsed).toMatchObject({ ok: false, error: expect.stringMatching(/must be a date/) });
  });

  it('keeps an ISO 8601 Health startTime, and a Health event without one parses without one', () => {
    const iso = parse({ ...health, detail: { ...health.detail, startTime: '2026-11-15T10:00:00Z' } });
    expect(iso.ok && iso.event).toMatchObject({ startTime: '2026-11-15T10:00:00.000Z' });
    const { startTime: _, ...detail } = health.detail;
    const none = parse({ ...health, detail });
    expect(none.ok && none.event).toEqual(expect.not.objectContaining({ startTime: expect.anything() }));
  });

  it('an autoscaling event of another detail-type is unsupported, not malformed', () => {
    const parsed = parse({ ...lifecycle, 'detail-type': 'EC2 Instance Launch Successful' });
    expect(parsed).toMatchObject({ ok: false, unsupported: true });
  });
});
