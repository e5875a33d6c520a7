import type { components } from './schema';

/** An `application/problem+json` body (RFC 9457) as the API answers every error. */
export type Problem = components['schemas']['Problem'];

/** Every problem `code` the API answers. */
export type ProblemCode = components['schemas']['ProblemCode'];

/** The `code` of a problem body, if `body` is one. */
export function problemCode(body: unknown): string | undefined {
  const code = (body as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
