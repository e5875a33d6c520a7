import { IdempotencyKeyInvalidError } from './errors';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A path segment that is a UUID. */
const UUID_SEGMENT_RE = /(?<=\/)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?=\/|$)/gi;

/**
 * Parses the Idempotency-Key header: a UUID, bare or as an RFC 8941 sf-string (`"…"`, the form
 * of draft-ietf-httpapi-idempotency-key-header). Returns the lowercase UUID, or null when absent.
 * A header sent twice arrives as an array or a comma-joined value and is rejected.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  if (Array.isArray(header)) {
    if (header.length !== 1) throw new IdempotencyKeyInvalidError('the header was sent more than once');
    header = header[0]!;
  }
  let value = header.trim();
  if (value.includes(',')) throw new IdempotencyKeyInvalidError('the header was sent more than once');
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
  if (!UUID_RE.test(value)) throw new IdempotencyKeyInvalidError('expected a UUID');
  return value.toLowerCase();
}

/**
 * METHOD + normalised actual path: query string dropped, duplicate and trailing slashes removed,
 * UUID segments lowercased (one id, however it is spelled). Nothing else is lowercased: routes and
 * other parameters (a feature id) are case-sensitive, so another spelling is another request.
 */
export function idempotencyOperation(method: string, url: string): string {
  const path = url
    .split('?')[0]!
    .split('#')[0]!
    .replace(/\/{2,}/g, '/')
    .replace(/(.)\/$/, '$1');
  // Most paths have no upper-case letter at all: nothing to look for then (every keyed request).
  const normal = /[A-F]/.test(path) ? path.replace(UUID_SEGMENT_RE, (id) => id.toLowerCase()) : path;
  return `${method.toUpperCase()} ${normal}`;
}
