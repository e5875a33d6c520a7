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
    .replace(/\beyJ[a-zA-Z0-9_-]{8,}\.[a-zA-Z0-9_-]{4,}\.[a-zA-Z0-9_-]*/g, REDACTED)
    // name=value, name: value, "name": "value" where the name looks secret.
    .replace(SECRET_PAIR_RE, redactPair)
    // Long opaque strings (keys, hashes, base64 blobs).
    .replace(/\b[A-Za-z0-9+/_-]{40,}={0,2}/g, REDACTED);
  if (out.length > maxLength) out = `${out.slice(0, maxLength - 1)}…`;
  return out;
}

const SECRET_PAIR_RE = /(["']?)([a-z_][a-z0-9_.-]*)\1(\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&}]+)/gi;

/**
 * One `name<sep>value` match. When the name is harmless, the value is searched again: in
 * "rejected: password=hunter2" the pair is `rejected` / `password=hunter2`, and the secret is
 * inside the value.
 */
function redactPair(match: string, quote: string, name: string, sep: string, value: string): string {
  if (isSecretKey(name)) return `${quote}${name}${quote}${sep}${REDACTED}`;
  const inner = value.replace(SECRET_PAIR_RE, redactPair);
  return inner === value ? match : `${quote}${name}${quote}${sep}${inner}`;
}

/** The redacted `name: message` of anything thrown. Stack traces are never kept. */
export function redactError(error: unknown, maxLength = MAX_ERROR_LENGTH): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const prefix = typeof code === 'string' ? `${error.name} ${code}` : error.name;
    return redactText(`${prefix}: ${error.message}`, maxLength);
  }
  return redactText(String(error), maxLength);
}
