/**
 * The `node:http` that the SDK's IMDS credential provider (`@smithy/credential-provider-imds`) sees in the
 * executable's plugin script: the build resolves the provider's one import of it (its `node-http` module) here
 * (`IMDS_ON_HTTP1` in scripts/build-credential-provider.ts). Everything that decides what the provider asks and
 * how (IMDSv2 tokens, the IMDSv1 fallback and its settings, the endpoint and its mode, retries, static stability)
 * stays the SDK's; only its three plain-HTTP requests go on http1.ts's exchange instead, so that the usual node,
 * which takes the instance role, does not load `node:http` at every start (see http1.ts for why).
 *
 * `request` gives the provider what it uses of a `ClientRequest`: `end()`, `destroy()`, and the `response`, `error`
 * and `timeout` events, with an answer that emits its body as `data` then `end`. The `timeout` option is the
 * socket's idle timeout, connecting included, as in `node:http`. Anything but plain HTTP goes to the real module,
 * which refuses it as it always did here (the provider only speaks HTTP to IMDS).
 */
import { EventEmitter } from 'node:events';
import type { ClientRequest, RequestOptions } from 'node:http';
import { exchangeOnce } from './http1.ts';

/** No timeout given (or 0): the longest kubelet waits for a provider. */
const DEFAULT_TIMEOUT_MS = 60_000;

function request(options: RequestOptions): ClientRequest {
  const protocol = options.protocol ?? 'http:';
  if (protocol !== 'http:') return process.getBuiltinModule('node:http').request(options);
  const emitter = new EventEmitter();
  let destroyed = false;
  // 0 is no timeout to node:http; here it is the longest wait, as for none given.
  const timeout = options.timeout || DEFAULT_TIMEOUT_MS;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value !== undefined) headers[name] = String(value);
  }
  const end = () => {
    exchangeOnce(
      {
        protocol,
        hostname: options.hostname ?? options.host ?? 'localhost',
        ...(options.port ? { port: Number(options.port) } : {}),
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers,
      },
      { connectionTimeoutMs: timeout, requestTimeoutMs: timeout },
    ).then(
      (answer) => {
        if (destroyed) return;
        const response = Object.assign(new EventEmitter(), { statusCode: answer.statusCode, headers: answer.headers });
        emitter.emit('response', response);
        if (answer.body.length > 0) response.emit('data', answer.body);
        response.emit('end');
      },
      (err: Error) => {
        if (destroyed) return;
        if (err.name === 'TimeoutError') emitter.emit('timeout');
        else emitter.emit('error', err);
      },
    );
    return emitter;
  };
  const destroy = () => {
    destroyed = true;
    return emitter;
  };
  return Object.assign(emitter, { end, destroy }) as unknown as ClientRequest;
}

/** What the provider's `node-http` module exports. */
export const node_http = { request };
