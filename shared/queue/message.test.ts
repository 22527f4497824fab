import { describe, expect, it } from 'vitest';
import { keyString, messageDeduplicationId, messageGroupId, parseKeyMessage } from './message.ts';

describe('key messages', () => {
  it('group ID is the key; namespace empty for cluster-scoped kinds', () => {
    expect(messageGroupId({ kind: 'Node', name: 'ip-10-0-0-1.ec2.internal' })).toBe('Node//ip-10-0-0-1.ec2.internal');
    expect(keyString({ kind: 'Service', namespace: 'shop', name: 'web' })).toBe('Service/shop/web');
  });

  it('hashes group IDs longer than the 128 characters SQS allows', () => {
    const long = { kind: 'Node' as const, name: `${'a'.repeat(250)}.x` };
    const id = messageGroupId(long);
    expect(id.length).toBeLessThanOrEqual(128);
    expect(id).toBe(messageGroupId({ ...long }));
    expect(id).not.toBe(messageGroupId({ kind: 'Node', name: `${'a'.repeat(250)}.y` }));
  });

  it('deduplication ID changes with the revision, not with a re-send', () => {
    const a = messageDeduplicationId({ kind: 'Node', name: 'n', hint: { resourceVersion: '10' } });
    const again = messageDeduplicationId({ kind: 'Node', name: 'n', hint: { resourceVersion: '10' } });
    const newer = messageDeduplicationId({ kind: 'Node', name: 'n', hint: { resourceVersion: '11' } });
    const other = messageDeduplicationId({ kind: 'Node', name: 'm', hint: { resourceVersion: '10' } });
    expect(a).toBe(again);
    expect(new Set([a, newer, other]).size).toBe(3);
    expect(a).toMatch(/^[0-9a-f]{64}$/); // within SQS's 128-character limit
  });

  it.each([
    ['{', /not JSON/],
    ['[]', /not a key message/],
    ['{"kind":"Node"}', /name/],
    ['{"kind":"Node","name":"n","extra":1}', /extra/],
    ['{"kind":"Node","name":"n","hint":{"resourceVersion":5}}', /hint.resourceVersion/],
  ])('%s is refused with a message naming the problem', (body, pattern) => {
    const result = parseKeyMessage(body);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(pattern);
  });
});
