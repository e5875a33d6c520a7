import { IdempotencyConfigError } from './errors';

export interface IdempotencyOptions {
  /** Lifetime of a record; never below 24 h. Default 48 h. A replay never extends it. */
  ttlSeconds: number;
  /** How long a concurrent duplicate waits for the first request's transaction. */
  lockTimeoutMs: number;
  /** Retry-After sent with IDEMPOTENCY_REQUEST_IN_PROGRESS. */
  retryAfterSeconds: number;
  /** Size of the process-local cache of restored results (0 disables it). */
  replayCacheSize: number;
}

export const MIN_TTL_SECONDS = 24 * 3600;

export function idempotencyOptions(overrides: Partial<IdempotencyOptions> = {}): IdempotencyOptions {
  const options: IdempotencyOptions = {
    ttlSeconds: 48 * 3600,
    lockTimeoutMs: 5000,
    retryAfterSeconds: 1,
    replayCacheSize: 10_000,
    ...overrides,
  };
  if (!(options.ttlSeconds >= MIN_TTL_SECONDS)) {
    throw new IdempotencyConfigError(`idempotency ttl must be at least 24 h (got ${options.ttlSeconds} s)`);
  }
  if (!(options.lockTimeoutMs >= 1)) throw new IdempotencyConfigError('lockTimeoutMs must be positive');
  return options;
}
