/** SQLSTATE codes the application reacts to. */
export const PgErrorCode = {
  uniqueViolation: '23505',
  lockNotAvailable: '55P03',
  insufficientPrivilege: '42501',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  queryCanceled: '57014',
} as const;

/** The SQLSTATE of an error from pg, also when Drizzle wrapped it (DrizzleQueryError.cause). */
export function pgErrorCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}
