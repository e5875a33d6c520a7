import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { DatabaseLayerError, PgErrorCode, isDatabaseUnavailable, pgErrorCode } from '@listing/db';
import { IdempotencyError, IdempotencyRequestInProgressError } from '@listing/idempotency';
import { DomainError, RateLimitedError, UnauthenticatedError } from './domain-errors';

/**
 * Code → HTTP status. The one place where typed errors meet HTTP; exported because the OpenAPI
 * document is generated from it (one source of truth for the documented codes).
 */
export const STATUS: Record<string, number> = {
  VALIDATION_FAILED: 422,
  INVALID_JSON: 400,
  BAD_REQUEST: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  REQUEST_TIMEOUT: 408,
  HEADERS_TOO_LARGE: 431,
  UNAUTHENTICATED: 401,
  INVALID_CREDENTIALS: 401,
  INVALID_REFRESH_TOKEN: 401,
  FORBIDDEN: 403,
  MEMBER_EXISTS: 409,
  INVITATION_NOT_FOUND: 404,
  WORKSPACE_NOT_FOUND: 404,
  RESOURCE_NOT_FOUND: 404,
  FEATURE_NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  EMAIL_TAKEN: 409,
  RATE_LIMITED: 429,
  REVISION_MISMATCH: 412,
  IF_MATCH_REQUIRED: 428,
  IF_MATCH_INVALID: 400,
  IDEMPOTENCY_KEY_REQUIRED: 400,
  IDEMPOTENCY_KEY_INVALID: 400,
  IDEMPOTENCY_SCOPE_CONFLICT: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  IDEMPOTENCY_REQUEST_IN_PROGRESS: 409,
  IDEMPOTENCY_REPLAY_UNAVAILABLE: 409,
  CONCURRENT_UPDATE: 409,
  STORE_ALREADY_CONNECTED: 409,
  STORE_NOT_ACTIVE: 409,
  ALREADY_PUBLISHED: 409,
  PUBLICATION_NOT_RETRYABLE: 409,
  SYNC_ALREADY_ACTIVE: 409,
  MEDIA_TOO_LARGE: 413,
  MEDIA_TYPE_UNSUPPORTED: 415,
  MEDIA_TYPE_MISMATCH: 422,
  MEDIA_SIZE_MISMATCH: 422,
  MEDIA_STATE_CONFLICT: 409,
  LENGTH_REQUIRED: 411,
  SOURCE_NOT_ALLOWED: 422,
  MATERIAL_TRANSFER_EXISTS: 409,
  SERVICE_UNAVAILABLE: 503,
  INTEGRITY_VIOLATION: 500,
  INTERNAL_ERROR: 500,
};

export const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

export const RETRYABLE: ReadonlySet<string> = new Set([
  'IDEMPOTENCY_REQUEST_IN_PROGRESS',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  'CONCURRENT_UPDATE',
]);

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  retryable?: boolean;
  [extension: string]: unknown;
}

/**
 * Every error leaves as application/problem+json (RFC 9457) with a stable `code`. Unknown errors
 * become a generic 500 without internals: messages of unexpected errors may carry SQL or values.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(error: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<{
      code(status: number): unknown;
      header(name: string, value: string): unknown;
      send(body: string): unknown;
      sent?: boolean;
    }>();
    const { problem, headers } = this.toProblem(error);
    if (problem.status >= 500) {
      this.logger.error(
        `${problem.code}: ${(error as Error)?.name ?? 'error'} ${(error as { code?: string })?.code ?? ''}`,
      );
    }
    if (reply.sent) return;
    reply.code(problem.status);
    reply.header('content-type', PROBLEM_JSON);
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    reply.send(JSON.stringify(problem));
  }

  private toProblem(error: unknown): { problem: Problem; headers: Record<string, string> } {
    const headers: Record<string, string> = {};
    let code = 'INTERNAL_ERROR';
    let detail: string | undefined;
    let extensions: Record<string, unknown> = {};

    if (error instanceof DomainError || error instanceof IdempotencyError) {
      code = error.code;
      detail = error.message;
      if (error instanceof DomainError) extensions = error.extensions;
      if (error instanceof IdempotencyRequestInProgressError)
        headers['retry-after'] = String(error.retryAfterSeconds);
      if (error instanceof RateLimitedError) headers['retry-after'] = String(error.retryAfterSeconds);
      if (error instanceof UnauthenticatedError) headers['www-authenticate'] = 'Bearer'; // RFC 9110 §11.6.1
    } else if (isFastifyError(error)) {
      ({ code, detail } = fastifyProblem(error));
    } else if (error instanceof HttpException) {
      // Only the framework throws these (a route that does not exist, a body it refused). Their
      // messages echo the URL, query string included: a fixed detail per status instead.
      const cause = fastifyCause(error);
      if (cause) ({ code, detail } = fastifyProblem(cause));
      else ({ code, detail } = statusProblem(error.getStatus()));
    } else if (isClientStreamError(error)) {
      // The client went away or broke the body mid-read: its mistake, not the database's.
      ({ code, detail } = statusProblem(400));
    } else if (error instanceof DatabaseLayerError) {
      code = 'INTERNAL_ERROR';
    } else if (isDatabaseUnavailable(error)) {
      code = 'SERVICE_UNAVAILABLE';
      detail =
        'the database is unreachable; the request may not have completed: retry it with the same Idempotency-Key';
      headers['retry-after'] = '1';
    } else {
      const sqlState = pgErrorCode(error);
      if (
        sqlState === PgErrorCode.lockNotAvailable ||
        sqlState === PgErrorCode.serializationFailure ||
        sqlState === PgErrorCode.deadlockDetected
      ) {
        code = 'CONCURRENT_UPDATE';
        detail = 'the resource is busy; retry';
        headers['retry-after'] = '1';
      }
    }
    return { problem: problemOf(code, detail, extensions), headers };
  }
}

interface FastifyErrorLike {
  code: string;
  statusCode?: number;
  message: string;
}

function isFastifyError(error: unknown): error is FastifyErrorLike {
  return (
    typeof (error as FastifyErrorLike)?.code === 'string' &&
    (error as FastifyErrorLike).code.startsWith('FST_')
  );
}

function fastifyCause(error: HttpException): FastifyErrorLike | undefined {
  const cause = (error as { cause?: unknown }).cause;
  return isFastifyError(cause) ? cause : undefined;
}

/** Fastify's own refusals (body too large, bad Content-Length...) by their status. JSON is not
 * among them: request-body.parsers.ts parses it and throws typed errors. */
function fastifyProblem(error: FastifyErrorLike): { code: string; detail?: string } {
  return statusProblem(error.statusCode ?? 500);
}

/** A framework-level refusal by HTTP status: a stable code and a detail that echoes nothing. */
export function statusProblem(status: number): { code: string; detail?: string } {
  switch (status) {
    case 404:
      return { code: 'ROUTE_NOT_FOUND', detail: 'no such route' };
    case 408:
      return { code: 'REQUEST_TIMEOUT', detail: 'the request took too long to arrive' };
    case 431:
      return { code: 'HEADERS_TOO_LARGE', detail: 'the request headers are too large' };
    case 411:
      return { code: 'LENGTH_REQUIRED', detail: 'send a Content-Length' };
    case 413:
      return { code: 'PAYLOAD_TOO_LARGE', detail: 'the body is too large' };
    case 414:
      return { code: 'URI_TOO_LONG', detail: 'a path segment is too long' };
    case 415:
      return { code: 'UNSUPPORTED_MEDIA_TYPE', detail: 'this route does not take a body of this type' };
    default:
      return status < 500
        ? { code: 'BAD_REQUEST', detail: 'the request could not be processed' }
        : { code: 'INTERNAL_ERROR' };
  }
}

/**
 * An error of the request's own stream (the body read failed: ECONNRESET, aborted), which
 * Fastify tags with a 4xx status and no FST_ code. Checked before the database classifier, which
 * would read ECONNRESET as "database unreachable" and answer (and alert on) a 503.
 */
function isClientStreamError(error: unknown): boolean {
  const { statusCode, code, message } = (error ?? {}) as {
    statusCode?: unknown;
    code?: unknown;
    message?: unknown;
  };
  return (
    typeof statusCode === 'number' &&
    statusCode >= 400 &&
    statusCode < 500 &&
    (CLIENT_STREAM_CODES.has(code as string) || message === 'aborted') &&
    pgErrorCode(error) === undefined
  );
}

const CLIENT_STREAM_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);

export function problemOf(code: string, detail?: string, extensions: Record<string, unknown> = {}): Problem {
  return {
    type: `https://docs.listing.example/problems/${code.toLowerCase().replace(/_/g, '-')}`,
    title: titleOf(code),
    status: STATUS[code] ?? 500,
    code,
    ...(detail ? { detail } : {}),
    ...(RETRYABLE.has(code) ? { retryable: true } : {}),
    ...extensions,
  };
}

function titleOf(code: string): string {
  const text = code.toLowerCase().replace(/_/g, ' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
