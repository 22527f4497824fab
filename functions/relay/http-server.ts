import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CONTENT_TYPE } from './prometheus.ts';
import type { RelayStatus } from './relay.ts';

/**
 * The relay's operations endpoints, plain HTTP on the Pod network (the kubelet probes and Prometheus
 * scrape them; nothing secret is served):
 * - `/healthz` (liveness): 200 while the process works; 503 when the election loop has stalled.
 * - `/readyz` (readiness): 200 when this replica could take over (the API server answers its Lease
 *   requests) and, if it leads, has listed every kind. A standby is ready: a rolling update must not
 *   wait for it to lead.
 * - `/metrics`: Prometheus text format.
 * https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/
 */
export interface OperationsSource {
  status(): RelayStatus;
  metrics: { render(): string };
}

export async function startOperationsServer(
  relay: OperationsSource,
  port: number,
  host = '0.0.0.0',
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://relay').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': CONTENT_TYPE }).end(relay.metrics.render());
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const status = relay.status();
      const ok = path === '/healthz' ? status.live : status.ready;
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(`${JSON.stringify(status)}\n`);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
  // Probes and scrapes are short; a client holding a connection open must not delay shutdown.
  server.keepAliveTimeout = 5_000;
  server.listen(port, host);
  await once(server, 'listening');
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
