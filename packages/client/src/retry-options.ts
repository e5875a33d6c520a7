/**
 * How long `idempotent()` keeps trying one logical call. Every bound holds at once: the call stops
 * after `maxAttempts` sends, and no attempt starts, waits or runs past `maxElapsedMs` after the
 * first one started.
 */
export interface RetryOptions {
  /** Sends in all, the first included (default 6). */
  maxAttempts?: number;
  /** Bound on the whole call, waits included (default 60 000 ms). */
  maxElapsedMs?: number;
  /** Bound on one send, the response body included; a send that takes longer counts as a network error (default 20 000 ms). */
  attemptTimeoutMs?: number;
  /** Backoff without Retry-After: full jitter, a random wait in [0, min(maxDelayMs, baseDelayMs · 2^retry)) (default 250 ms). */
  baseDelayMs?: number;
  /** Cap of that backoff (default 8 000 ms). A server's Retry-After is honoured even when longer. */
  maxDelayMs?: number;
}

export type ResolvedRetryOptions = Required<RetryOptions>;

export const DEFAULT_RETRY_OPTIONS: ResolvedRetryOptions = {
  maxAttempts: 6,
  maxElapsedMs: 60_000,
  attemptTimeoutMs: 20_000,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
};

/** The defaults overlaid with each given option (later ones win); nonsense is a RangeError. */
export function resolveRetryOptions(...layers: Array<RetryOptions | undefined>): ResolvedRetryOptions {
  const resolved: ResolvedRetryOptions = { ...DEFAULT_RETRY_OPTIONS };
  for (const layer of layers) {
    for (const [name, value] of Object.entries(layer ?? {}) as Array<[keyof RetryOptions, unknown]>) {
      if (value === undefined) continue;
      const min = name === 'maxAttempts' ? 1 : 0;
      if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
        throw new RangeError(`retry option ${name} must be a finite number ≥ ${min}, got ${String(value)}`);
      }
      resolved[name] = value;
    }
  }
  return resolved;
}
