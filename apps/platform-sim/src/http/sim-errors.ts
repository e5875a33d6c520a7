/**
 * A failure the simulator reports to its client. Route code throws these; one error handler maps
 * them to `{ error, message, ...details }` with the status. Messages never carry request values
 * (a body may hold a secret).
 */
export class SimError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'SimError';
  }
}

export const idempotencyKeyRequired = () =>
  new SimError(400, 'IDEMPOTENCY_KEY_REQUIRED', 'the Idempotency-Key header is required');

export const idempotencyKeyInvalid = () =>
  new SimError(
    400,
    'IDEMPOTENCY_KEY_INVALID',
    'the Idempotency-Key header must be 1-255 visible ASCII characters',
  );

export const idempotencyKeyReused = () =>
  new SimError(409, 'IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with a different request body');

export const idempotencyScopeConflict = () =>
  new SimError(409, 'IDEMPOTENCY_SCOPE_CONFLICT', 'this Idempotency-Key was used on a different operation');

export const unauthorized = () =>
  new SimError(401, 'UNAUTHORIZED', 'a valid Authorization: Bearer <apiKey> header is required');

export const validationFailed = (problems: string[]) =>
  new SimError(400, 'VALIDATION_FAILED', 'the request is invalid', { problems });

export const notFound = (what: string) => new SimError(404, 'NOT_FOUND', `${what} not found`);
