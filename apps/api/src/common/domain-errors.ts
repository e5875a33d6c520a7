import { DomainError, defineErrors, type CodeOf } from './error-catalogue';

/**
 * The cross-cutting HTTP error codes: the request as HTTP (body, headers, route), authentication,
 * rate limits, concurrency and the server's own failures. Each feature's codes live in its module
 * (modules/<feature>/<feature>.errors.ts); src/error-codes.ts merges them all.
 */
export const HTTP_ERRORS = defineErrors({
  VALIDATION_FAILED: {
    status: 422,
    description: 'The request (body, query or path) is invalid; `errors` names each problem by its path.',
  },
  INVALID_JSON: { status: 400, description: 'The body is not a JSON text (empty, not UTF-8, or malformed).' },
  BAD_REQUEST: {
    status: 400,
    description: 'The request could not be processed as HTTP (malformed, or its body broke off).',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    description:
      'The route does not take a body of this Content-Type: send application/json (raw bytes only for media content).',
  },
  PAYLOAD_TOO_LARGE: { status: 413, description: 'The body is larger than the route accepts.' },
  URI_TOO_LONG: { status: 414, description: 'The URL is too long (a path segment is over the limit).' },
  REQUEST_TIMEOUT: { status: 408, description: 'The request did not arrive in time.' },
  HEADERS_TOO_LARGE: { status: 431, description: 'The request headers are too large.' },
  LENGTH_REQUIRED: {
    status: 411,
    description: 'The route needs the body sent with a Content-Length header.',
  },
  UNAUTHENTICATED: {
    status: 401,
    description: 'A valid bearer token is required (missing, malformed, expired or revoked).',
  },
  FORBIDDEN: { status: 403, description: "The caller's role does not allow this action." },
  RESOURCE_NOT_FOUND: {
    status: 404,
    description: 'No such resource here (an id that is not a UUID names nothing either).',
  },
  ROUTE_NOT_FOUND: { status: 404, description: 'No route has this path.' },
  METHOD_NOT_ALLOWED: { status: 405, description: 'The path does not take this method (see `Allow`).' },
  RATE_LIMITED: {
    status: 429,
    retryable: true,
    description: 'Too many requests: wait the `Retry-After` seconds, then retry.',
  },
  IF_MATCH_REQUIRED: {
    status: 428,
    description: 'This change requires If-Match with the ETag of the revision it is based on.',
  },
  IF_MATCH_INVALID: {
    status: 400,
    description: 'If-Match is not `*` or a list of entity tags (an ETag looks like "3").',
  },
  CONCURRENT_UPDATE: {
    status: 409,
    retryable: true,
    description: 'Another request held the resource: retry (with the same Idempotency-Key, if any).',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    retryable: true,
    description:
      'A dependency (the database) is unreachable; the request may not have completed: retry with the same Idempotency-Key.',
  },
  INTEGRITY_VIOLATION: {
    status: 500,
    description: 'Stored data failed an integrity check and is not served.',
  },
  INTERNAL_ERROR: { status: 500, description: 'An unexpected error; nothing about it is disclosed.' },
});

export type HttpErrorCode = CodeOf<typeof HTTP_ERRORS>;

export class ValidationFailedError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'VALIDATION_FAILED';
  constructor(readonly issues: Array<{ path: string; message: string }>) {
    super('the request is invalid');
    this.extensions.errors = issues;
  }
}

/** The body is not a JSON text (empty, not UTF-8, malformed): 400. */
export class InvalidJsonError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'INVALID_JSON';
}

export class UnauthenticatedError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'UNAUTHENTICATED';
  constructor(message = 'a valid bearer token is required') {
    super(message);
  }
}

export class ForbiddenError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'FORBIDDEN';
}

export class ResourceNotFoundError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'RESOURCE_NOT_FOUND';
  constructor(what: string) {
    super(`${what} not found`);
  }
}

export class RateLimitedError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'RATE_LIMITED';
  constructor(readonly retryAfterSeconds: number) {
    super('too many requests');
  }
}

export class IfMatchRequiredError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'IF_MATCH_REQUIRED';
  constructor() {
    super('this update requires If-Match with the revision it is based on');
  }
}

export class ContentLengthRequiredError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'LENGTH_REQUIRED';
  constructor() {
    super('send the content with a Content-Length header');
  }
}

/** A stored snapshot does not match its row or parent: refuse to serve it. */
export class IntegrityError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'INTEGRITY_VIOLATION';
}
