/** In-memory stdin/stdout and requests, to drive the plugin the way kubelet drives the process (tests). */
import { Readable, Writable } from 'node:stream';

export function stdinWith(text: string): Readable {
  return Readable.from([Buffer.from(text)]);
}

export class MemoryOutput extends Writable {
  text = '';

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.text += chunk.toString();
    callback();
  }
}

/** A request as kubelet writes it. */
export function request(image: string, apiVersion = 'credentialprovider.kubelet.k8s.io/v1', extra = {}): string {
  return JSON.stringify({ apiVersion, kind: 'CredentialProviderRequest', image, ...extra });
}
