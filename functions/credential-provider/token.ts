import { InvalidTokenError } from './errors.ts';

export interface RegistryCredentials {
  username: string;
  password: string;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * ECR and ECR Public hand out `base64("AWS:<password>")`
 * (https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_AuthorizationData.html). Errors describe the
 * shape only: the token is a credential and must never reach stderr.
 */
export function decodeAuthorizationToken(token: string, source: string): RegistryCredentials {
  // Buffer.from(..., 'base64') skips characters it does not know, so check the alphabet first.
  if (!BASE64.test(token)) throw new InvalidTokenError(`decoding the ${source} authorization token: not base64`);
  const decoded = Buffer.from(token, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) {
    throw new InvalidTokenError(`decoding the ${source} authorization token: no "user:password" separator`);
  }
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  if (username === '' || password === '') {
    throw new InvalidTokenError(`decoding the ${source} authorization token: empty user name or password`);
  }
  return { username, password };
}

/**
 * How long kubelet may cache the credentials: half the token's remaining lifetime, so a cached token is always
 * well inside its validity even with clock skew or a long image pull. Undefined (kubelet then uses the
 * provider's `defaultCacheDuration`) when AWS gave no expiry or the token has already expired by our clock.
 * Truncated to whole seconds; a token with under two seconds left yields `0s`, which tells kubelet not to cache.
 */
export function cacheDurationFor(expiresAt: Date | undefined, nowMs: number): string | undefined {
  if (expiresAt === undefined) return undefined;
  const remainingMs = expiresAt.getTime() - nowMs;
  if (!Number.isFinite(remainingMs) || remainingMs <= 0) return undefined;
  return formatGoDuration(Math.floor(remainingMs / 2 / 1000));
}

/**
 * A whole number of seconds as Go's `time.Duration.String()` prints it, which is what kubelet parses:
 * `0s`, `30s`, `1m0s`, `5h59m30s` (hours are never folded into days).
 */
export function formatGoDuration(totalSeconds: number): string {
  if (!Number.isInteger(totalSeconds) || totalSeconds < 0) {
    throw new RangeError(`formatGoDuration expects a non-negative whole number of seconds, got ${totalSeconds}`);
  }
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
