/** SQLSTATE codes the application reacts to. */
export const PgErrorCode = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  lockNotAvailable: '55P03',
  insufficientPrivilege: '42501',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  queryCanceled: '57014',
  /** PREPARE of a name the session has already prepared. */
  duplicatePreparedStatement: '42P05',
  /** EXECUTE of a name the session has not prepared (or no longer has). */
  invalidSqlStatementName: '26000',
  /** A feature the server does not offer (a DO block, on some PostgreSQL-compatible servers). */
  featureNotSupported: '0A000',
  /** A statement after an earlier one failed in the same transaction. */
  inFailedSqlTransaction: '25P02',
} as const;

/** The SQLSTATE of an error from pg, also when Drizzle wrapped it (DrizzleQueryError.cause). */
export function pgErrorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** Socket-level failures reaching the server (node error codes). */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** Server states that refuse or drop connections: shutting down, starting, out of slots. */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** node-postgres errors without a code: a dropped connection, a pool that could not connect. */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * True when the error means PostgreSQL could not be reached or dropped the connection (also when
 * Drizzle wrapped it): the request did not run to its end, and a retry may succeed. Whether a
 * COMMIT in flight took effect is unknown, which only an idempotency key makes safe to retry.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code)))
      return true;
    if (typeof code === 'string' && /^08[0-9A-Z]{3}$/.test(code)) return true; // connection exception
    if (e instanceof Error && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  }
  return false;
}
