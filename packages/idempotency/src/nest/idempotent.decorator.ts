import { SetMetadata, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { IdempotencyKeyInvalidError, IdempotencyKeyRequiredError } from '../errors';
import type { RequestFingerprint } from '../fingerprint';

export const IDEMPOTENT_ROUTE = 'listing:idempotent-route';

export interface IdempotentRouteOptions {
  /** true: a request without Idempotency-Key is refused (IDEMPOTENCY_KEY_REQUIRED). */
  required: boolean;
  /** Request headers that change the meaning of the request; part of the fingerprint. */
  meaningHeaders?: string[];
}

/** Marks a route as using the Idempotency-Key mechanism. Routes without it ignore the header. */
export const Idempotent = (options: IdempotentRouteOptions) => SetMetadata(IDEMPOTENT_ROUTE, options);

/** What the interceptor derived from the request, for the handler to pass to runPrepared. */
export interface IdempotentRequestContext {
  key: string | null;
  operation: string;
  fingerprint: RequestFingerprint;
  /**
   * The key is missing on a route that requires one, or malformed. runPrepared throws it, so
   * the request's own validation (pipes) answers first: auth → rate limit → validation →
   * idempotency.
   */
  keyError: IdempotencyKeyRequiredError | IdempotencyKeyInvalidError | null;
}

export const IDEMPOTENCY_REQUEST_FIELD = 'idempotency';

/** Handler parameter: the route's IdempotentRequestContext. */
export const IdempotencyRequest = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): IdempotentRequestContext => {
    const request = ctx.switchToHttp().getRequest<Record<string, unknown>>();
    const value = request[IDEMPOTENCY_REQUEST_FIELD] as IdempotentRequestContext | undefined;
    if (!value) throw new Error('@IdempotencyRequest() used on a route without @Idempotent()');
    return value;
  },
);

/**
 * A handler's answer on an idempotent route: the body plus whether it was replayed. The
 * interceptor unwraps it and sets `Idempotent-Replayed: true` on replays.
 */
export class IdempotentResponse<T> {
  constructor(
    readonly body: T,
    readonly replayed: boolean,
  ) {}
}
