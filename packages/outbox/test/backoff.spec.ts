import { assertBackoffPolicy, backoffBounds, backoffDelay, DEFAULT_BACKOFF } from '../src';

describe('backoff', () => {
  const policy = { baseMs: 1000, maxMs: 60_000, jitter: 0.5 };

  it('doubles per failed attempt up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffBounds(n, policy).maxMs)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });

  it('jitter takes at most the configured fraction off', () => {
    expect(backoffBounds(3, policy)).toEqual({ minMs: 2000, maxMs: 4000 });
    expect(backoffDelay(3, policy, 0)).toBe(4000);
    expect(backoffDelay(3, policy, 0.999)).toBeCloseTo(2002, 0);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(4, policy);
      expect(d).toBeGreaterThanOrEqual(4000);
      expect(d).toBeLessThanOrEqual(8000);
    }
  });

  it('never overflows for huge attempt numbers', () => {
    expect(backoffBounds(10_000, DEFAULT_BACKOFF).maxMs).toBe(DEFAULT_BACKOFF.maxMs);
    expect(
      Number.isFinite(backoffBounds(10_000, { baseMs: 1, maxMs: Number.MAX_SAFE_INTEGER, jitter: 0 }).maxMs),
    ).toBe(true);
  });

  it('rejects incoherent policies', () => {
    expect(() => assertBackoffPolicy({ baseMs: 10, maxMs: 5, jitter: 0 })).toThrow(RangeError);
    expect(() => assertBackoffPolicy({ baseMs: 10, maxMs: 50, jitter: 1.5 })).toThrow(RangeError);
  });
});
