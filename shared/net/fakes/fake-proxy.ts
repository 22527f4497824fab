/**
 * A forward proxy on 127.0.0.1 for tests, recording what passes: CONNECT tunnels (how HTTPS goes through a proxy)
 * and absolute-form requests (how plain HTTP does). Never part of the bundle: only tests import it.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach } from 'vitest';

export interface FakeProxy {
  /** For `HTTPS_PROXY` / `HTTP_PROXY`. */
  url: string;
  /** `CONNECT host:port` or `METHOD absolute-url`, in arrival order. */
  seen: string[];
  close(): Promise<void>;
}

export async function startFakeProxy(): Promise<FakeProxy> {
  const seen: string[] = [];
  const tunnels = new Set<Socket>();
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const upstream = request(new URL(req.url ?? ''), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    seen.push(`CONNECT ${req.url}`);
    const at = (req.url ?? '').lastIndexOf(':');
    const upstream = connect(Number(req.url?.slice(at + 1)), req.url?.slice(0, at), () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const socket of [client, upstream]) {
      tunnels.add(socket);
      socket.on('close', () => tunnels.delete(socket));
    }
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        for (const socket of tunnels) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A fake proxy for the vitest suite that calls this: started before its tests, closed after them, its record
 * emptied before each test. What it returns reads through to the proxy of the running suite.
 */
export function suiteProxy(): FakeProxy {
  let proxy: FakeProxy | undefined;
  beforeAll(async () => {
    proxy = await startFakeProxy();
  });
  afterAll(() => proxy?.close());
  beforeEach(() => {
    if (proxy) proxy.seen.length = 0;
  });
  const running = () => {
    if (!proxy) throw new Error('suiteProxy: the suite has not started');
    return proxy;
  };
  return {
    get url() {
      return running().url;
    },
    get seen() {
      return running().seen;
    },
    close: () => running().close(),
  };
}
