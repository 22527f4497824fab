import { request } from 'node:https';
import type { KubeLabAccess } from '../helpers/kube-lab.ts';

/**
 * The test's own calls to the lab's API server, as its admin (system:masters): plain HTTPS with the lab's CA, so
 * what the test sets up and checks never goes through the REST client the bundles are being tested with.
 */
export interface KubeAnswer {
  status: number;
  body: unknown;
  text: string;
}

export function kubeHttp(access: Pick<KubeLabAccess, 'url' | 'caData' | 'token'>) {
  const ca = Buffer.from(access.caData, 'base64');
  return (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeAnswer> =>
    new Promise((resolve, reject) => {
      const req = request(
        new URL(path, access.url),
        { method, ca, headers: { authorization: `Bearer ${access.token}`, 'content-type': contentType } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, text });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
}
