import type { PipeTransform } from '@nestjs/common';
import { DomainError, IfMatchRequiredError, ResourceNotFoundError } from './domain-errors';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path id that is not a UUID names nothing: 404, not 400. */
export class ParseIdPipe implements PipeTransform<string, string> {
  constructor(private readonly what: string) {}
  transform(value: string): string {
    if (!UUID_RE.test(value)) throw new ResourceNotFoundError(this.what);
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

export class IfMatchInvalidError extends DomainError {
  readonly code = 'IF_MATCH_INVALID';
  constructor() {
    super('If-Match must be the ETag of a revision, e.g. "3"');
  }
}

/** ETag of a revision: a strong entity tag holding the revision number. */
export const etagOf = (revision: number) => `"${revision}"`;

/** Parses If-Match; `required` → 428 when missing. Returns null when optional and absent. */
export function parseIfMatch(header: string | undefined, required: boolean): number | null {
  if (header === undefined || header === '') {
    if (required) throw new IfMatchRequiredError();
    return null;
  }
  const match = /^\s*"?(\d{1,9})"?\s*$/.exec(header);
  if (!match) throw new IfMatchInvalidError();
  return Number(match[1]);
}
