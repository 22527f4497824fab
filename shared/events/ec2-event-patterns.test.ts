import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseEc2Event } from '../../functions/ec2-events/parse.ts';
import {
  EC2_EVENT_PATTERNS,
  EC2_EVENT_RULE_IDS,
  type Ec2EventPattern,
  INTERRUPTION_EVENT_PATTERNS,
} from './ec2-event-patterns.ts';

/** EventBridge matching for the fields these patterns use: each listed field's value must be one of the listed. */
function matches(pattern: Ec2EventPattern, event: Record<string, unknown>): boolean {
  const detail = (event.detail ?? {}) as Record<string, unknown>;
  return (
    pattern.source.includes(String(event.source)) &&
    pattern['detail-type'].includes(String(event['detail-type'])) &&
    Object.entries(pattern.detail ?? {}).every(([field, values]) => values.includes(String(detail[field])))
  );
}

const dir = new URL('../../test/fixtures/events/', import.meta.url);
const samples = readdirSync(dir).map((file) => ({
  file,
  event: JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as Record<string, unknown>,
}));
const all = { ...EC2_EVENT_PATTERNS, ...INTERRUPTION_EVENT_PATTERNS } as Record<string, Ec2EventPattern>;

describe('EventBridge patterns', () => {
  it.each(samples)('exactly one pattern matches the sample $file, and the router parses it', ({ event }) => {
    expect(Object.keys(all).filter((id) => matches(all[id]!, event))).toHaveLength(1);
    expect(parseEc2Event(JSON.stringify(event)).ok).toBe(true);
  });

  it('each interruption pattern matches a sample', () => {
    for (const pattern of Object.values(INTERRUPTION_EVENT_PATTERNS)) {
      expect(samples.some(({ event }) => matches(pattern, event))).toBe(true);
    }
  });

  it('the deployed rules do not include the interruption patterns yet', () => {
    expect(EC2_EVENT_RULE_IDS).toEqual([
      'StateChange',
      'SpotInterruption',
      'RebalanceRecommendation',
      'ScheduledChange',
    ]);
    for (const id of Object.keys(INTERRUPTION_EVENT_PATTERNS)) expect(EC2_EVENT_RULE_IDS).not.toContain(id);
  });
});
