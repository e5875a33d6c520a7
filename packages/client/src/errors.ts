/** No HTTP answer: the connection failed or broke (the request may have run), or the attempt timed out. */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';

  constructor(cause: unknown) {
    super(`no answer: ${(cause as Error | undefined)?.message ?? String(cause)}`, { cause });
  }
}

/**
 * `idempotent()` stopped trying while the outcome was still unknown: the last attempt ended in a
 * network error, a 503 or a 409 IDEMPOTENCY_REQUEST_IN_PROGRESS, and the attempts or the time ran
 * out. The request may have run. Send it again later with the same `key` (the `key` option): it
 * then runs at most once, or answers its first result.
 */
export class RetriesExhaustedError extends Error {
  override readonly name = 'RetriesExhaustedError';

  constructor(
    readonly request: string,
    readonly key: string,
    readonly attempts: number,
    readonly elapsedMs: number,
    /** The last answer's status; `undefined` when the last attempt got none. */
    readonly lastStatus: number | undefined,
    /** The last network error, or the last answer's body (a problem). */
    cause: unknown,
  ) {
    const last =
      lastStatus === undefined
        ? (cause as Error).message
        : `${lastStatus} ${(cause as { code?: string } | undefined)?.code ?? ''}`.trim();
    super(
      `${request}: outcome unknown after ${attempts} attempt(s) in ${elapsedMs} ms (last: ${last}); ` +
        `send it again with the same Idempotency-Key ${key}`,
      { cause },
    );
  }
}
