import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { succeeded } from './event-source-mapping.ts';

/** The local event source mapping's one rule of its own: what it deletes after a partial batch failure. */
const record = (messageId: string, group?: string) =>
  ({ messageId, attributes: group === undefined ? {} : { MessageGroupId: group } }) as unknown as SQSRecord;

describe('the e2e event source mapping', () => {
  it('deletes what succeeded, but nothing of a message group after its failed message', () => {
    const records = [record('1', 'a'), record('2', 'b'), record('3', 'a'), record('4', 'b'), record('5', 'c')];
    // 3 failed: 1 (before it, same group) is done; nothing later of group a would be.
    expect(succeeded(records, new Set(['3'])).map((r) => r.messageId)).toEqual(['1', '2', '4', '5']);
    // 2 failed: 4, of its group and after it, is held back with it.
    expect(succeeded(records, new Set(['2'])).map((r) => r.messageId)).toEqual(['1', '3', '5']);
    expect(succeeded(records, new Set()).map((r) => r.messageId)).toEqual(['1', '2', '3', '4', '5']);
  });

  it('holds back nothing else after a failed message of a standard queue (no groups, no order)', () => {
    const records = [record('1'), record('2'), record('3')];
    expect(succeeded(records, new Set(['1'])).map((r) => r.messageId)).toEqual(['2', '3']);
  });
});
