import { RetryableError, TerminalError, ThrottledError } from '../errors.ts';

/**
 * AWS errors by what the caller should do. Codes from the EC2 and ELBv2 API references
 * (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html).
 */
export type AwsErrorClass = 'not-found' | 'throttled' | 'retryable' | 'terminal';

const THROTTLING_CODES = new Set([
  'RequestLimitExceeded',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'TooManyRequestsException',
  'ProvisionedThroughputExceededException',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'EC2ThrottledException',
  'PriorRequestNotComplete',
  'BandwidthLimitExceeded',
  // Classic ELB: "a request made by Elastic Load Balancing to another service exceeds the maximum request rate".
  // (the SDK models it as DependencyThrottleException). https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-throttling.html
  'DependencyThrottle',
]);

const RETRYABLE_CODES = new Set([
  'InternalError',
  'InternalFailure',
  'ServiceUnavailable',
  'Unavailable',
  'RequestTimeout',
  'RequestTimeoutException',
  'IncorrectState',
  'IncorrectInstanceState',
  'DependencyViolation',
  'ResourceInUse',
  'ConcurrentTagAccess',
  'InvalidInstanceID.NotFound', // eventual consistency: a new instance is not visible everywhere yet
  'TimeoutError',
  'ECONNRESET',
  'ETIMEDOUT',
  'ECONNREFUSED',
]);

export function awsErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { name?: unknown; Code?: unknown; code?: unknown };
  for (const candidate of [e.Code, e.code, e.name]) {
    if (typeof candidate === 'string' && candidate !== 'Error') return candidate;
  }
  return undefined;
}

export function classifyAwsError(err: unknown): AwsErrorClass {
  const code = awsErrorCode(err) ?? '';
  if (code.endsWith('.NotFound') || code.endsWith('NotFound') || code === 'NotFoundException') return 'not-found';
  if (THROTTLING_CODES.has(code)) return 'throttled';
  if (RETRYABLE_CODES.has(code)) return 'retryable';
  const status = (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
  if (status === 429) return 'throttled';
  if (status !== undefined && status >= 500) return 'retryable';
  if ((err as { $retryable?: unknown } | undefined)?.$retryable) return 'retryable';
  if (code === '' && !(status !== undefined && status < 500)) return 'retryable'; // network failure, no answer
  return 'terminal';
}

/** Wrap an AWS error in the controller error class matching its retry meaning. */
export function toControllerError(doing: string, err: unknown): Error {
  const code = awsErrorCode(err) ?? 'UnknownError';
  const detail = err instanceof Error ? err.message : String(err);
  const message = `${doing}: ${code}: ${detail}`;
  switch (classifyAwsError(err)) {
    case 'throttled':
      return new ThrottledError(message, { cause: err });
    case 'terminal':
      return new TerminalError(message, { cause: err });
    default:
      return new RetryableError(message, { cause: err });
  }
}

/**
 * `toControllerError`, classified by `code` (the API's wire code) rather than the SDK's exception class name
 * (`ResourceInUse`, not `ResourceInUseException`). The SDK error stays the cause.
 */
export function toControllerErrorByCode(doing: string, err: unknown, code: string | undefined): Error {
  if (code && code !== awsErrorCode(err) && err instanceof Error) {
    const normalized = Object.assign(new Error(err.message, { cause: err }), {
      name: code,
      $metadata: (err as { $metadata?: unknown }).$metadata,
    });
    return toControllerError(doing, normalized);
  }
  return toControllerError(doing, err);
}

/** An error shaped like the SDK's service exceptions (name = code), for fakes and tests. */
export class AwsServiceError extends Error {
  readonly $metadata: { httpStatusCode: number };
  readonly $fault: 'client' | 'server';
  constructor(code: string, message: string, httpStatusCode = 400) {
    super(message);
    this.name = code;
    this.$metadata = { httpStatusCode };
    this.$fault = httpStatusCode >= 500 ? 'server' : 'client';
  }
}
