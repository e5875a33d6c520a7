import {
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { map, type Observable } from 'rxjs';
import { IdempotencyKeyInvalidError, IdempotencyKeyRequiredError } from '../errors';
import { FingerprintKeyring } from '../fingerprint';
import { idempotencyOperation, parseIdempotencyKey } from '../idempotency-key';
import {
  IDEMPOTENCY_REQUEST_FIELD,
  IDEMPOTENT_ROUTE,
  IdempotentResponse,
  type IdempotentRequestContext,
  type IdempotentRouteOptions,
} from './idempotent.decorator';

export const FINGERPRINT_KEYRING = Symbol('FINGERPRINT_KEYRING');

interface HttpRequestLike {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
  [field: string]: unknown;
}

interface HttpReplyLike {
  header(name: string, value: string): unknown;
}

/**
 * One spelling per meaning, so a retry that writes a header differently is the same request.
 * If-Match (RFC 9110 §13.1.1) is a set: elements are trimmed, duplicates removed and the rest
 * sorted, so `"7", "1"` and `"1","7"` are one condition. Weak tags stay (they match nothing, but
 * `W/"1"` alone is not the same request as no If-Match at all). A blank one is no header, as the
 * handlers read it (a list of commas only is a 400 there, never cached). If-None-Match and other
 * headers are only trimmed.
 */
export function canonicalHeader(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (name !== 'if-match' && name !== 'if-none-match') return value.trim();
  if (value.trim() === '') return undefined;
  const tags = value
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => tag !== '');
  if (name === 'if-none-match') return tags.join(', ');
  return [...new Set(tags)].sort().join(', ');
}

/**
 * Parses Idempotency-Key on routes marked @Idempotent(), and turns IdempotentResponse into a body
 * plus `Idempotent-Replayed: true` on replays. Guards (authentication, rate limits) have already
 * run; validation pipes run after this, so a bad key is not thrown here but handed to runPrepared
 * (`keyError`): a request that is both invalid and keyless hears about its body first. Likewise a
 * body with no canonical JSON (a number beyond a double's range) does not throw here: its
 * fingerprint throws a typed IdempotencyBodyNotCanonicalError when runPrepared first uses it.
 * Errors are the engine's typed errors; the application's exception filter maps them to HTTP.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    @Inject(FINGERPRINT_KEYRING) private readonly keyring: FingerprintKeyring,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const route = this.reflector.get<IdempotentRouteOptions | undefined>(
      IDEMPOTENT_ROUTE,
      context.getHandler(),
    );
    if (!route || context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const request = http.getRequest<HttpRequestLike>();
    let key: string | null = null;
    let keyError: IdempotentRequestContext['keyError'] = null;
    try {
      key = parseIdempotencyKey(request.headers['idempotency-key']);
      if (key === null && route.required) keyError = new IdempotencyKeyRequiredError();
    } catch (error) {
      if (!(error instanceof IdempotencyKeyInvalidError)) throw error;
      keyError = error;
    }
    const operation = idempotencyOperation(request.method, request.url);
    const meaning: Record<string, string | undefined> = {};
    for (const name of route.meaningHeaders ?? ['if-match']) {
      const value = request.headers[name.toLowerCase()];
      meaning[name.toLowerCase()] = canonicalHeader(
        name.toLowerCase(),
        Array.isArray(value) ? value.join(', ') : value,
      );
    }
    const ctx: IdempotentRequestContext = {
      key,
      operation,
      fingerprint: this.keyring.fingerprint(operation, request.body, meaning),
      keyError,
    };
    request[IDEMPOTENCY_REQUEST_FIELD] = ctx;
    const reply = http.getResponse<HttpReplyLike>();
    return next.handle().pipe(
      map((value: unknown) => {
        if (!(value instanceof IdempotentResponse)) return value;
        if (value.replayed) reply.header('Idempotent-Replayed', 'true');
        return value.body;
      }),
    );
  }
}
