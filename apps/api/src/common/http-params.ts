import type { PipeTransform } from '@nestjs/common';
import { HTTP_ERRORS, IfMatchRequiredError, ResourceNotFoundError } from './domain-errors';
import { DomainError, type AnyDomainError } from './error-catalogue';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A path id that is not a UUID names nothing: 404, not 400, and the same 404 as an unknown UUID
 * (`what` names the resource, or is the error the route answers for one it cannot find).
 */
export class ParseIdPipe implements PipeTransform<string, string> {
  constructor(private readonly what: string | (() => AnyDomainError)) {}
  transform(value: string): string {
    if (!UUID_RE.test(value)) {
      throw typeof this.what === 'string' ? new ResourceNotFoundError(this.what) : this.what();
    }
    return value.toLowerCase();
  }
}

export class ParseRevisionPipe implements PipeTransform<string, number> {
  transform(value: string): number {
    const n = Number(value);
    if (!/^\d{1,9}$/.test(value) || n < 1) throw new ResourceNotFoundError('revision');
    return n;
  }
}

export class IfMatchInvalidError extends DomainError<typeof HTTP_ERRORS> {
  readonly code = 'IF_MATCH_INVALID';
  constructor() {
    super('If-Match must be * or a list of entity tags, e.g. "3" (the ETag of a revision)');
  }
}

/** ETag of a revision: a strong entity tag holding the revision number. */
export const etagOf = (revision: number) => `"${revision}"`;

/**
 * The revisions an If-Match accepts: any current one (`*`), or those its strong tags name. A
 * plain number is one revision (a worker applying a result to the revision it read).
 */
export type RevisionCondition = number | '*' | readonly number[];

export function revisionMatches(condition: RevisionCondition, revision: number): boolean {
  if (condition === '*') return true;
  return typeof condition === 'number' ? condition === revision : condition.includes(revision);
}

/** entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE (RFC 9110 §8.8.3). */
const ENTITY_TAG = /^(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/;

/**
 * Parses If-Match (RFC 9110 §13.1.1): `*`, or a list of entity tags; `required` → 428 when
 * missing, null when optional and absent. Tags compare strongly: a weak tag (`W/"3"`) or one that
 * is not exactly a revision's ETag (`"03"`) matches nothing, so the precondition fails (412), as
 * it would for a stale revision. Only malformed syntax is a 400.
 */
export function parseIfMatch(header: string | undefined, required: boolean): RevisionCondition | null {
  if (header === undefined || header.trim() === '') {
    if (required) throw new IfMatchRequiredError();
    return null;
  }
  if (header.trim() === '*') return '*';
  const tags = header
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const revisions: number[] = [];
  for (const tag of tags) {
    const m = ENTITY_TAG.exec(tag);
    if (!m) throw new IfMatchInvalidError();
    if (!m[1] && /^[1-9]\d{0,8}$/.test(m[2]!)) revisions.push(Number(m[2]));
  }
  if (!tags.length) throw new IfMatchInvalidError();
  return revisions;
}

/** ETag of stored bytes: a strong entity tag holding their hex SHA-256. */
export const contentEtagOf = (sha256: string) => `"${sha256}"`;

/**
 * Whether If-None-Match (RFC 9110 §13.1.2) names `etag`, so a GET answers 304: `*` (the bytes
 * exist), or a list holding the tag, compared weakly (`W/"x"` matches `"x"`). A header that is
 * absent or not entity tags matches nothing: the bytes are sent.
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const opaque = ENTITY_TAG.exec(etag)?.[2];
  return header.split(',').some((tag) => {
    const m = ENTITY_TAG.exec(tag.trim());
    return m !== null && m[2] === opaque;
  });
}
