/**
 * What the SDK's IMDS provider gets from `node_http.request` in the executable (imds-http.ts): the same requests on
 * the wire as `node:http` sends, and the events it listens for, each at the moment `node:http` would emit it.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { node_http } from './imds-http.ts';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function imds(answer: (req: IncomingMessage, res: import('node:http').ServerResponse) => void) {
  const seen: { method?: string; url?: string; headers: IncomingMessage['headers'] }[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    answer(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, seen };
}

/** Drives one request as the provider's `httpRequest` does, recording the events in order. */
function run(options: Parameters<typeof node_http.request>[0]) {
  return new Promise<string[]>((resolve) => {
    const events: string[] = [];
    const req = node_http.request(options);
    req.on('error', (err: NodeJS.ErrnoException) => {
      events.push(`error ${err.code}`);
      resolve(events);
    });
    req.on('timeout', () => {
      events.push('timeout');
      req.destroy();
      resolve(events);
    });
    req.on('response', (res: IncomingMessage) => {
      events.push(`response ${res.statusCode}`);
      res.on('data', (chunk: Buffer) => events.push(`data ${chunk}`));
      res.on('end', () => {
        events.push('end');
        resolve(events);
      });
    });
    req.end();
  });
}

describe("the IMDS provider's requests on http1.ts", () => {
  it("sends the token request as node:http does, and hands over the answer's status and body", async () => {
    const { port, seen } = await imds((_req, res) => res.end('a-token'));
    const events = await run({
      protocol: 'http:',
      hostname: '127.0.0.1',
      port,
      method: 'PUT',
      path: '/latest/api/token',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '21600' },
      timeout: 1000,
    });
    expect(events).toEqual(['response 200', 'data a-token', 'end']);
    expect(seen).toEqual([
      {
        method: 'PUT',
        url: '/latest/api/token',
        headers: {
          'x-aws-ec2-metadata-token-ttl-seconds': '21600',
          host: `127.0.0.1:${port}`,
          'content-length': '0',
          connection: 'close',
        },
      },
    ]);
  });

  it("passes an error status on for the provider to judge (401: its token expired), with an empty body's 'end'", async () => {
    const { port } = await imds((_req, res) => res.writeHead(401).end());
    const events = await run({ hostname: '127.0.0.1', port, path: '/latest/meta-data/iam/security-credentials/' });
    expect(events).toEqual(['response 401', 'end']);
  });

  it("emits 'timeout' for an IMDS that does not answer in time, as the provider expects", async () => {
    const { port } = await imds(() => {});
    expect(await run({ hostname: '127.0.0.1', port, path: '/latest/api/token', method: 'PUT', timeout: 100 })).toEqual([
      'timeout',
    ]);
  });

  it("emits 'error' with the socket's code when nothing listens", async () => {
    const { port } = await imds(() => {});
    await new Promise((resolve) => servers.pop()!.close(resolve));
    expect(await run({ hostname: '127.0.0.1', port, path: '/' })).toEqual(['error ECONNREFUSED']);
  });

  it('leaves anything but plain HTTP to node:http, which refuses HTTPS as it always did for this provider', () => {
    expect(() => node_http.request({ protocol: 'https:', hostname: '127.0.0.1', port: 1, path: '/' })).toThrow(
      'Protocol "https:" not supported. Expected "http:"',
    );
  });
});
