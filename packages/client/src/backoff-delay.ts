import type { ResolvedRetryOptions } from './retry-options';

/**
 * Exponential backoff with full jitter: a uniformly random wait in
 * [0, min(maxDelayMs, baseDelayMs · 2^retry)), where `retry` counts the waits before this one
 * (0 before the second attempt). Spreads the retries of many clients instead of synchronising them.
 */
export function backoffDelay(
  retry: number,
  options: Pick<ResolvedRetryOptions, 'baseDelayMs' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
  return Math.floor(random() * ceiling);
}
