import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { join } from 'node:path';
import type { Log } from '../../../shared/observability/log.ts';
import type { KeyPair } from './server.ts';

/**
 * The cert-manager mode: the serving certificate is a Secret cert-manager keeps current, mounted as a
 * directory (`tls.crt`, `tls.key`). The kubelet swaps the files in place when the Secret changes;
 * a watch on the directory notices at once, a periodic read notices regardless (a watch on a
 * volume can miss the kubelet's symlink swap). The relay only reads.
 * https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-files-from-a-pod
 */

export class CertificateDirectoryError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CertificateDirectoryError';
  }
}

export function readKeyPair(directory: string): KeyPair {
  const read = (file: string) => {
    try {
      return readFileSync(join(directory, file), 'utf8');
    } catch (err) {
      throw new CertificateDirectoryError(`reading ${join(directory, file)}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  };
  return { cert: read('tls.crt'), key: read('tls.key') };
}

export interface CertificateDirectoryWatch {
  /** Read the files now; calls `onChange` when they differ from what was last taken. */
  check(): void;
  stop(): void;
}

/**
 * Calls `apply` with the files' key pair whenever they change (after `initial`). A pair `apply` refuses
 * (cert and key written a moment apart) is logged and tried again at the next change or poll.
 */
export function watchCertificateDirectory(
  directory: string,
  initial: KeyPair,
  apply: (pair: KeyPair) => void,
  options: { pollMs: number; log: Log },
): CertificateDirectoryWatch {
  let current = initial;
  const check = () => {
    let pair: KeyPair;
    try {
      pair = readKeyPair(directory);
    } catch (err) {
      options.log.warn('webhook certificate directory unreadable; serving the last certificate', {
        error: (err as Error).message,
      });
      return;
    }
    if (pair.cert === current.cert && pair.key === current.key) return;
    try {
      apply(pair);
      current = pair;
      options.log.info('reloaded the webhook certificate', { directory });
    } catch (err) {
      options.log.warn('webhook certificate and key do not fit together yet; serving the last certificate', {
        error: (err as Error).message,
      });
    }
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(directory, () => check());
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined; // polling alone still picks changes up
  }
  const timer = setInterval(check, options.pollMs);
  timer.unref();
  return {
    check,
    stop() {
      clearInterval(timer);
      watcher?.close();
    },
  };
}
