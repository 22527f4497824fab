/**
 * The direct calls' one HTTP/1.1 exchange (http1.ts): the bytes it sends, how it reads every framing of an answer
 * and refuses a malformed one, and, against real sockets, when it settles and how it fails.
 */
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { exchangeOnce, MAX_ANSWER_BYTES, type OneRequest, parseAnswer, serializeRequest } from './http1.ts';

const REQUEST: OneRequest = {
  protocol: 'http:',
  hostname: '127.0.0.1',
  method: 'POST',
  path: '/',
  headers: {
    host: 'api.ecr.eu-west-1.amazonaws.com',
    'content-type': 'application/x-amz-json-1.1',
    'content-length': '2',
  },
  body: '{}',
};

const TIMEOUTS = { connectionTimeoutMs: 3_000, requestTimeoutMs: 10_000 };

const bytes = (text: string) => Buffer.from(text, 'latin1');

describe('serializeRequest', () => {
  it('writes the request line, the headers in order, connection: close, then the body', () => {
    expect(serializeRequest(REQUEST).toString('latin1')).toBe(
      'POST / HTTP/1.1\r\nhost: api.ecr.eu-west-1.amazonaws.com\r\ncontent-type: application/x-amz-json-1.1\r\n' +
        'content-length: 2\r\nconnection: close\r\n\r\n{}',
    );
  });

  it('adds host and content-length when the caller gave none', () => {
    const text = serializeRequest({ ...REQUEST, port: 8443, headers: {}, body: 'Action=x' }).toString('latin1');
    expect(text).toBe(
      'POST / HTTP/1.1\r\nhost: 127.0.0.1:8443\r\ncontent-length: 8\r\nconnection: close\r\n\r\nAction=x',
    );
    // A length of 0 for a method that expects a body (IMDS's token PUT), none for a GET, as node:http sends them.
    expect(serializeRequest({ ...REQUEST, method: 'PUT', headers: {}, body: undefined }).toString('latin1')).toBe(
      'PUT / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n',
    );
    expect(serializeRequest({ ...REQUEST, method: 'GET', headers: {}, body: undefined }).toString('latin1')).toBe(
      'GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n',
    );
    expect(serializeRequest({ ...REQUEST, hostname: '::1', headers: {} }).toString('latin1')).toMatch(
      /\r\nhost: \[::1\]\r\n/,
    );
    // A URL's hostname keeps the brackets; they are not doubled.
    expect(serializeRequest({ ...REQUEST, hostname: '[::1]', headers: {} }).toString('latin1')).toMatch(
      /\r\nhost: \[::1\]\r\n/,
    );
  });

  it('refuses what would let a header or a request line be smuggled in, naming it', () => {
    const withHeader = (name: string, value: string) => () =>
      serializeRequest({ ...REQUEST, headers: { ...REQUEST.headers, [name]: value } });
    expect(withHeader('x-amz-security-token', 'abc\r\nx-evil: 1')).toThrow(
      /invalid character in the value of header x-amz-security-token/,
    );
    expect(withHeader('x-ok', 'line\nbreak')).toThrow(/x-ok/);
    expect(withHeader('x-ok', 'beyond latin-1 \u2028')).toThrow(/x-ok/);
    expect(withHeader('bad name', 'v')).toThrow(/invalid header name "bad name"/);
    expect(() => serializeRequest({ ...REQUEST, path: '/a b' })).toThrow(/unescaped characters/);
    expect(() => serializeRequest({ ...REQUEST, method: 'POST /x' })).toThrow(/invalid HTTP method/);
    // A tab is allowed in a value, as in node:http.
    expect(withHeader('x-tab', 'a\tb')()).toBeInstanceOf(Buffer);
  });
});

describe('parseAnswer', () => {
  const OK = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n';

  it('reads a body framed by content-length, only once all of it is there', () => {
    const whole = bytes(`${OK}content-length: 11\r\n\r\n{"a":"bcd"}`);
    for (let end = 0; end < whole.length; end++) expect(parseAnswer(whole.subarray(0, end), false)).toBeUndefined();
    const answer = parseAnswer(whole, false)!;
    expect(answer.statusCode).toBe(200);
    expect(answer.headers).toEqual({ 'content-type': 'application/json', 'content-length': '11' });
    expect(answer.body.toString()).toBe('{"a":"bcd"}');
  });

  it('decodes a chunked body at any split, with chunk extensions and trailer fields', () => {
    const whole = bytes(
      `${OK}transfer-encoding: chunked\r\n\r\n4;ext=1\r\n{"a"\r\nA\r\n:"bcdefgh"\r\n1\r\n}\r\n0\r\nx-t: 1\r\n\r\n`,
    );
    for (let end = 0; end < whole.length; end++) expect(parseAnswer(whole.subarray(0, end), false)).toBeUndefined();
    expect(parseAnswer(whole, false)!.body.toString()).toBe('{"a":"bcdefgh"}');
    const plain = bytes(`${OK}transfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`);
    expect(parseAnswer(plain, false)!.body.toString()).toBe('{}');
  });

  it('lets chunked framing win over a content-length, as RFC 9112 says', () => {
    const answer = bytes(`${OK}content-length: 100\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`);
    expect(parseAnswer(answer, false)!.body.toString()).toBe('{}');
  });

  it('reads a body without framing up to the close', () => {
    const answer = bytes(`${OK}\r\n{"partial`);
    expect(parseAnswer(answer, false)).toBeUndefined();
    expect(parseAnswer(answer, true)!.body.toString()).toBe('{"partial');
    const coded = bytes(`${OK}transfer-encoding: gzip\r\n\r\nraw`);
    expect(parseAnswer(coded, false)).toBeUndefined();
    expect(parseAnswer(coded, true)!.body.toString()).toBe('raw');
  });

  it('skips interim 1xx answers, and knows 204 and 304 have no body', () => {
    const answer = parseAnswer(bytes(`HTTP/1.1 100 Continue\r\n\r\n${OK}content-length: 2\r\n\r\n{}`), false)!;
    expect([answer.statusCode, answer.body.toString()]).toEqual([200, '{}']);
    expect(parseAnswer(bytes('HTTP/1.1 204 No Content\r\n\r\n'), false)!.body.length).toBe(0);
  });

  it('lower-cases names, trims values and joins a repeated field', () => {
    const answer = parseAnswer(
      bytes(
        'HTTP/1.0 400 \r\nX-Amzn-ErrorType: \t ThrottlingException  \r\nVia: a\r\nvia: b\r\ncontent-length: 0\r\n\r\n',
      ),
      false,
    )!;
    expect(answer.statusCode).toBe(400);
    expect(answer.headers).toEqual({ 'x-amzn-errortype': 'ThrottlingException', via: 'a, b', 'content-length': '0' });
  });

  it('refuses a malformed answer, naming what is wrong', () => {
    const refused = (text: string) => () => parseAnswer(bytes(text), false);
    expect(refused('HTTP/2 200\r\n\r\n')).toThrow(/malformed HTTP answer: status line "HTTP\/2 200"/);
    expect(refused('ICY 200 OK\r\n\r\n')).toThrow(/status line/);
    expect(refused('HTTP/1.1 101 Switching Protocols\r\n\r\n')).toThrow(/101/);
    expect(refused(`${OK}content-length: 2, 3\r\n\r\n{}`)).toThrow(/content-length "2, 3"/);
    expect(refused(`${OK}content-length: -1\r\n\r\n`)).toThrow(/content-length/);
    expect(refused(`${OK}x-folded: a\r\n  b\r\n\r\n`)).toThrow(/header line " {2}b"/);
    expect(refused(`${OK}bad name: a\r\n\r\n`)).toThrow(/header line "bad name: a"/);
    expect(refused(`${OK}transfer-encoding: chunked\r\n\r\nzz\r\n`)).toThrow(/chunk size "zz"/);
    expect(refused(`${OK}transfer-encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n`)).toThrow(/chunk not ended by CRLF/);
    expect(refused(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(70_000)}`)).toThrow(/header section over 65536 bytes/);
    // The same content-length repeated is one length.
    expect(parseAnswer(bytes(`${OK}content-length: 2, 2\r\n\r\n{}`), false)!.body.toString()).toBe('{}');
  });

  it('calls an answer cut short by the close a reset connection, which the retry strategy retries', () => {
    for (const text of [
      '',
      'HTTP/1.1 200 OK\r\ncontent-',
      `${OK}content-length: 10\r\n\r\n{}`,
      `${OK}transfer-encoding: chunked\r\n\r\n2\r\n{}`,
    ]) {
      expect(() => parseAnswer(bytes(text), true)).toThrow(
        expect.objectContaining({ code: 'ECONNRESET', message: 'the connection closed before the answer ended' }),
      );
    }
  });
});

describe('exchangeOnce against real sockets', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  /** A raw TCP server: `onRequest` gets the socket once the whole request (headers and `{}`) has arrived. */
  async function rawServer(onRequest: (socket: Socket, request: string) => void): Promise<number> {
    const server = createServer((socket) => {
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1');
        if (text.endsWith('\r\n\r\n{}')) onRequest(socket, text);
      });
      socket.on('error', () => {});
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  it("sends the request node:http's server reads as sent, and reads its answer", async () => {
    let seen: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string } | undefined;
    const server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        seen = { method: req.method, url: req.url, headers: req.headers, body };
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': 'r-1' });
        res.end('{"authorizationData":[]}');
      });
    });
    servers.push(server as unknown as Server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;

    const answer = await exchangeOnce({ ...REQUEST, port }, TIMEOUTS);
    expect(seen).toMatchObject({
      method: 'POST',
      url: '/',
      headers: { host: 'api.ecr.eu-west-1.amazonaws.com', 'content-length': '2', connection: 'close' },
      body: '{}',
    });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['x-amzn-requestid']).toBe('r-1');
    expect(answer.body.toString()).toBe('{"authorizationData":[]}');
  });

  it('settles as soon as the answer is whole, without waiting for the server to close, and then closes', async () => {
    let clientClosed: Promise<void> | undefined;
    const port = await rawServer((socket) => {
      clientClosed = new Promise((resolve) => socket.on('close', () => resolve()));
      // Sent in pieces, and the connection left open.
      socket.write('HTTP/1.1 200 OK\r\ncontent-le');
      setTimeout(() => socket.write('ngth: 2\r\n\r\n{'), 20);
      setTimeout(() => socket.write('}'), 40);
    });
    const answer = await exchangeOnce({ ...REQUEST, port }, TIMEOUTS);
    expect(answer.body.toString()).toBe('{}');
    await clientClosed;
  });

  it('keeps its side of the connection open until the answer (no half-close)', async () => {
    let endedEarly = false;
    const port = await rawServer((socket) => {
      socket.on('end', () => (endedEarly = true));
      setTimeout(() => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}'), 50);
    });
    await exchangeOnce({ ...REQUEST, port }, TIMEOUTS);
    expect(endedEarly).toBe(false);
  });

  it('fails with ECONNRESET when the server closes mid-answer', async () => {
    const port = await rawServer((socket) => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n{}'));
    await expect(exchangeOnce({ ...REQUEST, port }, TIMEOUTS)).rejects.toMatchObject({ code: 'ECONNRESET' });
  });

  it('fails with the socket error code when nothing listens', async () => {
    const port = await rawServer(() => {});
    await new Promise((resolve) => servers.pop()!.close(resolve));
    await expect(exchangeOnce({ ...REQUEST, port }, TIMEOUTS)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('times out a server that never answers, as a TimeoutError, and closes the socket', async () => {
    let clientClosed: Promise<void> | undefined;
    const port = await rawServer((socket) => {
      clientClosed = new Promise((resolve) => socket.on('close', () => resolve()));
    });
    await expect(exchangeOnce({ ...REQUEST, port }, { ...TIMEOUTS, requestTimeoutMs: 100 })).rejects.toMatchObject({
      name: 'TimeoutError',
      message: 'Connection timed out after 100 ms',
    });
    await clientClosed;
  });

  it('refuses an answer larger than any token answer, without reading on', async () => {
    const port = await rawServer((socket) => {
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${MAX_ANSWER_BYTES * 2}\r\n\r\n`);
      socket.write(Buffer.alloc(MAX_ANSWER_BYTES + 1, 'a'));
    });
    await expect(exchangeOnce({ ...REQUEST, port }, TIMEOUTS)).rejects.toThrow(/answer over 1048576 bytes/);
  });

  it('refuses to send a request with an injected header, before connecting', async () => {
    let connected = false;
    const port = await rawServer(() => {});
    servers[0]!.on('connection', () => (connected = true));
    await expect(
      exchangeOnce({ ...REQUEST, port, headers: { 'x-amz-security-token': 'a\r\nx: y' } }, TIMEOUTS),
    ).rejects.toThrow(/invalid character/);
    expect(connected).toBe(false);
  });
});
