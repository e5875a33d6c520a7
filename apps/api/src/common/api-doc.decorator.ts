import { SetMetadata } from '@nestjs/common';
import type { z } from 'zod';

export const API_DOC_METADATA = 'listing:api-doc';

/**
 * What the OpenAPI generator cannot read from the route's existing metadata (path, method,
 * @HttpCode, guards, @Idempotent, @Body/@Query zod pipes, @Headers are all read as they are).
 * Stays next to the route so the docs change with it.
 */
export interface ApiDocOptions {
  summary?: string;
  description?: string;
  /** Response body schema of the success status. */
  response?: z.ZodType;
  /** If-Match on the revision: required (428 when missing) or optional. */
  ifMatch?: 'required' | 'optional';
  /** The success response carries the revision's ETag. */
  etag?: boolean;
  /**
   * The success body is stored bytes, not JSON: one of these content types, with the bytes' ETag;
   * If-None-Match naming it answers 304 without a body.
   */
  download?: { contentTypes: string[] };
  /** Further problem codes this route can answer (each must be in src/error-codes.ts's catalogue). */
  problems?: string[];
}

export const ApiDoc = (options: ApiDocOptions) => SetMetadata(API_DOC_METADATA, options);
