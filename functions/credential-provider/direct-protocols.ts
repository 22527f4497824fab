import { extendedEncodeURIComponent, type HttpResponse } from '@smithy/core/protocols';
import type { AuthorizationToken, AwsCredentials } from './ports.ts';

/*
 * The three operations' requests and answers as the direct calls (direct.ts) put them on the wire: AWS JSON 1.1
 * for ECR, the query protocol with XML answers for STS, and errors shaped as the SDK's clients throw them.
 */

/** A parsed answer, with the `$metadata` the retry middleware fills in. */
export type Output = Record<string, unknown> & { $metadata: Record<string, unknown> };

export interface Exchange {
  url: URL;
  headers: Record<string, string>;
  body: string;
  parse(text: string): Record<string, unknown>;
  /** The AWS error code and message of a non-2xx answer. */
  error(text: string, response: HttpResponse): { code?: string; message?: string };
}

/** AWS JSON 1.1 with an empty input, the ECR operations' protocol. */
export function jsonRequest(url: URL, target: string): Exchange {
  return {
    url,
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target },
    body: '{}',
    parse(text) {
      const parsed = text ? (JSON.parse(text) as unknown) : {};
      if (!isRecord(parsed)) throw new Error('not a JSON object');
      return parsed;
    },
    error(text, response) {
      let body: Record<string, unknown> = {};
      try {
        const parsed = JSON.parse(text) as unknown;
        if (isRecord(parsed)) body = parsed;
      } catch {
        // Not JSON (a proxy's page, say): the status and the text speak for it.
      }
      const raw = response.headers['x-amzn-errortype'] ?? body.__type ?? body.code;
      const message = [body.message, body.Message, body.errorMessage].find((m) => typeof m === 'string');
      return {
        // `com.amazonaws.ecr#AccessDeniedException:http://...` -> AccessDeniedException, as the SDK trims it.
        ...(typeof raw === 'string' && raw ? { code: raw.split(':')[0]!.split('#').pop() } : {}),
        ...(typeof message === 'string' ? { message } : {}),
      };
    },
  };
}

/** The query protocol (form-encoded input, XML output), STS's. */
export function queryRequest(url: URL, input: Record<string, string>): Exchange {
  return {
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: Object.entries(input)
      // RFC 3986, with the SDK's own encoder (the one its query serializer uses).
      .map(([key, value]) => `${extendedEncodeURIComponent(key)}=${extendedEncodeURIComponent(value)}`)
      .join('&'),
    parse(text) {
      const credentials = xmlElement(text, 'Credentials');
      if (credentials === undefined) throw new Error('no Credentials element');
      return Object.fromEntries(
        ['AccessKeyId', 'SecretAccessKey', 'SessionToken', 'Expiration'].map((name) => [
          name,
          xmlElement(credentials, name),
        ]),
      );
    },
    error(text) {
      const code = xmlElement(text, 'Code');
      const message = xmlElement(text, 'Message');
      return { ...(code ? { code } : {}), ...(message ? { message } : {}) };
    },
  };
}

/** The text of the first `<name>` element, entities decoded; STS answers are flat and attribute-free here. */
export function xmlElement(xml: string, name: string): string | undefined {
  const match = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`).exec(xml);
  if (!match) return undefined;
  return match[1]!.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, entity: string) => {
    const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
    if (entity[0] !== '#') return named[entity.toLowerCase()]!;
    return String.fromCodePoint(
      entity[1] === 'x' || entity[1] === 'X' ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1)),
    );
  });
}

export function credentialsOf(output: Record<string, unknown>): AwsCredentials {
  const { AccessKeyId, SecretAccessKey, SessionToken, Expiration } = output;
  if (typeof AccessKeyId !== 'string' || typeof SecretAccessKey !== 'string' || !AccessKeyId || !SecretAccessKey) {
    throw new Error('STS returned no credentials');
  }
  const expiration = typeof Expiration === 'string' ? new Date(Expiration) : undefined;
  return {
    accessKeyId: AccessKeyId,
    secretAccessKey: SecretAccessKey,
    ...(typeof SessionToken === 'string' && SessionToken ? { sessionToken: SessionToken } : {}),
    ...(expiration && !Number.isNaN(expiration.getTime()) ? { expiration } : {}),
  };
}

/** `authorizationData` as the AWS JSON protocol carries it: the token, and `expiresAt` in epoch seconds. */
export function tokenOf(data: unknown): AuthorizationToken | undefined {
  if (!isRecord(data) || typeof data.authorizationToken !== 'string' || !data.authorizationToken) return undefined;
  const expiresAt = typeof data.expiresAt === 'number' ? new Date(data.expiresAt * 1000) : undefined;
  return { authorizationToken: data.authorizationToken, ...(expiresAt ? { expiresAt } : {}) };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A 2xx answer's output, or the error the SDK would throw: named by its AWS code, with `$fault`, `$metadata` and
 * `$response` for the retry strategy's throttling, transient and server-error checks. An answer that does not
 * parse is a `SerializationException` (2xx) or `UnknownError`, with the status and the start of the text.
 */
export function parseResponse(response: HttpResponse, exchange: Exchange): Output {
  const text = (response.body as Buffer).toString('utf8');
  const requestId = response.headers['x-amzn-requestid'];
  const $metadata = { httpStatusCode: response.statusCode, ...(requestId ? { requestId } : {}) };
  const ok = response.statusCode >= 200 && response.statusCode < 300;
  let problem: { code?: string; message?: string };
  if (ok) {
    try {
      return { ...exchange.parse(text), $metadata };
    } catch (err) {
      problem = { code: 'SerializationException', message: `unreadable answer (${(err as Error).message})` };
    }
  } else {
    problem = exchange.error(text, response);
  }
  const code = problem.code ?? 'UnknownError';
  const message = problem.message ?? (text ? `HTTP ${response.statusCode}: ${text.slice(0, 200)}` : code);
  throw Object.assign(new Error(message), {
    name: code,
    $fault: response.statusCode >= 500 ? 'server' : 'client',
    $metadata,
    $response: response,
  });
}
