/**
 * Retry backoff of failed dispatches. The delay itself is computed in SQL by
 * OutboxRepository.markFailed (so every dispatcher and the database clock agree); this file holds
 * the policy and the same formula in TypeScript for documentation and tests:
 *
 *   raw(n)   = min(maxMs, baseMs * 2^(n-1))        n = attempt number that just failed (1, 2, ...)
 *   delay(n) = raw(n) * (1 - jitter * random())     random() in [0, 1)
 */
export interface BackoffPolicy {
  /** Delay after the first failure, in ms. */
  readonly baseMs: number;
  /** Upper bound of any delay, in ms. */
  readonly maxMs: number;
  /** Fraction (0..1) of the delay that is randomised away ("equal jitter" when 0.5). */
  readonly jitter: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1000, maxMs: 5 * 60_000, jitter: 0.5 };

/** The exponent is capped so 2^n never overflows; any realistic maxMs is reached long before. */
export const MAX_BACKOFF_EXPONENT = 30;

export function assertBackoffPolicy(policy: BackoffPolicy): void {
  if (!(policy.baseMs >= 0 && policy.maxMs >= policy.baseMs && policy.jitter >= 0 && policy.jitter <= 1)) {
    throw new RangeError(`invalid backoff policy ${JSON.stringify(policy)}`);
  }
}

/** Bounds [minMs, maxMs] of the delay after the n-th failed attempt (n >= 1). */
export function backoffBounds(
  failedAttempt: number,
  policy: BackoffPolicy,
): { minMs: number; maxMs: number } {
  const exponent = Math.min(Math.max(failedAttempt - 1, 0), MAX_BACKOFF_EXPONENT);
  const raw = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return { minMs: raw * (1 - policy.jitter), maxMs: raw };
}

/** One sample of the delay; `random` in [0, 1). The SQL uses the same formula with random(). */
export function backoffDelay(failedAttempt: number, policy: BackoffPolicy, random = Math.random()): number {
  const { maxMs } = backoffBounds(failedAttempt, policy);
  return maxMs * (1 - policy.jitter * random);
}
