/**
 * One HTTP/1.1 exchange on a connection of its own (`node:net`, or `node:tls` for HTTPS): the direct calls' way to
 * ECR and STS when no proxy is set (direct-send.ts `sendOnce`; through a proxy, Node.js's `node:http` and its proxy
 * agent do it).
 *
 * Why not `node:http` here too: this program makes one request per process, and `node:http` costs that process
 * more than the request. Loading it and making its first request took 19 million instructions more than the same
 * exchange on a plain socket (120 against 101 million for a whole `node` process, 80 for `node -e 0`) and 5 to 7 ms
 * of a start of about 50 (docs/credential-provider.md, "Size and start time"): its client, agent, parser and
 * message classes are compiled on first use at every start.
 *
 * The exchange is narrow, and so is what is written here:
 * - the request: one line, the caller's headers (`connection: close` added), the body; names, values and the path
 *   checked as `node:http` checks them, so no header can be smuggled in;
 * - the answer (RFC 9112): the status line and header fields, interim 1xx answers skipped, the body by
 *   `content-length`, by `chunked` transfer coding, or up to the server's close, whole in memory (at most
 *   `MAX_ANSWER_BYTES`); the socket is closed as soon as it is complete.
 * Failures are shaped as `node:http`'s are, which is what the SDK's retry strategy classifies: socket errors keep
 * their `code`, a connection closed before the answer ended is `ECONNRESET`, and both timeouts are a
 * `TimeoutError`.
 */
import type { Socket } from 'node:net';

export interface OneRequest {
  protocol: string;
  hostname: string;
  port?: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

export interface Answer {
  statusCode: number;
  /** Lower-case names; a repeated field's values joined with `, `, as `node:http` joins them. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface Timeouts {
  /** Until the TCP connection is made. */
  connectionTimeoutMs: number;
  /** The longest the socket may stay idle once made, as `node:http`'s request timeout. */
  requestTimeoutMs: number;
}

/** An answer to a token request is a few KiB; anything near this is not one. */
export const MAX_ANSWER_BYTES = 1024 * 1024;
/** The header section's limit; `node:http`'s default is 16 KiB. */
export const MAX_HEADER_BYTES = 64 * 1024;

/** RFC 9110 token characters: what a header name may hold. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a field value may not hold, as `node:http` checks it: control characters but tab, and beyond Latin-1. */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** A host name without the brackets a URL puts around an IPv6 address. */
export function bareHost(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * One of the two timeouts, named and worded as the SDK's HTTP handler words them (its retry strategy reads the
 * name): `connect` until the TCP connection is made, `idle` once it is.
 */
export function timeoutError(which: 'connect' | 'idle', timeouts: Timeouts): Error {
  const message =
    which === 'connect'
      ? `Socket timed out without establishing a connection within ${timeouts.connectionTimeoutMs} ms`
      : `Connection timed out after ${timeouts.requestTimeoutMs} ms`;
  return Object.assign(new Error(message), { name: 'TimeoutError' });
}

/** The request's bytes; throws, naming the problem, for anything `node:http` would refuse to send. */
export function serializeRequest(request: OneRequest): Buffer {
  if (!TOKEN.test(request.method)) throw new TypeError(`invalid HTTP method ${JSON.stringify(request.method)}`);
  if (!/^\/[\x21-\x7e]*$/.test(request.path)) {
    throw new TypeError(`request path ${JSON.stringify(request.path)} contains unescaped characters`);
  }
  const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(request.body);
  const lines = [`${request.method} ${request.path} HTTP/1.1`];
  const names = new Set<string>();
  for (const [name, value] of Object.entries(request.headers)) {
    if (!TOKEN.test(name)) throw new TypeError(`invalid header name ${JSON.stringify(name)}`);
    if (INVALID_VALUE.test(value)) throw new TypeError(`invalid character in the value of header ${name}`);
    names.add(name.toLowerCase());
    lines.push(`${name}: ${value}`);
  }
  if (!names.has('host')) {
    const bare = bareHost(request.hostname);
    const host = bare.includes(':') ? `[${bare}]` : bare;
    lines.push(`host: ${host}${request.port ? `:${request.port}` : ''}`);
  }
  // As node:http: a length for any body, and 0 for a method that expects one (the IMDS token's PUT has none).
  if (!names.has('content-length') && (body.length > 0 || /^(POST|PUT|PATCH)$/.test(request.method))) {
    lines.push(`content-length: ${body.length}`);
  }
  if (!names.has('connection')) lines.push('connection: close');
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** An error as `node:http` shapes it: a message and a socket-style `code`. */
function failure(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** The answer is malformed: not HTTP/1.x, or framing that cannot be trusted. Not retried, as with `node:http`. */
function malformed(what: string): Error {
  return new Error(`malformed HTTP answer: ${what}`);
}

interface Head {
  statusCode: number;
  headers: Record<string, string>;
  /** Where the body starts in the buffer. */
  bodyStart: number;
}

/** The first final (non-1xx) answer's head in `data`, or undefined while its header section is incomplete. */
function readHead(data: Buffer): Head | undefined {
  let start = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', start, 'latin1');
    if (end < 0) {
      if (data.length - start > MAX_HEADER_BYTES) throw malformed(`header section over ${MAX_HEADER_BYTES} bytes`);
      return undefined;
    }
    const [statusLine, ...fields] = data.toString('latin1', start, end).split('\r\n');
    const status = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine!);
    if (!status) throw malformed(`status line ${JSON.stringify(statusLine!.slice(0, 64))}`);
    const statusCode = Number(status[1]);
    start = end + 4;
    if (statusCode === 101) throw malformed('101 Switching Protocols to a request that asked for no upgrade');
    // 100 Continue, 103 Early Hints and the like come before the answer itself.
    if (statusCode < 200) continue;
    const headers: Record<string, string> = {};
    for (const field of fields) {
      const colon = field.indexOf(':');
      const name = field.slice(0, colon).toLowerCase();
      // RFC 9112 5.2: a field folded over lines is refused, as is a name with white space before the colon.
      if (colon <= 0 || !TOKEN.test(name)) throw malformed(`header line ${JSON.stringify(field.slice(0, 64))}`);
      const value = field.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    return { statusCode, headers, bodyStart: start };
  }
}

/** How the body's end is known (RFC 9112 6.3). */
type Framing = { kind: 'none' } | { kind: 'length'; length: number } | { kind: 'chunked' } | { kind: 'close' };

function framingOf(head: Head): Framing {
  if (head.statusCode === 204 || head.statusCode === 304) return { kind: 'none' };
  const coding = head.headers['transfer-encoding'];
  if (coding !== undefined) {
    // Only `chunked` as the last coding frames the body; any other coding runs to the close.
    const last = coding.split(',').pop()!.trim().toLowerCase();
    return last === 'chunked' ? { kind: 'chunked' } : { kind: 'close' };
  }
  const length = head.headers['content-length'];
  if (length === undefined) return { kind: 'close' };
  // A repeated field must repeat the same number.
  const values = new Set(length.split(',').map((v) => v.trim()));
  const [only] = values;
  if (values.size !== 1 || !/^\d{1,15}$/.test(only!)) throw malformed(`content-length ${JSON.stringify(length)}`);
  return { kind: 'length', length: Number(only) };
}

/** A chunked body decoded, or undefined while its last chunk and trailer section have not all arrived. */
function dechunk(data: Buffer, from: number): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = from;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at, 'latin1');
    if (lineEnd < 0) return undefined;
    const sizeText = data.toString('latin1', at, lineEnd).split(';')[0]!.trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw malformed(`chunk size ${JSON.stringify(sizeText.slice(0, 16))}`);
    const size = Number.parseInt(sizeText, 16);
    at = lineEnd + 2;
    if (size === 0) {
      // Trailer fields, then an empty line; they are not read.
      if (data.indexOf('\r\n', at, 'latin1') === at) return Buffer.concat(parts);
      const end = data.indexOf('\r\n\r\n', at, 'latin1');
      return end < 0 ? undefined : Buffer.concat(parts);
    }
    if (data.length < at + size + 2) return undefined;
    if (data.toString('latin1', at + size, at + size + 2) !== '\r\n') throw malformed('chunk not ended by CRLF');
    parts.push(data.subarray(at, at + size));
    at += size + 2;
  }
}

/**
 * The answer in `data`, once it is all there: undefined while more is to come. `closed` says the server closed the
 * connection, which ends a body framed by the close and cuts short any other.
 */
export function parseAnswer(data: Buffer, closed: boolean): Answer | undefined {
  const head = readHead(data);
  if (!head) {
    if (closed) throw failure('the connection closed before the answer ended', 'ECONNRESET');
    return undefined;
  }
  const answer = (body: Buffer): Answer => ({ statusCode: head.statusCode, headers: head.headers, body });
  const framing = framingOf(head);
  let body: Buffer | undefined;
  if (framing.kind === 'none') body = Buffer.alloc(0);
  else if (framing.kind === 'length') {
    if (data.length - head.bodyStart >= framing.length) {
      body = data.subarray(head.bodyStart, head.bodyStart + framing.length);
    }
  } else if (framing.kind === 'chunked') body = dechunk(data, head.bodyStart);
  else if (closed) body = data.subarray(head.bodyStart);
  if (body) return answer(body);
  if (closed) throw failure('the connection closed before the answer ended', 'ECONNRESET');
  return undefined;
}

/** Sends `request` on a connection of its own and reads the whole answer; see the top of this file. */
export async function exchangeOnce(request: OneRequest, timeouts: Timeouts): Promise<Answer> {
  const bytes = serializeRequest(request);
  const host = bareHost(request.hostname);
  let socket: Socket;
  if (request.protocol === 'https:') {
    const { connect } = process.getBuiltinModule('node:tls');
    const { isIP } = process.getBuiltinModule('node:net');
    // SNI carries host names only (RFC 6066); the certificate is checked against the host either way.
    socket = connect({
      host,
      port: request.port ?? 443,
      ...(isIP(host) ? {} : { servername: host }),
    });
  } else {
    socket = process.getBuiltinModule('node:net').connect({ host, port: request.port ?? 80 });
  }
  return new Promise<Answer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      socket.destroy();
      outcome();
    };
    const connectTimer = setTimeout(
      () => settle(() => reject(timeoutError('connect', timeouts))),
      timeouts.connectionTimeoutMs,
    );
    socket.once('connect', () => clearTimeout(connectTimer));
    socket.setTimeout(timeouts.requestTimeoutMs, () => {
      settle(() => reject(timeoutError('idle', timeouts)));
    });
    const attempt = (closed: boolean) => {
      try {
        const answer = parseAnswer(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), closed);
        if (answer) settle(() => resolve(answer));
      } catch (err) {
        settle(() => reject(err));
      }
    };
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > MAX_ANSWER_BYTES) {
        settle(() => reject(malformed(`answer over ${MAX_ANSWER_BYTES} bytes`)));
        return;
      }
      chunks.push(chunk);
      attempt(false);
    });
    socket.on('end', () => attempt(true));
    socket.on('close', () => attempt(true));
    socket.on('error', (err) => settle(() => reject(err)));
    // Written, not ended: a half-closed request is an aborted one to some servers. The socket closes once the
    // answer is read, or when the server closes it.
    socket.write(bytes);
  });
}
