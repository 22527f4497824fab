/**
 * `node:crypto` as the plugin's script sees it: the executable's build maps the bundled SDK code's imports of it
 * here (`lazyCrypto` in scripts/build-credential-provider.ts). Only the SDK clients' script, loaded by the runs that
 * need it, keeps the real module.
 *
 * Why: loading `node:crypto` evaluates some fifteen of Node.js's internal modules (ciphers, keys, Diffie-Hellman,
 * X.509, ...), about 5 ms of a start of about 60, and the usual runs (keys in the environment or the instance role,
 * ECR over plain HTTP, a service-account pull) need none of it:
 * - SigV4 is computed with the SDK's own JavaScript SHA-256 (`@aws-crypto/sha256-js`, direct.ts);
 * - the one other use is the random bytes behind the SDK's invocation ids (`amz-sdk-invocation-id`), which come
 *   from the kernel here, as OpenSSL takes them from the kernel for `node:crypto`.
 * Anything else the bundled SDK code imports loads the real module at its first call (the profile path's SSO token
 * file name, for one). TLS loads it on its own, as it must.
 */
import { closeSync, openSync, readSync } from 'node:fs';

type NodeCrypto = typeof import('node:crypto');

let loaded: NodeCrypto | undefined;
const real = (): NodeCrypto => {
  loaded ??= process.getBuiltinModule('node:crypto');
  return loaded;
};

export const createHash: NodeCrypto['createHash'] = (...args) => real().createHash(...args);
export const createHmac: NodeCrypto['createHmac'] = (...args) => real().createHmac(...args);

/** Web Crypto's limit for one call of `getRandomValues`. */
const MAX_RANDOM_BYTES = 65_536;

/**
 * Web Crypto's `getRandomValues` (which `node:crypto` re-exports): fills an integer typed array with random bytes,
 * read from `/dev/urandom` (the executable is for Linux only; the kernel's generator never blocks once seeded).
 */
export function getRandomValues<T extends ArrayBufferView | null>(array: T): T {
  if (
    !ArrayBuffer.isView(array) ||
    array instanceof DataView ||
    array instanceof Float32Array ||
    array instanceof Float64Array
  ) {
    throw new TypeError('getRandomValues needs an integer typed array');
  }
  if (array.byteLength > MAX_RANDOM_BYTES) {
    throw new RangeError(`getRandomValues can fill at most ${MAX_RANDOM_BYTES} bytes, not ${array.byteLength}`);
  }
  const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  const fd = openSync('/dev/urandom', 'r');
  try {
    for (let filled = 0; filled < bytes.length; ) {
      const read = readSync(fd, bytes, filled, bytes.length - filled, null);
      if (read === 0) throw new Error('/dev/urandom gave no bytes');
      filled += read;
    }
  } finally {
    closeSync(fd);
  }
  return array;
}
