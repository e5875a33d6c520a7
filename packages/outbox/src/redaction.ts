import { isSecretKey } from './payload-guard';

/**
 * Makes an error safe to store in `outbox_events.last_error` and to show operators: URL query
 * strings and embedded passwords are dropped, bearer tokens, JWTs and `secret-name=value` pairs
 * are masked, and the text is bounded.
 */
export const REDACTED = '[REDACTED]';
export const MAX_ERROR_LENGTH = 1000;

export function redactText(text: string, maxLength = MAX_ERROR_LENGTH): string {
  let out = text
    // PostgreSQL refuses NUL in text: a dead letter carrying one could never be written.
    .replaceAll('\u0000', '')
    // URLs: keep scheme, host and path; drop user info, query and fragment.
    .replace(
      /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@]*@)?([^\s/?#]*)([^\s?#]*)(\?[^\s#]*)?(#\S*)?/gi,
      (_m, scheme, userinfo, host, path, query, fragment) => {
        const hidden = userinfo || query || fragment ? `?${REDACTED}` : '';
        return `${scheme}${userinfo ? `${REDACTED}@` : ''}${host}${path}${hidden}`;
      },
    )
    // Authorization schemes.
    .replace(/\b(bearer|basic|token)\s+[a-z0-9._~+/=-]{6,}/gi, `$1 ${REDACTED}`)
    // JWTs anywhere.
    .replace(/\beyJ[a-zA-Z0-9_-]{8,}\.[a-zA-Z0-9_-]{4,}\.[a-zA-Z0-9_-]*/g, REDACTED);
  // name=value, name: value, "name": "value" where the name looks secret.
  out = redactSecretPairs(out)
    // Long opaque strings (keys, hashes, base64 blobs).
    .replace(/\b[A-Za-z0-9+/_-]{40,}={0,2}/g, REDACTED);
  if (out.length > maxLength) out = `${out.slice(0, maxLength - 1)}…`;
  return out;
}

const NAME_SEP_RE = /(["']?)([a-z_][a-z0-9_.-]*)\1(\s*[:=]\s*)/gi;
const VALUE_RE = /"[^"]*"|'[^']*'|[^\s,;&}]+/y;

/**
 * Masks the value after every secret-looking `name<sep>`. One pass, left to right; after a
 * harmless name the scan goes on right behind its separator, so the secret in
 * "rejected: password: hunter2" is found, and the work stays linear in the text.
 */
function redactSecretPairs(text: string): string {
  let out = '';
  let copied = 0;
  NAME_SEP_RE.lastIndex = 0;
  for (let m = NAME_SEP_RE.exec(text); m; m = NAME_SEP_RE.exec(text)) {
    if (!isSecretKey(m[2]!)) continue;
    VALUE_RE.lastIndex = NAME_SEP_RE.lastIndex;
    if (!VALUE_RE.exec(text)) continue;
    out += `${text.slice(copied, NAME_SEP_RE.lastIndex)}${REDACTED}`;
    copied = VALUE_RE.lastIndex;
    NAME_SEP_RE.lastIndex = copied;
  }
  return out + text.slice(copied);
}

/**
 * The error worth describing. Drizzle wraps a failed query's driver error in a DrizzleQueryError
 * whose message is the SQL text and every bind parameter (row values, token hashes, ciphertext);
 * the driver's own error (SQLSTATE, constraint) says what failed without them.
 */
export function describedError(error: unknown): unknown {
  let e = error;
  for (let depth = 0; depth < 5 && e instanceof Error && e.message.startsWith('Failed query:'); depth++) {
    e =
      e.cause instanceof Error
        ? e.cause
        : Object.assign(new Error('a database query failed'), { name: e.name });
  }
  return e;
}

/** The redacted `name: message` of anything thrown. Stack traces are never kept. */
export function redactError(thrown: unknown, maxLength = MAX_ERROR_LENGTH): string {
  const error = describedError(thrown);
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const prefix = typeof code === 'string' ? `${error.name} ${code}` : error.name;
    return redactText(`${prefix}: ${error.message}`, maxLength);
  }
  return redactText(String(error), maxLength);
}
