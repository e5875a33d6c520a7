import type { FastifyAdapter } from '@nestjs/platform-fastify';
import secureJson from 'secure-json-parse';
import { loadMediaConfig } from '../config/media-config';
import { HTTP_ERRORS, InvalidJsonError, ValidationFailedError } from './domain-errors';
import { DomainError, entryOf, type AnyDomainError, type ErrorCatalogue } from './error-catalogue';

/** The one route that takes raw bytes (media.controller.ts), as Fastify names it. */
export const MEDIA_CONTENT_ROUTE = '/v1/workspaces/:workspaceId/media/:mediaId/content';

const RAW_TYPE = /^(application\/octet-stream|image\/[a-z0-9.+-]+)\s*(;|$)/i;
/** A media type as Fastify accepts one (type/subtype of RFC 9110 tokens); parameters aside. */
const MEDIA_TYPE = /^\s*[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+\s*(;|$)/;

/** 415, naming what the route takes instead. */
export class UnsupportedBodyTypeError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'UNSUPPORTED_MEDIA_TYPE';
  constructor(raw: boolean) {
    super(raw ? 'send the raw bytes: application/octet-stream or image/*' : 'send application/json');
  }
}

/** Nesting deeper than this is no request of ours, and would exhaust recursive walks (a 500). */
export const MAX_JSON_DEPTH = 32;

/**
 * What a request body may be, decided before it is read:
 * - PUT .../media/{id}/content takes raw bytes (application/octet-stream, image/*) as a Buffer,
 *   bounded by MEDIA_MAX_BYTES (a larger Content-Length, or more bytes than announced, is a 413
 *   before the handler runs), and nothing else;
 * - every other route takes application/json only, bounded by BODY_LIMIT_BYTES. Raw bytes are a
 *   415 before they are read (MEDIA_MAX_BYTES is far above BODY_LIMIT_BYTES); another non-empty
 *   type (form data, text/plain) is a 415 once read, within BODY_LIMIT_BYTES; an empty body of
 *   any type is no body.
 * JSON is parsed here (parseJsonBody): bytes that are not UTF-8 or not JSON are a 400, a
 * prototype-poisoning key, nesting deeper than MAX_JSON_DEPTH or a number out of a double's range
 * a 422, before any guard, pipe or fingerprint walks the body.
 * `errors` is the application's merged catalogue (src/error-codes.ts): the statuses of the typed
 * errors thrown here.
 */
export function registerRequestBodyParsers(
  adapter: FastifyAdapter,
  errors: ErrorCatalogue,
  maxBytes = loadMediaConfig().MEDIA_MAX_BYTES,
): RequestBodyGate {
  const instance = adapter.getInstance();
  const forFastify = <E extends AnyDomainError>(error: E) => withStatus(error, errors);
  const gate: RequestBodyGate = { authenticateUpload: null };
  // A raw upload may be MEDIA_MAX_BYTES: its caller is authenticated before a byte of it is read.
  // The result is kept on the request, where the route's AuthGuard finds it (one query, not two).
  instance.addHook('onRequest', async (request) => {
    if (request.routeOptions.url !== MEDIA_CONTENT_ROUTE || !gate.authenticateUpload) return;
    const params = request.params as { workspaceId?: string };
    try {
      (request as { auth?: unknown }).auth = await gate.authenticateUpload(
        request.headers.authorization,
        params.workspaceId ?? null,
      );
    } catch (error) {
      throw error instanceof DomainError ? forFastify(error) : error;
    }
  });
  // The routes there are: a request for none answers 404 whatever it was sent (Fastify's
  // request.is404 does not see Nest's not-found handler as one).
  const routes = new Set<string>();
  instance.addHook('onRoute', (route) => void routes.add(route.url));
  const known = (request: { routeOptions: { url?: string } }) => routes.has(request.routeOptions.url ?? '');
  instance.addHook('preParsing', async (request, _reply, payload) => {
    const type = request.headers['content-type'];
    const hasBody =
      request.headers['transfer-encoding'] !== undefined ||
      Number(request.headers['content-length'] ?? 0) > 0;
    const raw = request.routeOptions.url === MEDIA_CONTENT_ROUTE;
    // GET and HEAD bodies are never read.
    if (request.method === 'GET' || request.method === 'HEAD') return payload;
    // An unknown route answers 404 whatever it was sent, and on a JSON route the catch-all parser
    // below judges a type that is no media type at all ('text/'; an empty body is no body, any
    // other is a 415), where Fastify would answer 415 before any parser ran: the type goes.
    if (type !== undefined && (!known(request) || (!MEDIA_TYPE.test(type) && !raw))) {
      delete request.headers['content-type'];
      return payload;
    }
    if (!hasBody || !known(request)) return payload;
    // Refused before reading: raw bytes anywhere but the media route (their parsers' limit is
    // MEDIA_MAX_BYTES), anything but raw bytes there, untyped bytes included. Other types on JSON
    // routes meet the catch-all parser below (a 415 within BODY_LIMIT_BYTES).
    if (raw !== (type !== undefined && RAW_TYPE.test(type)))
      throw forFastify(new UnsupportedBodyTypeError(raw));
    return payload;
  });
  // Every parser is ours: Fastify's own would, say, hand an empty text/plain body on as ''. An
  // empty body is no body, whatever type it claims (`curl -d ''` sends a form type): the routes
  // that take none (accept, logout, retry...) answer, the others say what is missing.
  instance.removeAllContentTypeParsers();
  instance.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    if ((body as Buffer).length === 0 || !known(request)) done(null, undefined);
    else done(forFastify(new UnsupportedBodyTypeError(false)), undefined);
  });
  // Replaces Fastify's JSON parser to tell the client what is wrong (its own answers one
  // "invalid JSON" for all of these) and to refuse bytes that are not UTF-8 instead of storing
  // U+FFFD in their place. Bounded by BODY_LIMIT_BYTES like any parser without its own limit.
  instance.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const unused = (body as Buffer).length === 0 || !known(request);
    try {
      done(null, unused ? undefined : parseJsonBody(body as Buffer));
    } catch (error) {
      done(error instanceof DomainError ? forFastify(error) : (error as Error), undefined);
    }
  });
  const asBuffer = (_request: unknown, body: Buffer, done: (error: Error | null, body?: Buffer) => void) =>
    done(null, body);
  instance.addContentTypeParser(
    'application/octet-stream',
    { parseAs: 'buffer', bodyLimit: maxBytes },
    asBuffer,
  );
  instance.addContentTypeParser(
    /^image\/[a-z0-9.+-]+\s*(;|$)/i, // tested against the whole header, parameters included
    { parseAs: 'buffer', bodyLimit: maxBytes },
    asBuffer,
  );
  return gate;
}

export interface RequestBodyGate {
  /** Set once the application exists (AuthGuard.authenticate): refuses a caller before a raw upload. */
  authenticateUpload:
    ((authorization: string | undefined, workspaceId: string | null) => Promise<unknown>) | null;
}

/**
 * A typed error with the HTTP status Fastify reads (`statusCode`): routes whose plugin installs
 * its own error handler (the queue dashboard) answer it instead of a 500; elsewhere
 * ProblemDetailsFilter maps the code as usual.
 */
function withStatus<E extends AnyDomainError>(error: E, errors: ErrorCatalogue): E {
  // A code in no catalogue: 500 here, and ProblemDetailsFilter logs it as the bug it is.
  return Object.assign(error, { statusCode: entryOf(errors, error.code)?.status ?? 500 });
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A (non-empty) JSON request body, or the typed reason it is not one. */
export function parseJsonBody(body: Buffer): unknown {
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    throw new InvalidJsonError('the body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    if (error instanceof SyntaxError && /forbidden prototype property/.test(error.message)) {
      throw new ValidationFailedError([
        { path: '(body)', message: 'a "__proto__" or "constructor.prototype" key is not accepted' },
      ]);
    }
    throw new InvalidJsonError('the body is not valid JSON');
  }
  if (jsonDepthExceeds(value, MAX_JSON_DEPTH)) {
    throw new ValidationFailedError([
      { path: '(body)', message: `nested deeper than ${MAX_JSON_DEPTH} levels` },
    ]);
  }
  const outOfRange = outOfRangeNumbers(value);
  if (outOfRange.length) throw new ValidationFailedError(outOfRange);
  return value;
}

/** At most this many out-of-range numbers are named (a body of 10,000 is one mistake). */
const MAX_NAMED = 20;
const MAX_PATH = 200;
const OUT_OF_RANGE = 'a number out of range (beyond ±1.7976931348623157e308)';

/**
 * JSON.parse reads a number too large for a double (1e400, -1e400, 400 digits) as ±Infinity:
 * a value the client did not send, that no JSON can carry back (JSON.stringify writes null, so
 * jsonb would store null) and that RFC 8785 refuses (the idempotency fingerprint). Each is named by
 * its path, as ZodValidationPipe names fields (`price.amount`, `items.0`; `(body)` for the root),
 * in document order. Iterative; the depth is already bounded. Tiny numbers (1e-400) read as 0,
 * and -0 as 0: both are values, not errors.
 */
export function outOfRangeNumbers(value: unknown): Array<{ path: string; message: string }> {
  const found: Array<{ path: string; message: string }> = [];
  let more = 0;
  const stack: Array<[unknown, string[]]> = [[value, []]];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (typeof node === 'number') {
      if (Number.isFinite(node)) continue;
      if (found.length === MAX_NAMED) more++;
      else found.push({ path: cut(path.join('.') || '(body)'), message: OUT_OF_RANGE });
      continue;
    }
    if (node === null || typeof node !== 'object' || Buffer.isBuffer(node)) continue;
    const entries = Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      stack.push([child, [...path, key]]);
    }
  }
  if (more) found.push({ path: '…', message: `${more} more numbers out of range not listed` });
  return found;
}

const cut = (text: string) => (text.length > MAX_PATH ? `${text.slice(0, MAX_PATH - 1)}…` : text);

/** Iterative (a recursive walk is what deep input would overflow). Buffers are leaves. */
export function jsonDepthExceeds(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object' || Buffer.isBuffer(node)) continue;
    if (depth >= max) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}
