import { request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { describeCertificate } from '../certificates.ts';

/** An HTTPS client for the webhook tests: trusts only `ca`, checks the certificate names `servername`. */
export async function post(
  port: number,
  path: string,
  body: string,
  tls: { ca: string; servername: string },
): Promise<{ status: number; body: string; servedNotAfter: number }> {
  return await new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        ca: tls.ca,
        servername: tls.servername,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const peer = (res.socket as TLSSocket).getPeerX509Certificate();
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            servedNotAfter: peer ? describeCertificate(peer.toString()).notAfter : 0,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export function review(request: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });
}

/** Waits until the async `check` holds (each try after the last one ended). */
export async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
