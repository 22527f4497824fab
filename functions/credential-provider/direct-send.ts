import { type HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { type ProxyEnv, proxyAgent } from '../../shared/net/proxy.ts';
import { type Answer, bareHost, exchangeOnce, type Timeouts, timeoutError } from './http1.ts';

/**
 * One HTTP exchange, the body read whole, as an `HttpResponse` (what the retry middleware reads `retry-after`
 * from): on a socket of its own (http1.ts) or, when a proxy is set, through `node:http(s)` and the proxy agent.
 * Failures are shaped as the SDK's handler shapes them, which is what the retry strategy classifies: socket errors
 * keep their `code` (ECONNREFUSED, ECONNRESET, ...), and both timeouts are a `TimeoutError`.
 */
export async function sendOnce(request: HttpRequest, timeouts: Timeouts, proxies?: ProxyEnv): Promise<HttpResponse> {
  if (proxies) return new HttpResponse(await sendThroughProxy(request, timeouts, proxies));
  const { protocol, hostname, port, method, path, headers, body } = request;
  const one = { protocol, hostname, method, path, headers, body: body as string | undefined };
  return new HttpResponse(await exchangeOnce(port ? { ...one, port } : one, timeouts));
}

/** `node:http(s)` with the proxy agent (shared/net/proxy.ts), which does the proxying. */
function sendThroughProxy(request: HttpRequest, timeouts: Timeouts, proxies: ProxyEnv): Promise<Answer> {
  const { request: open } = process.getBuiltinModule(request.protocol === 'https:' ? 'node:https' : 'node:http');
  return new Promise((resolve, reject) => {
    const outgoing = open(
      {
        protocol: request.protocol,
        hostname: bareHost(request.hostname),
        ...(request.port ? { port: request.port } : {}),
        method: request.method,
        path: request.path,
        headers: request.headers,
        agent: proxyAgent(request.protocol, proxies),
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('error', reject);
        incoming.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(incoming.headers)) {
            if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve({ statusCode: incoming.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
        });
      },
    );
    outgoing.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => {
        outgoing.destroy(timeoutError('connect', timeouts));
      }, timeouts.connectionTimeoutMs);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    outgoing.setTimeout(timeouts.requestTimeoutMs, () => {
      outgoing.destroy(timeoutError('idle', timeouts));
    });
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}
