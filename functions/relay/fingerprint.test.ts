import { describe, expect, it } from 'vitest';
import { FingerprintTable, NOT_RELEVANT } from './fingerprint.ts';

/** The per-kind table the router keeps instead of objects: slots in typed arrays, owners' names shared. */
describe('FingerprintTable', () => {
  it('keeps per key an epoch, one fingerprint per rule and an owner', () => {
    // Prepare
    const table = new FingerprintTable(2);
    // Act
    const slot = table.add('team-a/pod-1');
    table.setEpoch(slot, 3);
    table.setFingerprint(slot, 1, 2 ** 52 + 7);
    table.setOwner(slot, 'node-a');
    // Assess
    expect(table.slot('team-a/pod-1')).toBe(slot);
    expect(table.epoch(slot)).toBe(3);
    expect(table.fingerprints(slot)).toEqual([NOT_RELEVANT, 2 ** 52 + 7]);
    expect(table.owner(slot)).toBe('node-a');
    expect(table.size).toBe(1);
  });

  it('clears a deleted slot before another key reuses it', () => {
    const table = new FingerprintTable(1);
    const slot = table.add('a');
    table.setEpoch(slot, 5);
    table.setFingerprint(slot, 0, 42);
    table.setOwner(slot, 'node-a');

    table.delete('a');
    const reused = table.add('b');

    expect(reused).toBe(slot);
    expect(table.slot('a')).toBeUndefined();
    expect([table.epoch(reused), table.fingerprint(reused, 0), table.owner(reused)]).toEqual([
      0,
      NOT_RELEVANT,
      undefined,
    ]);
  });

  it('grows past its first capacity without losing anything', () => {
    const table = new FingerprintTable(3);
    for (let i = 0; i < 1_000; i++) {
      const slot = table.add(`key-${i}`);
      table.setFingerprint(slot, 2, i + 1);
      table.setOwner(slot, `node-${i % 7}`);
    }
    expect(table.size).toBe(1_000);
    for (const [key, slot] of table.entries()) {
      const i = Number(key.slice(4));
      expect([table.fingerprint(slot, 2), table.owner(slot)]).toEqual([i + 1, `node-${i % 7}`]);
    }
  });

  it('shares an owner name between objects, and frees it with the last one', () => {
    const table = new FingerprintTable(1);
    const first = table.add('a');
    const second = table.add('b');
    table.setOwner(first, 'node-a');
    table.setOwner(second, 'node-a');
    table.setOwner(first, 'node-b');
    table.delete('b');
    const third = table.add('c');
    table.setOwner(third, 'node-c');

    expect([table.owner(first), table.owner(third)]).toEqual(['node-b', 'node-c']);
  });

  it('allows deleting the current key while iterating', () => {
    const table = new FingerprintTable(1);
    for (const key of ['a', 'b', 'c']) table.add(key);
    for (const [key] of table.entries()) if (key !== 'b') table.delete(key);
    expect([...table.entries()].map(([key]) => key)).toEqual(['b']);
  });
});
