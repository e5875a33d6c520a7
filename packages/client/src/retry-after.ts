/**
 * A `Retry-After` header in milliseconds when it is delay-seconds (RFC 9110: a non-negative
 * integer; a decimal fraction is accepted too); `undefined` when absent or in any other form
 * (the API never sends an HTTP-date), so the caller falls back to its backoff.
 */
export function retryAfterMs(header: string | null | undefined): number | undefined {
  const value = header?.trim();
  if (!value || !/^\d+(\.\d+)?$/.test(value)) return undefined;
  return Math.round(Number(value) * 1000);
}
