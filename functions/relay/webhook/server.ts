import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Log } from '../../../shared/observability/log.ts';
import type { Counter } from '../prometheus.ts';
import {
  type AdmissionRequest,
  type AdmissionResponse,
  MalformedReviewError,
  parseAdmissionReview,
  reviewResponse,
} from './admission.ts';

/**
 * The admission webhooks over HTTPS, on their own port beside the plain-HTTP operations server
 * (functions/relay/http-server.ts). The API server posts an AdmissionReview to a webhook's path and
 * reads one back; an unreadable review answers 400 (the API server then applies the webhook's
 * failurePolicy). Every replica serves: the webhook Service selects them all.
 * https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#webhook-request-and-response
 */

export interface Webhook {
  name: string;
  path: string;
  /**
   * May wait: the IPAM switch before its first list (never an API call per review), the TargetGroupBinding webhooks
   * for their lists of bindings and Services (tgb-admission-reads.ts, each page bounded well inside the webhook's
   * timeout).
   */
  handle(request: AdmissionRequest): AdmissionResponse | Promise<AdmissionResponse>;
}

export interface KeyPair {
  cert: string;
  key: string;
}

export type AdmissionCounter = Counter<'webhook' | 'result'>;

export interface WebhookServerOptions {
  port: number;
  host?: string;
  webhooks: readonly Webhook[];
  tls: KeyPair;
  log: Log;
  admissions?: AdmissionCounter;
}

export interface WebhookServer {
  server: Server;
  port: number;
  /** Serve another certificate from the next connection on; throws (keeping the old one) when the pair is unusable. */
  setCertificate(tls: KeyPair): void;
  close(): Promise<void>;
}

/** Reviews carry the object and its old version; the API server caps an object at about 3 MiB. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const { log, admissions } = options;
  const routes = new Map(options.webhooks.map((w) => [w.path, w]));
  const server = createServer({ cert: options.tls.cert, key: options.tls.key }, (req, res) => {
    void serve(req, res);
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'https://relay').pathname;
    const webhook = routes.get(path);
    if (!webhook) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('POST an AdmissionReview\n');
      return;
    }
    try {
      const body = await readBody(req);
      const response = await webhook.handle(parseAdmissionReview(body));
      admissions?.inc({ webhook: webhook.name, result: result(response) });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reviewResponse(response)));
    } catch (err) {
      if (err instanceof MalformedReviewError || err instanceof BodyTooLargeError) {
        admissions?.inc({ webhook: webhook.name, result: 'malformed' });
        log.warn('refused a malformed admission review', { webhook: webhook.name, error: err.message });
        res
          .writeHead(err instanceof BodyTooLargeError ? 413 : 400, { 'content-type': 'text/plain' })
          .end(`${err.message}\n`);
        return;
      }
      admissions?.inc({ webhook: webhook.name, result: 'error' });
      log.error('admission webhook failed', {
        webhook: webhook.name,
        error: err instanceof Error ? err.message : String(err),
      });
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n');
    }
  }

  // The API server's default webhook timeout is 10 s; a connection idle longer is not its.
  server.keepAliveTimeout = 30_000;
  server.listen(options.port, options.host ?? '0.0.0.0');
  await once(server, 'listening');
  return {
    server,
    port: (server.address() as AddressInfo).port,
    setCertificate(tls) {
      server.setSecureContext({ cert: tls.cert, key: tls.key });
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function result(response: AdmissionResponse): string {
  if (!response.allowed) return 'denied';
  return response.patch ? 'patched' : 'allowed';
}

class BodyTooLargeError extends Error {}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new BodyTooLargeError(`reading the AdmissionReview: larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
