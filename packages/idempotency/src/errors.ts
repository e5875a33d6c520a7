/**
 * Typed errors of the idempotency engine. Stable string codes; the application maps them to
 * HTTP (problem+json). Nothing here knows HTTP.
 */
export abstract class IdempotencyError extends Error {
  abstract readonly code: string;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The route requires an Idempotency-Key and none was sent. */
export class IdempotencyKeyRequiredError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_KEY_REQUIRED';
  constructor() {
    super('this operation requires an Idempotency-Key header (a UUID)');
  }
}

/** The header is not a UUID (bare or as an RFC 8941 sf-string), or it was sent twice. */
export class IdempotencyKeyInvalidError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_KEY_INVALID';
  constructor(reason: string) {
    super(`Idempotency-Key is invalid: ${reason}`);
  }
}

/** The key was first used for another operation (method + path). */
export class IdempotencyScopeConflictError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_SCOPE_CONFLICT';
  constructor() {
    super('this Idempotency-Key was already used for a different operation');
  }
}

/** Same key and operation, different request (body or meaning-changing headers). */
export class IdempotencyKeyReusedError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_KEY_REUSED';
  constructor() {
    super('this Idempotency-Key was already used with a different request');
  }
}

/** The first request with this key is still running past the bounded wait. */
export class IdempotencyRequestInProgressError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_REQUEST_IN_PROGRESS';
  constructor(readonly retryAfterSeconds: number) {
    super('a request with this Idempotency-Key is still in progress; retry later with the same key');
  }
}

/**
 * The stored result cannot be restored by the current code (policy renamed or envelope version
 * unknown), or its fingerprint key is no longer configured. Fails closed: never re-executes,
 * never returns a guess.
 */
export class IdempotencyReplayUnavailableError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_REPLAY_UNAVAILABLE';
  constructor(reason: string) {
    super(`the first result of this Idempotency-Key cannot be replayed: ${reason}`);
  }
}

/**
 * Our own reservation was not there to mark SUCCEEDED (an invariant broke, e.g. the row was not
 * visible under the bound workspace). Thrown inside the transaction, so it rolls back: better no
 * result than a PROCESSING record that blocks the key until it expires.
 */
export class IdempotencyRecordLostError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_RECORD_LOST';
  constructor(key: string) {
    super(`the reservation of Idempotency-Key ${key} could not be marked succeeded`);
  }
}

/**
 * The request body holds a value RFC 8785 cannot encode (a number beyond a double's range, which
 * JSON.parse reads as Infinity; a bigint; a cycle), so it has no fingerprint. The client's value
 * is the problem, as with any invalid field: the code is the application's VALIDATION_FAILED, not
 * one of the engine's. Thrown by the fingerprint's first use in runPrepared, never by the
 * interceptor, so the route's own validation answers first and a keyless request never meets it.
 */
export class IdempotencyBodyNotCanonicalError extends IdempotencyError {
  readonly code = 'VALIDATION_FAILED';
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`the request body cannot be fingerprinted: ${path} ${reason}`);
  }
}

/** Configuration rejected at boot. */
export class IdempotencyConfigError extends IdempotencyError {
  readonly code = 'IDEMPOTENCY_CONFIG_INVALID';
}
