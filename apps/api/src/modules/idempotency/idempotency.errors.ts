import type * as Idempotency from '@listing/idempotency';
import type { IdempotencyError } from '@listing/idempotency';
import type { HttpErrorCode } from '../../common/domain-errors';
import { defineErrors, type ErrorEntry } from '../../common/error-catalogue';

/**
 * The code of every error class @listing/idempotency exports. The package knows no HTTP; its
 * codes are catalogued here, and a class it adds is a compile error below until it is.
 */
type ThrownCode = {
  [K in keyof typeof Idempotency]: (typeof Idempotency)[K] extends abstract new (...args: never) => infer E
    ? E extends IdempotencyError
      ? string extends E['code']
        ? never // the abstract base
        : E['code']
      : never
    : never;
}[keyof typeof Idempotency];

/** Codes the package throws that are the application's own (a body that cannot be fingerprinted is VALIDATION_FAILED). */
type IdempotencyErrorCode = Exclude<ThrownCode, HttpErrorCode>;

export const IDEMPOTENCY_ERRORS = defineErrors({
  IDEMPOTENCY_KEY_REQUIRED: {
    status: 400,
    description: 'This operation requires an Idempotency-Key header (a UUID).',
  },
  IDEMPOTENCY_KEY_INVALID: {
    status: 400,
    description: 'Idempotency-Key is not a UUID (bare or as an RFC 8941 string), or was sent twice.',
  },
  IDEMPOTENCY_SCOPE_CONFLICT: {
    status: 409,
    description: 'This Idempotency-Key was already used for another operation (method and path).',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 409,
    description: 'This Idempotency-Key was already used with a different request (body or headers).',
  },
  IDEMPOTENCY_REQUEST_IN_PROGRESS: {
    status: 409,
    retryable: true,
    description:
      'The first request with this Idempotency-Key is still running: retry after `Retry-After` seconds, same key.',
  },
  IDEMPOTENCY_REPLAY_UNAVAILABLE: {
    status: 409,
    description:
      'The first result of this Idempotency-Key cannot be replayed any more; it is never run again: use a new key.',
  },
  IDEMPOTENCY_RECORD_LOST: {
    status: 500,
    description: "The request's idempotency record could not be completed; nothing was committed.",
  },
  IDEMPOTENCY_CONFIG_INVALID: {
    status: 500,
    description: 'The idempotency engine is misconfigured.',
  },
} satisfies Record<IdempotencyErrorCode, ErrorEntry>);
