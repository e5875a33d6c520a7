import { problemCode } from './problem';

/**
 * Whether an HTTP answer to an idempotent request is worth sending again with the same key: 503
 * (PostgreSQL unreachable; the request may or may not have committed, the key makes the resend
 * safe) and 409 IDEMPOTENCY_REQUEST_IN_PROGRESS (the first request with this key is still
 * running). Nothing else: every other 4xx says the request itself is wrong (or the key misused)
 * and would be refused again, and any other 5xx is not a transient condition the API announces.
 */
export function isTransientAnswer(status: number, body: unknown): boolean {
  return status === 503 || (status === 409 && problemCode(body) === 'IDEMPOTENCY_REQUEST_IN_PROGRESS');
}
