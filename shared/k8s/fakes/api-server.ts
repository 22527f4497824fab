import { once } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * HTTPS on 127.0.0.1 with a self-signed certificate, recording every request and answering through a
 * supplied function. It speaks no Kubernetes by itself: `fake-kubernetes-server.ts` serves FakeKubernetes
 * on it, which is what the adapter tests talk to.
 */

/**
 * Test-only certificate and key for IP 127.0.0.1 (self-signed, valid until 2126), made with
 * `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -days 36500 -nodes
 * -subj "/CN=serverless-ccm test API server" -addext "subjectAltName=IP:127.0.0.1"`.
 * Nothing outside these tests trusts it.
 */
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBujCCAWCgAwIBAgIUGmBtF1zmjeXPO9yu7I1XcfUyRzgwCgYIKoZIzj0EAwIw
KTEnMCUGA1UEAwwec2VydmVybGVzcy1jY20gdGVzdCBBUEkgc2VydmVyMCAXDTI2
MTEyOTE4MTQxNloYDzIxMjYxMTA1MTgxNDE2WjApMScwJQYDVQQDDB5zZXJ2ZXJs
ZXNzLWNjbSB0ZXN0IEFQSSBzZXJ2ZXIwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNC
AAShn9MsNA6bcxM+ou6xFnZ0+eFgBJHXiGE1iK/6Pqx6rl8xu289VdDqQ+sSPgjU
mkxn5/SWosj0tkJi5//T5U++o2QwYjAdBgNVHQ4EFgQUHFym55z9MawjKrEmhILV
GdUwk2IwHwYDVR0jBBgwFoAUHFym55z9MawjKrEmhILVGdUwk2IwDwYDVR0TAQH/
BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0gAMEUCIAwtjsIv
JbVyH62jm2wvplUqg/wBSu3MWTaT+M0Np/ehAiEAzgQBLJDiuBPjUKlsU0eQ343r
kgiDoeWxYAIbRs7ZRR8=
-----END CERTIFICATE-----
`;
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg4HhV55eISk72NH3M
psa3D81cpwE1U5Sa5ZtbS2/CRbmhRANCAAShn9MsNA6bcxM+ou6xFnZ0+eFgBJHX
iGE1iK/6Pqx6rl8xu289VdDqQ+sSPgjUmkxn5/SWosj0tkJi5//T5U++
-----END PRIVATE KEY-----
`;

/** The CA bundle a KubeConfig needs to trust the fake server (base64 PEM, like `certificate-authority-data`). */
export const FAKE_API_SERVER_CA_DATA = Buffer.from(TEST_CERT).toString('base64');

/** The test certificate and key, for other test servers on 127.0.0.1 (the relay's list/watch server). */
export const FAKE_API_SERVER_TLS = { cert: TEST_CERT, key: TEST_KEY } as const;

export interface RecordedRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FakeResponse {
  status: number;
  /** Sent as JSON. */
  body?: unknown;
}

export type Responder = (request: RecordedRequest) => FakeResponse | Promise<FakeResponse>;

export interface FakeApiServer {
  /** `https://127.0.0.1:<port>` */
  url: string;
  requests: RecordedRequest[];
  /** TCP connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

export async function startFakeApiServer(respond: Responder): Promise<FakeApiServer> {
  const requests: RecordedRequest[] = [];
  let connections = 0;
  const server = createServer({ cert: TEST_CERT, key: TEST_KEY }, async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const parsed = new URL(req.url ?? '/', 'https://127.0.0.1');
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      path: parsed.pathname,
      query: parsed.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push(recorded);
    let answer: FakeResponse;
    try {
      answer = await respond(recorded);
    } catch (err) {
      answer = { status: 500, body: status(500, 'InternalError', String(err)) };
    }
    const text =
      answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(text);
  });
  server.on('connection', () => {
    connections += 1;
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    requests,
    connections: () => connections,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A Kubernetes `Status` failure body (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/). */
export function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}
