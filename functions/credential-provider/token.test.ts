import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidTokenError } from './errors.ts';
import { encodeLogin } from './testing/fakes.ts';
import { cacheDurationFor, decodeAuthorizationToken, formatGoDuration } from './token.ts';

describe('formatGoDuration', () => {
  it.each([
    [0, '0s'],
    [1, '1s'],
    [30, '30s'],
    [59, '59s'],
    [60, '1m0s'],
    [90, '1m30s'],
    [3599, '59m59s'],
    [3600, '1h0m0s'],
    [3601, '1h0m1s'],
    [21570, '5h59m30s'],
    [21600, '6h0m0s'],
    [43200, '12h0m0s'],
    [100000, '27h46m40s'], // Go never folds hours into days
  ])('%i s -> %s', (seconds, text) => {
    expect(formatGoDuration(seconds)).toBe(text);
  });

  it('reads back to the same number of seconds, in the shape Go prints', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), (seconds) => {
        const match = /^(?:(\d+)h)?(?:(\d+)m)?(\d+)s$/.exec(formatGoDuration(seconds));
        expect(match).not.toBeNull();
        const [, h, m, s] = match!;
        expect(Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(s)).toBe(seconds);
        // Go prints minutes whenever it prints hours, and seconds are always there.
        if (h !== undefined) expect(m).toBeDefined();
      }),
    );
  });

  it.each([-1, 1.5, Number.NaN])('refuses %s', (seconds) => {
    expect(() => formatGoDuration(seconds)).toThrow(RangeError);
  });
});

describe('cacheDurationFor', () => {
  const now = Date.parse('2026-11-02T08:00:00Z');

  it.each([
    ['a fresh 12 h token', 12 * 3600_000, '6h0m0s'],
    ['a token with 11 h 59 min left', (11 * 3600 + 59 * 60) * 1000, '5h59m30s'],
    ['a token with 1 min left', 60_000, '30s'],
    ['a token with 2.9 s left (truncated)', 2_900, '1s'],
    ['a token with 1.5 s left: do not cache', 1_500, '0s'],
  ])('%s -> %s', (_name, remainingMs, expected) => {
    expect(cacheDurationFor(new Date(now + remainingMs), now)).toBe(expected);
  });

  it('is absent when AWS gave no expiry', () => {
    expect(cacheDurationFor(undefined, now)).toBeUndefined();
  });

  it.each([0, -1, -3600_000])('is absent when the token expired (%i ms left)', (remainingMs) => {
    expect(cacheDurationFor(new Date(now + remainingMs), now)).toBeUndefined();
  });

  it('is absent for an invalid date', () => {
    expect(cacheDurationFor(new Date(Number.NaN), now)).toBeUndefined();
  });
});

describe('decodeAuthorizationToken', () => {
  it('splits AWS:<password> at the first colon', () => {
    expect(decodeAuthorizationToken(encodeLogin('pa:ss=word'), 'ECR')).toEqual({
      username: 'AWS',
      password: 'pa:ss=word',
    });
  });

  it.each([
    ['no separator', Buffer.from('AWSpassword').toString('base64'), /no "user:password" separator/],
    ['an empty password', Buffer.from('AWS:').toString('base64'), /empty user name or password/],
    ['an empty user', Buffer.from(':password').toString('base64'), /empty user name or password/],
    ['not base64', 'QVdT*OnNlY3JldA==', /not base64/],
    ['an empty token', '', /not base64/],
  ])('refuses a token with %s, without quoting it', (_name, token, message) => {
    const error = catchError(() => decodeAuthorizationToken(token, 'ECR'));
    expect(error).toBeInstanceOf(InvalidTokenError);
    expect(error.message).toMatch(message);
    if (token !== '') expect(error.message).not.toContain(token);
  });
});

function catchError(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}
