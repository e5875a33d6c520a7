import { SetMetadata } from '@nestjs/common';
import type { IdempotentResponse } from '@listing/idempotency';
import type { z } from 'zod';

export const API_DOC_METADATA = 'listing:api-doc';

/**
 * What the OpenAPI generator cannot read from the route's existing metadata (path, method,
 * @HttpCode, guards, @Idempotent, @Body/@Query zod pipes, @Headers are all read as they are).
 * Stays next to the route so the docs change with it.
 */
export interface ApiDocOptions<S extends z.ZodType = z.ZodType> {
  summary?: string;
  description?: string;
  /**
   * The success body: a schema registered with `named` (common/api-schemas.ts). Required on
   * every route that answers JSON; the handler's return type must be its output (checked by tsc).
   */
  response?: S;
  /** Further statuses that answer the same `response` body (not a problem), e.g. readiness's 503. */
  alsoAnswers?: number[];
  /** If-Match on the revision: required (428 when missing) or optional. */
  ifMatch?: 'required' | 'optional';
  /** The success response carries the revision's ETag. */
  etag?: boolean;
  /**
   * The success body is stored bytes, not JSON: one of these content types, with the bytes' ETag;
   * If-None-Match naming it answers 304 without a body.
   */
  download?: { contentTypes: string[] };
  /** The request body is raw bytes of one of these content types (no JSON, no schema). */
  upload?: { contentTypes: string[] };
  /** Further problem codes this route can answer (each must be in src/error-codes.ts's catalogue). */
  problems?: string[];
  /**
   * A path parameter that is not what its name implies (`…Id` is a UUID, `revision` an integer,
   * others any string): its schema, e.g. the names a feature id can take.
   */
  pathParams?: Record<string, z.ZodType>;
}

/** What a handler documented with `response: S` may return: the body, bare or as a replayable answer. */
type Answer<T> = T | IdempotentResponse<T> | Promise<T | IdempotentResponse<T>>;

/**
 * Documents a route. With `response`, the decorated method must return that schema's output, so
 * the view a service builds and the schema in /docs/openapi.json cannot drift apart unnoticed.
 */
export function ApiDoc<S extends z.ZodType = z.ZodType<unknown>>(options: ApiDocOptions<S>) {
  const set = SetMetadata(API_DOC_METADATA, options);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any parameter list
  return <F extends (...args: any[]) => Answer<z.output<S>>>(
    target: object,
    key: string | symbol,
    descriptor: TypedPropertyDescriptor<F>,
  ): void => {
    set(target, key, descriptor);
  };
}
