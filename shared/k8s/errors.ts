import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';

/** An error answered by the Kubernetes API server, with its HTTP status and Status reason. */
export class KubernetesApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'KubernetesApiError';
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof KubernetesApiError && err.statusCode === 404;
export const isConflict = (err: unknown): boolean => err instanceof KubernetesApiError && err.statusCode === 409;

/** Map an API server answer to the controller's retry meaning. */
export function classifyKubernetesError(doing: string, err: unknown): Error {
  if (!(err instanceof KubernetesApiError)) return new RetryableError(`${doing}: ${String(err)}`, { cause: err });
  const message = `${doing}: ${err.statusCode} ${err.reason}: ${err.message}`;
  if (err.statusCode === 429) return new ThrottledError(message, { cause: err });
  if (err.statusCode === 400 || err.statusCode === 403 || err.statusCode === 422) {
    return new TerminalError(message, { cause: err });
  }
  return new RetryableError(message, { cause: err });
}

/** The Status reason for a code whose body has none (a 401 has no body). */
export const HTTP_REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** The `reason` and `message` of an API server Status (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/status/), from its JSON text or object; empty when it is none. */
export function statusOf(body: unknown): { reason?: string; message?: string } {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return {};
    }
  }
  if (typeof value !== 'object' || value === null) return {};
  const { reason, message } = value as Record<string, unknown>;
  return {
    reason: typeof reason === 'string' ? reason : undefined,
    message: typeof message === 'string' ? message : undefined,
  };
}
