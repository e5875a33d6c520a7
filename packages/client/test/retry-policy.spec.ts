import { backoffDelay } from '../src/backoff-delay';
import { retryAfterMs } from '../src/retry-after';
import { DEFAULT_RETRY_OPTIONS, resolveRetryOptions } from '../src/retry-options';
import { isTransientAnswer } from '../src/transient-answer';

describe('retry policy', () => {
  it('Retry-After: delay-seconds in ms; anything else is no hint', () => {
    expect(retryAfterMs('1')).toBe(1000);
    expect(retryAfterMs(' 3 ')).toBe(3000);
    expect(retryAfterMs('0.25')).toBe(250);
    expect(retryAfterMs('0')).toBe(0);
    for (const bad of [null, undefined, '', '-1', 'soon', 'Wed, 21 Oct 2015 07:28:00 GMT', '1e3']) {
      expect(retryAfterMs(bad)).toBeUndefined();
    }
  });

  it('backoff: full jitter in [0, min(max, base · 2^retry))', () => {
    const options = { baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(0, options, () => 0)).toBe(0);
    expect(backoffDelay(0, options, () => 0.999)).toBe(99);
    expect(backoffDelay(2, options, () => 0.5)).toBe(200);
    expect(backoffDelay(10, options, () => 0.999)).toBe(999); // capped
    const spread = new Set(Array.from({ length: 50 }, () => backoffDelay(3, options)));
    expect(spread.size).toBeGreaterThan(10);
    for (const d of spread) expect(d).toBeGreaterThanOrEqual(0);
    for (const d of spread) expect(d).toBeLessThan(800);
  });

  it('transient: 503 and 409 IDEMPOTENCY_REQUEST_IN_PROGRESS only', () => {
    expect(isTransientAnswer(503, { code: 'SERVICE_UNAVAILABLE' })).toBe(true);
    expect(isTransientAnswer(503, 'not json')).toBe(true);
    expect(isTransientAnswer(409, { code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' })).toBe(true);
    for (const [status, code] of [
      [409, 'IDEMPOTENCY_KEY_REUSED'],
      [409, 'CONCURRENT_UPDATE'],
      [400, 'IDEMPOTENCY_KEY_INVALID'],
      [404, 'RESOURCE_NOT_FOUND'],
      [422, 'VALIDATION_FAILED'],
      [429, 'RATE_LIMITED'],
      [500, 'INTERNAL_ERROR'],
      [201, undefined],
    ] as const) {
      expect({ status, code, transient: isTransientAnswer(status, { code }) }).toEqual({
        status,
        code,
        transient: false,
      });
    }
  });

  it('options: defaults, overlaid in order; nonsense is refused', () => {
    expect(resolveRetryOptions()).toEqual(DEFAULT_RETRY_OPTIONS);
    expect(resolveRetryOptions({ maxAttempts: 3 }, { maxAttempts: undefined, baseDelayMs: 1 })).toEqual({
      ...DEFAULT_RETRY_OPTIONS,
      maxAttempts: 3,
      baseDelayMs: 1,
    });
    expect(() => resolveRetryOptions({ maxAttempts: 0 })).toThrow(RangeError);
    expect(() => resolveRetryOptions({ maxElapsedMs: Number.NaN })).toThrow(/maxElapsedMs/);
  });
});
