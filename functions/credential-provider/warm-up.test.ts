/**
 * The build-time warm-up (warm-up.ts), run here in-process against the real SDK: it must answer every kind of
 * request from its canned answers without reading a file, and leave nothing of its guards behind. That it leaves
 * nothing in the executable is shown by executable.test.ts, on the built snapshot.
 */
import fs from 'node:fs';
import { EndpointCache } from '@smithy/core/endpoints';
import { describe, expect, it } from 'vitest';
import { warmUp } from './warm-up.ts';

describe('warmUp', () => {
  it('runs every kind of request without touching files, then restores what it patched', async () => {
    const before = {
      readFileSync: fs.readFileSync,
      readFile: fs.readFile,
      promisesReadFile: fs.promises.readFile,
      endpointCacheGet: EndpointCache.prototype.get,
    };
    const ownRandomUuid = Object.getOwnPropertyDescriptor(globalThis.crypto, 'randomUUID');

    await expect(warmUp('test')).resolves.toBeUndefined();

    expect(fs.readFileSync).toBe(before.readFileSync);
    expect(fs.readFile).toBe(before.readFile);
    expect(fs.promises.readFile).toBe(before.promisesReadFile);
    expect(EndpointCache.prototype.get).toBe(before.endpointCacheGet);
    expect(Object.getOwnPropertyDescriptor(globalThis.crypto, 'randomUUID')).toEqual(ownRandomUuid);
    expect(globalThis.crypto.randomUUID()).not.toBe(globalThis.crypto.randomUUID());
  });
});
