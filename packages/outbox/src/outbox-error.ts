/** Stable codes of every error the outbox package throws. Nothing here knows about HTTP. */
export type OutboxErrorCode =
  | 'OUTBOX_NO_WORKSPACE'
  | 'OUTBOX_PAYLOAD_REJECTED'
  | 'OUTBOX_INVALID_EVENT'
  | 'OUTBOX_INVALID_JOB'
  | 'OUTBOX_UNKNOWN_JOB'
  | 'OUTBOX_HANDLER_MISSING'
  | 'OUTBOX_HANDLER_DUPLICATE'
  | 'OUTBOX_HANDLER_UNDEFINED_JOB'
  | 'OUTBOX_JOB_CONFLICT'
  | 'OUTBOX_POISON_PAYLOAD'
  | 'OUTBOX_FAULTS_REFUSED'
  | 'OUTBOX_EVENT_NOT_FOUND'
  | 'OUTBOX_NOT_DEAD_LETTER'
  | 'OUTBOX_JOB_ACTIVE';

/**
 * The one error type of the outbox package: a stable string `code` for callers to switch on, a
 * human message, and optional structured details (never secrets).
 */
export class OutboxError extends Error {
  constructor(
    readonly code: OutboxErrorCode,
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = 'OutboxError';
  }
}
