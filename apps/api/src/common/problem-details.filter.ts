import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { DatabaseLayerError, PgErrorCode, isDatabaseUnavailable, pgErrorCode } from '@listing/db';
import { IdempotencyError, IdempotencyRequestInProgressError } from '@listing/idempotency';
import { HTTP_ERRORS, RateLimitedError, UnauthenticatedError, type HttpErrorCode } from './domain-errors';
import { DomainError, entryOf, type ErrorCatalogue, type ErrorEntry } from './error-catalogue';

export const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

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
 * Every error leaves as application/problem+json (RFC 9457) with a stable `code`, its status and
 * retryable flag from the application's merged catalogue (src/error-codes.ts, handed over by
 * app.factory.ts). Unknown errors become a generic 500 without internals: messages of unexpected
 * errors may carry SQL or values.
 */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  /** @param errors every code the application answers, HTTP_ERRORS included (src/error-codes.ts) */
  constructor(private readonly errors: ErrorCatalogue) {
    const missing = Object.keys(HTTP_ERRORS).filter(
      (code) => entryOf(errors, code) !== entryOf(HTTP_ERRORS, code),
    );
    if (missing.length) throw new Error(`the error table lacks HTTP_ERRORS' ${missing.join(', ')}`);
  }

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
    let code: string = 'INTERNAL_ERROR';
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
    return { problem: this.catalogued(code, detail, extensions), headers };
  }

  /** A code only known at run time (an error's): one in no catalogue is a bug, said as such. */
  private catalogued(code: string, detail: string | undefined, extensions: Record<string, unknown>): Problem {
    const entry = entryOf(this.errors, code);
    if (entry) return problemFor(code, entry, detail, extensions);
    this.logger.error(
      `error code ${code} is in no catalogue of src/error-codes.ts: answered as INTERNAL_ERROR`,
    );
    return problemOf('INTERNAL_ERROR');
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
function fastifyProblem(error: FastifyErrorLike): { code: HttpErrorCode; detail?: string } {
  return statusProblem(error.statusCode ?? 500);
}

/** A framework-level refusal by HTTP status: a stable code and a detail that echoes nothing. */
export function statusProblem(status: number): { code: HttpErrorCode; detail?: string } {
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

/** The problem body of a cross-cutting code (HTTP_ERRORS): a code that is not one does not compile. */
export function problemOf(
  code: HttpErrorCode,
  detail?: string,
  extensions: Record<string, unknown> = {},
): Problem {
  return problemFor(code, HTTP_ERRORS[code], detail, extensions);
}

/** The problem body of any catalogued code, given its entry. */
export function problemFor(
  code: string,
  entry: ErrorEntry,
  detail?: string,
  extensions: Record<string, unknown> = {},
): Problem {
  return {
    type: problemTypeOf(code),
    title: titleOf(code),
    status: entry.status,
    code,
    ...(detail ? { detail } : {}),
    ...(entry.retryable ? { retryable: true } : {}),
    ...extensions,
  };
}

/** Where the API serves a page per problem type (ops/openapi/swagger-ui.routes.ts). */
export const PROBLEM_TYPES_PATH = '/docs/problems';

/**
 * The `type` of a code's problems: `/docs/problems/route-not-found`, a reference relative to the
 * API (RFC 9457 §3.1.1: resolved against the request URI), so it resolves on whatever host the
 * API answers, and carries its full path as the RFC recommends of relative references.
 */
export function problemTypeOf(code: string): string {
  return `${PROBLEM_TYPES_PATH}/${code.toLowerCase().replace(/_/g, '-')}`;
}

function titleOf(code: string): string {
  const text = code.toLowerCase().replace(/_/g, ' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
