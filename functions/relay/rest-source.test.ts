import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KubernetesApiError } from '../../shared/k8s/errors.ts';
import { FAKE_API_SERVER_CA_DATA, FAKE_API_SERVER_TLS } from '../../shared/k8s/fakes/api-server.ts';
import { KubernetesRestClient } from '../../shared/k8s/rest-client.ts';
import { isGone, type WatchEvent, WatchInactivityError } from './kube-source.ts';
import { RestListWatch } from './rest-source.ts';
import { until } from './testing/objects.ts';

/**
 * The REST watch's reading of the wire, against a server that writes exactly what a test says: events
 * split across writes or several in one, a line that is not JSON, a refusal, silence, a broken
 * connection. The protocol as a whole (paging, bookmarks, 410 relists) is list-watch.test.ts, over both sources.
 */

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

async function serve(handler: (res: ServerResponse, url: URL) => void): Promise<RestListWatch> {
  server = createServer(FAKE_API_SERVER_TLS, (req, res) => handler(res, new URL(req.url ?? '/', 'https://x')));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const client = new KubernetesRestClient({
    server: `https://127.0.0.1:${port}`,
    caData: FAKE_API_SERVER_CA_DATA,
    token: 't',
  });
  return new RestListWatch(client);
}

const OPTIONS = { resourceVersion: '7', timeoutSeconds: 60, inactivityMs: 2_000 };
const line = (type: string, name: string, revision: string) =>
  `${JSON.stringify({ type, object: { metadata: { name, resourceVersion: revision } } })}\n`;

function record(source: RestListWatch, inactivityMs = OPTIONS.inactivityMs) {
  const events: WatchEvent[] = [];
  const ends: unknown[] = [];
  const handle = source.watch(
    'Node',
    { ...OPTIONS, inactivityMs },
    (e) => events.push(e),
    (error) => ends.push(error),
  );
  return { events, ends, handle };
}

describe('RestListWatch.watch', () => {
  it('asks for a watch with bookmarks from the revision, and reads events however the writes split them', async () => {
    let asked: URL | undefined;
    const source = await serve((res, url) => {
      asked = url;
      res.writeHead(200, { 'content-type': 'application/json' });
      const two = line('ADDED', 'a', '8') + line('MODIFIED', 'b', '9');
      const third = line('BOOKMARK', '', '10');
      // Two events in one write, then one cut in the middle of a multi-byte character.
      res.write(two);
      const bytes = Buffer.from(line('DELETED', 'ä-node', '11'));
      setTimeout(() => res.write(bytes.subarray(0, 40)), 20);
      setTimeout(() => res.write(Buffer.concat([bytes.subarray(40), Buffer.from(third.trimEnd())])), 40);
      setTimeout(() => res.end(), 60);
    });
    const { events, ends } = record(source);
    await until(() => ends.length === 1, 'the end');

    expect(Object.fromEntries(asked!.searchParams)).toEqual({
      watch: 'true',
      resourceVersion: '7',
      timeoutSeconds: '60',
      allowWatchBookmarks: 'true',
    });
    expect(asked!.pathname).toBe('/api/v1/nodes');
    expect(events.map((e) => [e.type, e.object.metadata?.name, e.object.metadata?.resourceVersion])).toEqual([
      ['ADDED', 'a', '8'],
      ['MODIFIED', 'b', '9'],
      ['DELETED', 'ä-node', '11'],
      // The last line had no newline: the end of the response ends it.
      ['BOOKMARK', '', '10'],
    ]);
    // The server ended the watch (its timeout): a normal end.
    expect(ends).toEqual([undefined]);
  });

  it('ends with an error at a line that is not JSON, after the events before it', async () => {
    const source = await serve((res) => {
      res.writeHead(200);
      res.write(`${line('ADDED', 'a', '8')}<html>proxy error</html>\n${line('ADDED', 'b', '9')}`);
    });
    const { events, ends } = record(source);
    await until(() => ends.length === 1, 'the end');

    expect(events.map((e) => e.object.metadata?.name)).toEqual(['a']);
    expect(String(ends[0])).toContain('not JSON');
  });

  it('reports an HTTP refusal with the Status reason, 410 as Gone', async () => {
    const source = await serve((res) => {
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' }));
    });
    const { ends, handle } = record(source);
    await handle;
    await until(() => ends.length === 1, 'the end');

    expect(ends[0]).toBeInstanceOf(KubernetesApiError);
    expect(ends[0]).toMatchObject({ statusCode: 410, reason: 'Expired' });
    expect(isGone(ends[0])).toBe(true);
  });

  it('ends a watch that hears nothing, connected or not, as inactive', async () => {
    const source = await serve((res) => {
      res.writeHead(200);
      res.write(line('ADDED', 'a', '8'));
    });
    const { events, ends } = record(source, 150);
    await until(() => ends.length === 1, 'the inactivity end');

    expect(events).toHaveLength(1);
    expect(ends[0]).toBeInstanceOf(WatchInactivityError);
  });

  it('reports a connection broken mid-stream as an error, and nothing after its own stop', async () => {
    let response: ServerResponse | undefined;
    const source = await serve((res) => {
      res.writeHead(200);
      res.write(line('ADDED', 'a', '8'));
      response = res;
    });
    const broken = record(source);
    await until(() => broken.events.length === 1, 'the first event');
    response!.destroy();
    await until(() => broken.ends.length === 1, 'the end');
    expect(broken.ends[0]).toBeInstanceOf(Error);

    const stopped = record(source);
    await until(() => stopped.events.length === 1, 'the first event');
    const closed = once(response!, 'close');
    (await stopped.handle).stop();
    // The server sees the connection go; the relay hears of no end it caused itself.
    await closed;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stopped.ends).toEqual([]);
  });
});
