/**
 * The stand-in for `node:crypto` in the executable's plugin script (lazy-crypto.ts): the same answers as the real
 * module, random bytes from the kernel with Web Crypto's checks.
 */
import * as nodeCrypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createHash, createHmac, getRandomValues } from './lazy-crypto.ts';

describe('lazy node:crypto', () => {
  it('hashes and signs as node:crypto does', () => {
    expect(createHash('sha256').update('abc').digest('hex')).toBe(
      nodeCrypto.createHash('sha256').update('abc').digest('hex'),
    );
    expect(createHash('sha1').update('token file').digest('hex')).toBe(
      nodeCrypto.createHash('sha1').update('token file').digest('hex'),
    );
    expect(createHmac('sha256', 'key').update('data').digest('hex')).toBe(
      nodeCrypto.createHmac('sha256', 'key').update('data').digest('hex'),
    );
  });

  it('fills the whole array it is given, and returns it', () => {
    const array = new Uint8Array(64);
    expect(getRandomValues(array)).toBe(array);
    // 64 zero bytes from the kernel's generator would happen once in 2^512 runs.
    expect(array.some((byte) => byte !== 0)).toBe(true);
    expect(
      Buffer.from(getRandomValues(new Uint8Array(16))).equals(Buffer.from(getRandomValues(new Uint8Array(16)))),
    ).toBe(false);
  });

  it('fills only the view, not the rest of its buffer', () => {
    const buffer = new ArrayBuffer(32);
    const view = new Uint32Array(buffer, 8, 4);
    getRandomValues(view);
    const bytes = new Uint8Array(buffer);
    expect([...bytes.subarray(0, 8), ...bytes.subarray(24)]).toEqual(new Array(16).fill(0));
    expect(bytes.subarray(8, 24).some((byte) => byte !== 0)).toBe(true);
  });

  it("refuses what Web Crypto's getRandomValues refuses, naming the problem", () => {
    expect(() => getRandomValues(new Float64Array(2))).toThrow(/integer typed array/);
    expect(() => getRandomValues(new DataView(new ArrayBuffer(4)))).toThrow(/integer typed array/);
    expect(() => getRandomValues([1, 2] as unknown as Uint8Array)).toThrow(/integer typed array/);
    expect(() => getRandomValues(new Uint8Array(65_537))).toThrow(/at most 65536 bytes, not 65537/);
    expect(getRandomValues(new Uint8Array(65_536)).length).toBe(65_536);
  });
});
